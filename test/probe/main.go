// Command probe is the consumer workload of the examples and e2e suites. It
// reads a BucketyAccess Secret's flat keys from its environment, exactly as
// a workload would with envFrom or secretKeyRef, and round-trips data:
//
//   - kadm Secret (bootstrap, topic; security.protocol, ssl.ca.pem and
//     sasl.* for a secured broker): produce a record, consume it back;
//   - s3 Secret (endpoint, bucket, region, accessKeyID, secretAccessKey):
//     put an object, get it, list it.
//
// Which of them it does follows from the registry (drivers/all): the driver
// whose declared required Secret keys are all in the environment.
//
// It exits 0 on success and 1 with a message saying what failed.
//
// `probe kafka-admin CMD ...` acts on the broker out of band, as an operator
// with rpk would, for the e2e assertions: describe TOPIC, set-config TOPIC
// KEY=VALUE, grow TOPIC N, create TOPIC PARTITIONS [RECORDS], exists TOPIC,
// produce TOPIC N, records TOPIC.
// `probe s3-admin CMD BUCKET ...` does the same on S3, as with the aws CLI:
// exists, create [OBJECTS], put-many N, versioning, set-versioning
// Enabled|Suspended, count, count-all, policy, set-policy JSON; and on keys, as with
// mc admin or the gateway's CLI (`probe s3-admin CMD KEY ...`): key-add
// SECRET, key-exists, key-policy, set-key-policy JSON. Where keys are IAM
// users (seaweedfs, aws) KEY names the user, and key-add prints the key and
// secret IAM issued (keyadmin_iam.go).
//
// Data that outlives one probe: PROBE_VALUE makes a writer (ReadWrite,
// WriteOnly) write that value instead of a random one, and PROBE_KEPT makes
// a reader (ReadWrite, ReadOnly) first find the value an earlier probe wrote
// with PROBE_VALUE (consumed, or got as s3Kept's object), before doing its role as usual: a
// scenario proves the data written before an event is still there after it,
// through whatever Secret the workload holds then.
//
// `probe clients kafka sarama|franz-go` and `probe clients s3
// aws-sdk-go-v2|aws-env` do the same with other client libraries, as
// workloads written with them would (clients.go).
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/all"
	kadmdriver "github.com/Yolean/buckety-controller/drivers/kadm"
	s3driver "github.com/Yolean/buckety-controller/drivers/s3"
)

// roundTrips are the probe's round trips, by driver name. A registered
// driver without one fails the probe's tests.
var roundTrips = map[string]func(context.Context) error{
	"kadm": func(ctx context.Context) error { return kafka(ctx, os.Getenv) },
	"s3":   bucket,
}

// chooseDriver returns the registered driver whose required Secret keys are
// all set in the environment; exactly one must match.
func chooseDriver(reg *drivers.Registry, getenv func(string) string) (string, error) {
	var match, want []string
	for _, name := range reg.Names() {
		d, _ := reg.Get(name)
		req := drivers.RequiredSecretKeys(d.SecretKeys())
		want = append(want, strings.Join(req, "+")+" ("+name+")")
		ok := true
		for _, k := range req {
			ok = ok && getenv(k) != ""
		}
		if ok {
			match = append(match, name)
		}
	}
	switch len(match) {
	case 0:
		return "", fmt.Errorf("no Secret in the environment: want keys %s", strings.Join(want, " or "))
	case 1:
		return match[0], nil
	}
	return "", fmt.Errorf("the environment has the Secret keys of several drivers: %s", strings.Join(match, ", "))
}

// deadline is the probe's own: 90s, or PROBE_DEADLINE (a Go duration),
// which the e2e admin Pods set for fills of thousands of objects.
func deadline() (time.Duration, error) {
	v := os.Getenv("PROBE_DEADLINE")
	if v == "" {
		return 90 * time.Second, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("PROBE_DEADLINE=%q: want a positive duration such as 90s", v)
	}
	return d, nil
}

func main() {
	d, err := deadline()
	if err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	switch {
	case len(os.Args) > 1 && os.Args[1] == "kafka-admin":
		err = kafkaAdmin(ctx, os.Args[2:])
	case len(os.Args) > 1 && os.Args[1] == "s3-admin":
		err = s3Admin(ctx, os.Args[2:])
	case len(os.Args) > 1 && os.Args[1] == "clients":
		err = clients(ctx, os.Args[2:], os.Getenv)
	default:
		var name string
		if name, err = chooseDriver(all.Registry(), os.Getenv); err == nil {
			if rt, ok := roundTrips[name]; ok {
				err = rt(ctx)
			} else {
				err = fmt.Errorf("driver %s has no round trip in the probe", name)
			}
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "probe: FAIL: %v\n", err)
		os.Exit(1)
	}
}

func needFrom(getenv func(string) string, keys ...string) (map[string]string, error) {
	out := map[string]string{}
	var missing []string
	for _, k := range keys {
		v := getenv(k)
		if v == "" {
			missing = append(missing, k)
		}
		out[k] = v
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("the Secret keys %s are missing from the environment", strings.Join(missing, ", "))
	}
	return out, nil
}

func token() string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// kafkaOpts are the client options the Secret's keys describe: the
// bootstrap, and TLS and SASL as security.protocol says, exactly as a
// consumer configures its client from the Kafka properties.
// securityOf reads Kafka's security.protocol: whether it uses TLS and
// SASL.
func securityOf(proto string) (useTLS, useSASL bool, err error) {
	switch proto {
	case "", "PLAINTEXT":
	case "SSL":
		useTLS = true
	case "SASL_PLAINTEXT":
		useSASL = true
	case "SASL_SSL":
		useTLS, useSASL = true, true
	default:
		err = fmt.Errorf("security.protocol %q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", proto)
	}
	return useTLS, useSASL, err
}

func kafkaOpts(getenv func(string) string) ([]kgo.Opt, error) {
	env, err := needFrom(getenv, kadmdriver.SecretBootstrap)
	if err != nil {
		return nil, err
	}
	opts := []kgo.Opt{kgo.SeedBrokers(strings.Split(env[kadmdriver.SecretBootstrap], ",")...)}
	useTLS, useSASL, err := securityOf(getenv(kadmdriver.SecretSecurityProtocol))
	if err != nil {
		return nil, err
	}
	if useTLS {
		tc := &tls.Config{MinVersion: tls.VersionTLS12}
		if ca := getenv(kadmdriver.SecretSSLCAPEM); ca != "" {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM([]byte(ca)) {
				return nil, fmt.Errorf("ssl.ca.pem: no PEM certificate found")
			}
			tc.RootCAs = pool
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	if useSASL {
		s, err := needFrom(getenv, kadmdriver.SecretSASLMechanism, kadmdriver.SecretSASLUsername, kadmdriver.SecretSASLPassword)
		if err != nil {
			return nil, fmt.Errorf("security.protocol %s: %w", getenv(kadmdriver.SecretSecurityProtocol), err)
		}
		user, pass := s[kadmdriver.SecretSASLUsername], s[kadmdriver.SecretSASLPassword]
		switch s[kadmdriver.SecretSASLMechanism] {
		case "PLAIN":
			opts = append(opts, kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()))
		case "SCRAM-SHA-256":
			opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()))
		case "SCRAM-SHA-512":
			opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()))
		default:
			return nil, fmt.Errorf("sasl.mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", s[kadmdriver.SecretSASLMechanism])
		}
	}
	return opts, nil
}

// kafka exercises the Secret's topic as its role allows, configured only
// from the Secret's keys (read with getenv). The role is PROBE_ROLE
// (ReadWrite when unset), on the Secret's topic or PROBE_TOPIC:
//
//   - ReadWrite produces a record and consumes it back;
//   - ReadOnly consumes a record (one a writer produced before it);
//   - WriteOnly produces a record.
//
// PROBE_VALUE is the value produced, PROBE_KEPT one to find first (see the
// package doc).
//
// A scoped Secret (one with group.id.prefix: a user of its own) consumes in
// a group under that prefix (PROBE_GROUP names another), and must also be refused what its role does
// not allow: ReadOnly producing, WriteOnly consuming.
func kafka(ctx context.Context, getenv func(string) string) error {
	env, err := needFrom(getenv, kadmdriver.SecretBootstrap, kadmdriver.SecretTopic)
	if err != nil {
		return err
	}
	opts, err := kafkaOpts(getenv)
	if err != nil {
		return err
	}
	if getenv("PROBE_EXPECT_REFUSED") == "true" {
		// A probe that should be refused gives up at the first refusal
		// instead of retrying as a workload would: a failed login
		// (a revoked user, an old password) surfaces at once.
		opts = append(opts, kgo.RequestRetries(0), kgo.RecordRetries(0), kgo.RetryTimeout(5*time.Second), kgo.RecordDeliveryTimeout(10*time.Second))
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	topic, prefix := env[kadmdriver.SecretTopic], getenv(kadmdriver.SecretGroupPrefix)
	if t := getenv("PROBE_TOPIC"); t != "" {
		topic = t // a workload trying another topic than its Secret's
	}
	group := ""
	if g := getenv("PROBE_GROUP"); g != "" {
		group = g // a workload choosing a group outside its prefix
	} else if prefix != "" {
		group = prefix + "probe-" + token()
	}
	role := getenv("PROBE_ROLE")
	if role == "" {
		role = "ReadWrite"
	}
	fresh := func() string {
		if v := getenv("PROBE_VALUE"); v != "" {
			return v
		}
		return "probe-" + token()
	}
	var done []string
	if kept := getenv("PROBE_KEPT"); kept != "" {
		if role == "WriteOnly" {
			return fmt.Errorf("PROBE_KEPT %q: a WriteOnly probe cannot read it back; want ReadWrite or ReadOnly", kept)
		}
		// In a group of its own (under the Secret's prefix), so the role's
		// consume after it reads from the start too.
		keptGroup := group
		if prefix != "" && getenv("PROBE_GROUP") == "" {
			keptGroup = prefix + "probe-" + token()
		}
		if err := consume(ctx, opts, topic, keptGroup, kept); err != nil {
			return fmt.Errorf("the record kept from before: %w", err)
		}
		done = append(done, fmt.Sprintf("found %q kept from before", kept))
	}
	switch role {
	case "ReadWrite":
		value := fresh()
		if err := produce(ctx, opts, topic, value, false); err != nil {
			return fmt.Errorf("produce to topic %s via %s: %w", topic, env[kadmdriver.SecretBootstrap], err)
		}
		if err := consume(ctx, opts, topic, group, value); err != nil {
			return err
		}
		done = append(done, fmt.Sprintf("produced and consumed %q", value))
	case "ReadOnly":
		if err := consume(ctx, opts, topic, group, ""); err != nil {
			return err
		}
		done = append(done, "consumed a record")
		if group != "" {
			done[len(done)-1] += " in group " + group
		}
		if prefix != "" {
			if err := refused(produce(ctx, opts, topic, "probe-"+token(), true)); err != nil {
				return fmt.Errorf("ReadOnly: produce to topic %s: %w", topic, err)
			}
			done = append(done, "was refused producing")
		}
	case "WriteOnly":
		if err := produce(ctx, opts, topic, fresh(), false); err != nil {
			return fmt.Errorf("produce to topic %s via %s: %w", topic, env[kadmdriver.SecretBootstrap], err)
		}
		done = append(done, "produced a record")
		if prefix != "" {
			cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			// Without a group: the topic's own Read is what is refused.
			err := consume(cctx, opts, topic, "", "")
			cancel()
			if err := refused(err); err != nil {
				return fmt.Errorf("WriteOnly: consume topic %s: %w", topic, err)
			}
			done = append(done, "was refused consuming")
		}
	default:
		return fmt.Errorf("PROBE_ROLE %q: want ReadWrite, ReadOnly or WriteOnly", role)
	}
	fmt.Printf("probe: OK: %s (%s) %s on topic %s via %s\n", role, scopeOf(role, prefix), strings.Join(done, ", "), topic, env[kadmdriver.SecretBootstrap])
	return nil
}

// scopeOf names what a Secret is: shared, or a user of its own with the
// prefix its role may use (a WriteOnly user has transactional ids only).
func scopeOf(role, prefix string) string {
	switch {
	case prefix == "":
		return "shared credentials"
	case role == "WriteOnly":
		return "own user, transactional ids " + prefix + "*"
	}
	return "own user, groups " + prefix + "*"
}

// produce writes one record; refusal disables idempotence, so a refused
// producer hears TOPIC_AUTHORIZATION_FAILED rather than the cluster
// authorization an idempotent producer's InitProducerID may get.
func produce(ctx context.Context, opts []kgo.Opt, topic, value string, refusal bool) error {
	if refusal {
		opts = append(opts, kgo.DisableIdempotentWrite(), kgo.RecordRetries(0))
	}
	p, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer p.Close()
	return p.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(value)}).FirstErr()
}

// consume reads topic from the start until it has value (any record when
// value is ""), in group when there is one; it returns the first fetch
// error (a group's refusal arrives as one), as a refused consumer hears it.
func consume(ctx context.Context, opts []kgo.Opt, topic, group, value string) error {
	opts = append(opts, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if group != "" {
		opts = append(opts, kgo.ConsumerGroup(group))
	}
	c, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer c.Close()
	for {
		fs := c.PollFetches(ctx)
		if ctx.Err() != nil {
			if value == "" {
				return fmt.Errorf("consume topic %s: no record read in time (a ReadOnly probe needs a writer to have produced one)", topic)
			}
			return fmt.Errorf("consume topic %s: record %q not read back in time", topic, value)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return fmt.Errorf("consume topic %s: %w", topic, ferr)
		}
		found := false
		fs.EachRecord(func(r *kgo.Record) { found = found || value == "" || string(r.Value) == value })
		if found {
			return nil
		}
	}
}

// refused is nil when err is the broker's authorization refusal.
func refused(err error) error {
	switch {
	case err == nil:
		return errors.New("want it refused (the role does not allow it), but it succeeded")
	case errors.Is(err, kerr.TopicAuthorizationFailed), errors.Is(err, kerr.GroupAuthorizationFailed), errors.Is(err, kerr.ClusterAuthorizationFailed):
		return nil
	}
	return fmt.Errorf("want an authorization refusal, got %w", err)
}

func s3Client() (*s3.Client, error) { return s3ClientFrom(os.Getenv) }

// s3ClientFrom is an S3 client from the Secret's keys (read with getenv).
func s3ClientFrom(getenv func(string) string) (*s3.Client, error) {
	env, err := needFrom(getenv, s3driver.SecretEndpoint, s3driver.SecretAccessKeyID, s3driver.SecretSecretAccessKey)
	if err != nil {
		return nil, err
	}
	region := getenv(s3driver.SecretRegion)
	if region == "" {
		region = "us-east-1"
	}
	return s3.New(s3.Options{
		Region: region, BaseEndpoint: aws.String(env[s3driver.SecretEndpoint]), UsePathStyle: true,
		Credentials:                credentials.NewStaticCredentialsProvider(env[s3driver.SecretAccessKeyID], env[s3driver.SecretSecretAccessKey], ""),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	}), nil
}

// s3AdminUsage names every s3-admin command; the bucket commands need
// only the Secret's keys, the key commands (key-*) also the server's
// implementation and, for VersityGW, its adminEndpoint (Secret keys
// implementation and adminEndpoint).
const s3AdminUsage = `usage: probe s3-admin COMMAND ARGS
  exists|versioning|count|count-all|policy BUCKET
  create BUCKET [OBJECTS] | put-many BUCKET N | set-versioning BUCKET STATUS | set-policy BUCKET JSON
  key-add KEY SECRET | key-exists KEY | key-policy KEY | set-key-policy KEY JSON`

func s3Admin(ctx context.Context, args []string) error {
	if len(args) < 2 {
		return errors.New(s3AdminUsage)
	}
	if strings.HasPrefix(args[0], "key-") || args[0] == "set-key-policy" {
		return s3KeyAdmin(ctx, args)
	}
	cl, err := s3Client()
	if err != nil {
		return err
	}
	cmd, b := args[0], aws.String(args[1])
	switch cmd {
	case "policy":
		out, err := cl.GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: b})
		var ae smithy.APIError
		if errors.As(err, &ae) && ae.ErrorCode() == "NoSuchBucketPolicy" {
			fmt.Println("none")
			return nil
		}
		if err != nil {
			return err
		}
		return printJSON(aws.ToString(out.Policy))
	case "set-policy":
		if len(args) < 3 {
			return errors.New(s3AdminUsage)
		}
		_, err := cl.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: b, Policy: aws.String(args[2])})
		return err
	case "exists":
		_, err := cl.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: b})
		fmt.Println(err == nil)
		return nil
	case "create":
		if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
			return err
		}
		if len(args) > 2 {
			return putMany(ctx, cl, b, args[2])
		}
		return nil
	case "put-many":
		return putMany(ctx, cl, b, args[2])
	case "versioning":
		out, err := cl.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: b})
		if err != nil {
			return err
		}
		fmt.Println(string(out.Status))
		return nil
	case "set-versioning":
		_, err := cl.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: b, VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatus(args[2])}})
		return err
	case "count":
		out, err := cl.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: b})
		if err != nil {
			return err
		}
		fmt.Println(len(out.Contents))
		return nil
	case "count-all":
		// Every object, past the first page of 1,000.
		n := 0
		p := s3.NewListObjectsV2Paginator(cl, &s3.ListObjectsV2Input{Bucket: b})
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				return err
			}
			n += len(out.Contents)
		}
		fmt.Println(n)
		return nil
	}
	return fmt.Errorf("unknown s3-admin command %q\n%s", cmd, s3AdminUsage)
}

// printJSON prints a policy on one line (servers answer it indented), so
// that a script can take the probe's last line.
func printJSON(s string) error {
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(s)); err != nil {
		return fmt.Errorf("the server answered a policy that is not JSON: %w: %q", err, s)
	}
	fmt.Println(buf.String())
	return nil
}

// s3KeyAdmin runs the s3-admin commands on keys, through the server's
// admin API as its operator would with mc or the gateway's CLI, out of
// buckety's hands (keyadmin.go).
func s3KeyAdmin(ctx context.Context, args []string) error {
	env, err := needFrom(os.Getenv, s3driver.SecretEndpoint, s3driver.SecretAccessKeyID, s3driver.SecretSecretAccessKey, "implementation")
	if err != nil {
		return err
	}
	region := os.Getenv(s3driver.SecretRegion)
	if region == "" {
		region = "us-east-1"
	}
	ka, err := newKeyAdmin(env["implementation"], env[s3driver.SecretEndpoint], os.Getenv("adminEndpoint"), region, env[s3driver.SecretAccessKeyID], env[s3driver.SecretSecretAccessKey])
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd, key := args[0], args[1]
	arg := func() (string, error) {
		if len(args) < 3 {
			return "", errors.New(s3AdminUsage)
		}
		return args[2], nil
	}
	switch cmd {
	case "key-add":
		secret, err := arg()
		if err != nil {
			return err
		}
		return ka.add(ctx, key, secret)
	case "key-exists":
		found, err := ka.exists(ctx, key)
		if err != nil {
			return err
		}
		fmt.Println(found)
		return nil
	case "key-policy":
		policy, err := ka.policy(ctx, key)
		if err != nil {
			return err
		}
		return printJSON(policy)
	case "set-key-policy":
		policy, err := arg()
		if err != nil {
			return err
		}
		return ka.setPolicy(ctx, key, policy)
	}
	return fmt.Errorf("unknown s3-admin command %q\n%s", cmd, s3AdminUsage)
}

// putMany writes n small objects, 16 at a time.
func putMany(ctx context.Context, cl *s3.Client, b *string, count string) error {
	n, err := strconv.Atoi(count)
	if err != nil {
		return err
	}
	errs := make(chan error, n)
	sem := make(chan struct{}, 16)
	for i := 0; i < n; i++ {
		sem <- struct{}{}
		go func(i int) {
			defer func() { <-sem }()
			_, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String(fmt.Sprintf("many/%06d", i)), Body: strings.NewReader("x")})
			errs <- err
		}(i)
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			return err
		}
	}
	fmt.Printf("put %d objects\n", n)
	return nil
}

func bucket(ctx context.Context) error { return bucketAs(ctx, os.Getenv) }

// bucketAs exercises the Secret's bucket (or PROBE_BUCKET) as its role
// allows, with nothing but the Secret's keys (read with getenv). The role
// is PROBE_ROLE (ReadWrite when unset):
//
//   - ReadWrite puts an object, gets it back and lists it;
//   - ReadOnly lists the bucket and gets an object in it when there is one;
//   - WriteOnly puts an object.
//
// With PROBE_VALUE the object put is probe/VALUE.txt holding "probe VALUE";
// with PROBE_KEPT a reader first gets probe/KEPT.txt and wants "probe KEPT"
// (s3Kept), the object an earlier probe put (see the package doc).
//
// A Secret with a key of its own (unless PROBE_SHARED=true: the backend's
// own keys) must also be refused what its role does not allow: ReadOnly
// putting, WriteOnly getting. PROBE_EXPECT_REFUSED=true makes one request
// the role would make, and fails with the server's answer: a refusal, as
// the e2e scenarios expect (succeeding there means it was not refused).
func bucketAs(ctx context.Context, getenv func(string) string) error {
	env, err := needFrom(getenv, s3driver.SecretEndpoint, s3driver.SecretBucket, s3driver.SecretAccessKeyID, s3driver.SecretSecretAccessKey)
	if err != nil {
		return err
	}
	cl, err := s3ClientFrom(getenv)
	if err != nil {
		return err
	}
	name := env[s3driver.SecretBucket]
	if b := getenv("PROBE_BUCKET"); b != "" {
		name = b // a workload trying another bucket than its Secret's
	}
	b, at := aws.String(name), env[s3driver.SecretEndpoint]
	key, body := s3Kept(token())
	if v := getenv("PROBE_VALUE"); v != "" {
		key, body = s3Kept(v)
	}
	put := func() error {
		_, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String(key), Body: bytes.NewReader([]byte(body))})
		return err
	}
	get := func(k string) ([]byte, error) {
		out, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String(k)})
		if err != nil {
			return nil, err
		}
		got, err := io.ReadAll(out.Body)
		if cerr := out.Body.Close(); err == nil {
			err = cerr
		}
		return got, err
	}
	list := func() (*s3.ListObjectsV2Output, error) {
		return cl.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: b, Prefix: aws.String("probe/")})
	}
	role := getenv("PROBE_ROLE")
	if role == "" {
		role = "ReadWrite"
	}
	if getenv("PROBE_EXPECT_REFUSED") == "true" {
		// One request the role would make, which must be refused.
		switch role {
		case "ReadOnly":
			_, err = list()
		case "WriteOnly":
			err = put()
		default:
			err = put()
			if err == nil {
				_, err = list()
			}
		}
		if err != nil {
			// Refused, as expected: the probe fails with the server's
			// answer, which the e2e scenario matches (as a workload
			// without the right sees it).
			return fmt.Errorf("%s on bucket %s at %s: %w", role, name, at, err)
		}
		fmt.Printf("probe: %s was allowed on bucket %s at %s, which should have refused it\n", role, name, at)
		return nil
	}
	own := getenv("PROBE_SHARED") != "true"
	var done []string
	if kept := getenv("PROBE_KEPT"); kept != "" {
		if role == "WriteOnly" {
			return fmt.Errorf("PROBE_KEPT %q: a WriteOnly probe cannot read it back; want ReadWrite or ReadOnly", kept)
		}
		k, want := s3Kept(kept)
		got, err := get(k)
		if err != nil || string(got) != want {
			return fmt.Errorf("the object kept from before: get %s/%s: want %q, got %q (%v)", name, k, want, got, err)
		}
		done = append(done, "found "+k+" kept from before")
	}
	switch role {
	case "ReadWrite":
		if err := put(); err != nil {
			return fmt.Errorf("put %s/%s at %s: %w", name, key, at, err)
		}
		got, err := get(key)
		if err != nil || string(got) != body {
			return fmt.Errorf("get %s/%s: want %q, got %q (%v)", name, key, body, got, err)
		}
		l, err := list()
		if err != nil {
			return fmt.Errorf("list %s: %w", name, err)
		}
		listed := false
		for _, o := range l.Contents {
			listed = listed || aws.ToString(o.Key) == key
		}
		if !listed {
			return fmt.Errorf("list %s: %s not listed", name, key)
		}
		done = append(done, "put, got and listed "+key)
	case "ReadOnly":
		l, err := list()
		if err != nil {
			return fmt.Errorf("list %s: %w", name, err)
		}
		done = append(done, fmt.Sprintf("listed %d objects", len(l.Contents)))
		if len(l.Contents) > 0 {
			if _, err := get(aws.ToString(l.Contents[0].Key)); err != nil {
				return fmt.Errorf("get %s/%s: %w", name, aws.ToString(l.Contents[0].Key), err)
			}
			done = append(done, "got "+aws.ToString(l.Contents[0].Key))
		}
		if own {
			if err := s3Refused(put()); err != nil {
				return fmt.Errorf("ReadOnly: put in %s: %w", name, err)
			}
			done = append(done, "was refused putting")
		}
	case "WriteOnly":
		if err := put(); err != nil {
			return fmt.Errorf("put %s/%s at %s: %w", name, key, at, err)
		}
		done = append(done, "put "+key)
		if own {
			_, err := get(key)
			if err := s3Refused(err); err != nil {
				return fmt.Errorf("WriteOnly: get from %s: %w", name, err)
			}
			done = append(done, "was refused getting it back")
		}
	default:
		return fmt.Errorf("PROBE_ROLE %q: want ReadWrite, ReadOnly or WriteOnly", role)
	}
	keys := "own key"
	if !own {
		keys = "shared keys"
	}
	fmt.Printf("probe: OK: %s (%s) %s in bucket %s at %s\n", role, keys, strings.Join(done, ", "), name, at)
	return nil
}

// s3Kept is the key and body of the object a probe puts for value v.
func s3Kept(v string) (key, body string) { return "probe/" + v + ".txt", "probe " + v }

// s3Refused is nil when err is the server's refusal: of the request
// (AccessDenied) or of the key itself (a revoked key, an old secret).
func s3Refused(err error) error {
	var ae smithy.APIError
	switch {
	case err == nil:
		return errors.New("want it refused (the role or the key does not allow it), but it succeeded")
	case errors.As(err, &ae) && (ae.ErrorCode() == "AccessDenied" || ae.ErrorCode() == "InvalidAccessKeyId" || ae.ErrorCode() == "SignatureDoesNotMatch"):
		return nil
	}
	return fmt.Errorf("want AccessDenied, InvalidAccessKeyId or SignatureDoesNotMatch, got %w", err)
}

func kafkaAdmin(ctx context.Context, args []string) error {
	opts, err := kafkaOpts(os.Getenv)
	if err != nil {
		return err
	}
	if len(args) < 1 || len(args) < 2 && args[0] != "users" {
		return fmt.Errorf("usage: probe kafka-admin describe|set-config|grow|create|exists|produce|records TOPIC [ARGS] | users | user-add USER PASSWORD | acls USER | acl-add|acl-delete USER TOPIC OPERATION")
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	switch args[0] {
	case "users", "user-add", "acls", "acl-add", "acl-delete":
		return kafkaPrincipals(ctx, adm, args)
	}
	cmd, topic := args[0], args[1]
	switch cmd {
	case "describe", "exists":
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return err
		}
		td, ok := md.Topics[topic]
		if !ok || td.Err != nil {
			if cmd == "exists" {
				fmt.Println("false")
				return nil
			}
			return fmt.Errorf("topic %s not found", topic)
		}
		if cmd == "exists" {
			fmt.Println("true")
			return nil
		}
		fmt.Printf("partitions=%d\n", len(td.Partitions))
		rcs, err := adm.DescribeTopicConfigs(ctx, topic)
		if err != nil {
			return err
		}
		rc, err := rcs.On(topic, nil)
		if err != nil {
			return err
		}
		for _, c := range rc.Configs {
			if c.Source == kmsg.ConfigSourceDynamicTopicConfig {
				fmt.Printf("config.%s=%s\n", c.Key, c.MaybeValue())
			}
		}
		return nil
	case "set-config":
		if len(args) != 3 {
			return fmt.Errorf("usage: set-config TOPIC KEY=VALUE")
		}
		k, v, _ := strings.Cut(args[2], "=")
		resps, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: k, Value: kadm.StringPtr(v)}}, topic)
		if err == nil {
			_, err = resps.On(topic, func(r *kadm.AlterConfigsResponse) error { return r.Err })
		}
		return err
	case "grow":
		n, err := strconv.Atoi(args[2])
		if err != nil {
			return err
		}
		resps, err := adm.UpdatePartitions(ctx, n, topic)
		if err == nil {
			err = resps.Error()
		}
		return err
	case "create":
		n, err := strconv.Atoi(args[2])
		if err != nil {
			return err
		}
		if _, err := adm.CreateTopic(ctx, int32(n), -1, nil, topic); err != nil {
			return err
		}
		if len(args) > 3 {
			records, err := strconv.Atoi(args[3])
			if err != nil {
				return err
			}
			for i := 0; i < records; i++ {
				if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint("pre-existing ", i))}).FirstErr(); err != nil {
					return err
				}
			}
		}
		return nil
	case "produce":
		// produce TOPIC N: N records in one batch, as a workload filling a
		// topic would (the drain scenario's 10,000).
		n, err := strconv.Atoi(args[2])
		if err != nil {
			return err
		}
		recs := make([]*kgo.Record, n)
		for i := range recs {
			recs[i] = &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint("record ", i))}
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return err
		}
		fmt.Printf("produced %d records\n", n)
		return nil
	case "records":
		// records TOPIC: the records between each partition's low and
		// high watermark, summed.
		starts, err := adm.ListStartOffsets(ctx, topic)
		if err != nil {
			return err
		}
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return err
		}
		var n int64
		var lerr error
		ends.Each(func(o kadm.ListedOffset) {
			s, ok := starts.Lookup(o.Topic, o.Partition)
			switch {
			case o.Err != nil || !ok || s.Err != nil:
				lerr = fmt.Errorf("offsets of %s[%d]: %v %v", o.Topic, o.Partition, o.Err, s.Err)
			default:
				n += o.Offset - s.Offset
			}
		})
		if lerr != nil {
			return lerr
		}
		fmt.Println(n)
		return nil
	}
	return fmt.Errorf("unknown kafka-admin command %q", cmd)
}

// kafkaPrincipals is kafka-admin's out-of-band user and ACL operations, as
// the broker's operator types them:
//
//	users                             every SCRAM user, one per line
//	user-add USER PASSWORD            creates or re-keys USER (SCRAM-SHA-512)
//	acls USER                         USER's ACLs: TYPE NAME PATTERN OPERATION PERMISSION
//	acl-add|acl-delete USER TOPIC OP  allows or stops allowing OP on the literal TOPIC
func kafkaPrincipals(ctx context.Context, adm *kadm.Client, args []string) error {
	switch args[0] {
	case "users":
		users, err := adm.DescribeUserSCRAMs(ctx)
		if err != nil && !errors.Is(err, kerr.ResourceNotFound) {
			return err
		}
		names := make([]string, 0, len(users))
		for u, d := range users {
			if d.Err == nil {
				names = append(names, u)
			}
		}
		sort.Strings(names)
		for _, u := range names {
			fmt.Println(u)
		}
		return nil
	case "user-add":
		if len(args) != 3 {
			return fmt.Errorf("usage: user-add USER PASSWORD")
		}
		res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: args[1], Mechanism: kadm.ScramSha512, Iterations: 4096, Password: args[2]}})
		if err == nil {
			err = res.Error()
		}
		return err
	case "acls":
		b := kadm.NewACLs().Allow("User:" + args[1]).AllowHosts().AnyResource().ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny)
		res, err := adm.DescribeACLs(ctx, b)
		if err != nil {
			return err
		}
		var lines []string
		for _, r := range res {
			if r.Err != nil {
				return r.Err
			}
			for _, d := range r.Described {
				lines = append(lines, fmt.Sprintf("%s %s %s %s %s", d.Type, d.Name, d.Pattern, d.Operation, d.Permission))
			}
		}
		sort.Strings(lines)
		for _, l := range lines {
			fmt.Println(l)
		}
		return nil
	case "acl-add", "acl-delete":
		if len(args) != 4 {
			return fmt.Errorf("usage: %s USER TOPIC OPERATION", args[0])
		}
		op, err := kmsg.ParseACLOperation(strings.ToLower(args[3]))
		if err != nil {
			return fmt.Errorf("operation %q: %w", args[3], err)
		}
		b := kadm.NewACLs().Allow("User:" + args[1]).AllowHosts().Topics(args[2]).ResourcePatternType(kadm.ACLPatternLiteral).Operations(op)
		if args[0] == "acl-add" {
			res, err := adm.CreateACLs(ctx, b)
			if err != nil {
				return err
			}
			for _, r := range res {
				if r.Err != nil {
					return r.Err
				}
			}
			return nil
		}
		res, err := adm.DeleteACLs(ctx, b)
		if err != nil {
			return err
		}
		n := 0
		for _, r := range res {
			if r.Err != nil {
				return r.Err
			}
			n += len(r.Deleted)
		}
		if n == 0 {
			return fmt.Errorf("no %s ACL of User:%s on topic %s to delete", args[3], args[1], args[2])
		}
		return nil
	}
	return fmt.Errorf("unknown kafka-admin command %q", args[0])
}
