package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	kadmdriver "github.com/Yolean/buckety-controller/drivers/kadm"
)

// kafkaClient is what the role checks need of a Kafka client library,
// each method a new client configured from the Secret, as a workload's
// producer or consumer is.
type kafkaClient interface {
	// produce writes value to topic; refusal says the caller expects it
	// refused, so the client should not retry.
	produce(ctx context.Context, topic, value string, refusal bool) error
	// consume reads as r says until it reads r.value. It returns the
	// first error the library reports, as a refused consumer hears it.
	consume(ctx context.Context, r read) error
	// transact produces value to topic in a transaction of transactional
	// id txID and commits it.
	transact(ctx context.Context, topic, txID, value string) error
	// refused is nil when err is the broker's authorization refusal as the
	// library reports it.
	refused(err error) error
}

// read is what a consumer reads: topic from its start until value (any
// record when value is ""), in group when it is not "" (committing its
// offsets when commit), else every partition without a group.
type read struct {
	topic, group, value string
	commit              bool
	// readCommitted reads with isolation read_committed.
	readCommitted bool
	// refusal says the caller expects it refused, so the client should
	// not retry.
	refusal bool
}

// refusalTimeout bounds a check that expects a refusal: a broker that
// allows it instead may leave a consumer waiting for records.
const refusalTimeout = 20 * time.Second

// kafkaClientChecks does, with c, what the Secret's role allows and checks
// that the broker refuses what it does not, printing each check with out.
// Its plan, by PROBE_ROLE:
//
//   - ReadWrite: produce a record, consume it back in the group
//     <group.id.prefix>clients-<lib> (clients-<lib>-<topic>-<role> without
//     a prefix: shared credentials); with a prefix, a transaction of id
//     <prefix>tx-<lib>, read back read_committed;
//   - ReadOnly: consume in that group whatever is there (committing
//     nothing, so that it reads again next time); with a prefix, producing
//     is refused;
//   - WriteOnly: produce; with a prefix, a transaction, and consuming is
//     refused.
//
// With a prefix (a user of its own), a reader joining a group outside it
// is refused, and with PROBE_NEIGHBOUR_TOPIC producing there is refused,
// and for a reader consuming there too (shared credentials reach every
// topic: the neighbour is not checked).
func kafkaClientChecks(ctx context.Context, lib string, c kafkaClient, getenv func(string) string, out func(string)) (string, error) {
	topicKey := cmp.Or(getenv("PROBE_TOPIC_KEY"), kadmdriver.SecretTopic)
	env, err := needFrom(getenv, kadmdriver.SecretBootstrap, topicKey)
	if err != nil {
		return "", err
	}
	role, err := roleOf(getenv)
	if err != nil {
		return "", err
	}
	topic, prefix, neighbour := env[topicKey], getenv(kadmdriver.SecretGroupPrefix), getenv("PROBE_NEIGHBOUR_TOPIC")
	own := prefix != ""
	group := prefix + "clients-" + lib
	if !own {
		// Shared credentials share groups: one per topic and role, so
		// that a reader does not start where a writer's probe committed.
		group = "clients-" + lib + "-" + topic + "-" + strings.ToLower(role)
	}
	check := func(what string, err error) error {
		if err != nil {
			return fmt.Errorf("%s %s: %w", role, what, err)
		}
		out(what + " ok")
		return nil
	}
	refusal := func(what string, do func(context.Context) error) error {
		rctx, cancel := context.WithTimeout(ctx, refusalTimeout)
		defer cancel()
		if err := c.refused(do(rctx)); err != nil {
			return fmt.Errorf("%s %s: %w", role, what, err)
		}
		out(what + " ok")
		return nil
	}
	value := func() string { return "clients-" + lib + "-" + token() }
	transaction := func() (string, error) {
		tx, v := prefix+"tx-"+lib, value()
		return v, check("transaction "+tx+" (produce, commit)", c.transact(ctx, topic, tx, v))
	}
	var steps []func() error
	switch role {
	case "ReadWrite":
		v := value()
		steps = append(steps,
			func() error { return check("produce to "+topic, c.produce(ctx, topic, v, false)) },
			func() error {
				return check("consume in group "+group, c.consume(ctx, read{topic: topic, group: group, value: v, commit: true}))
			})
		if own {
			steps = append(steps, func() error {
				tv, err := transaction()
				if err != nil {
					return err
				}
				return check("read_committed", c.consume(ctx, read{topic: topic, value: tv, readCommitted: true}))
			})
		}
	case "ReadOnly":
		steps = append(steps, func() error {
			return check("consume in group "+group, c.consume(ctx, read{topic: topic, group: group}))
		})
		if own {
			steps = append(steps, func() error {
				return refusal("produce refused", func(ctx context.Context) error { return c.produce(ctx, topic, value(), true) })
			})
		}
	case "WriteOnly":
		steps = append(steps, func() error { return check("produce to "+topic, c.produce(ctx, topic, value(), false)) })
		if own {
			steps = append(steps,
				func() error { _, err := transaction(); return err },
				func() error {
					return refusal("consume refused", func(ctx context.Context) error { return c.consume(ctx, read{topic: topic, refusal: true}) })
				})
		}
	}
	if own && role != "WriteOnly" {
		steps = append(steps, func() error {
			outside := "clients-outside-prefix-" + token()
			return refusal("group "+outside+" (outside the prefix) refused", func(ctx context.Context) error {
				return c.consume(ctx, read{topic: topic, group: outside, refusal: true})
			})
		})
	}
	if neighbour != "" && !own {
		// As the other clients' scripts: shared credentials reach every
		// topic, so nothing there can be refused.
		steps = append(steps, func() error { out("neighbour topic " + neighbour + " not checked: shared credentials"); return nil })
	}
	if neighbour != "" && own {
		steps = append(steps, func() error {
			return refusal("produce to neighbour topic "+neighbour+" refused", func(ctx context.Context) error { return c.produce(ctx, neighbour, value(), true) })
		})
		if role != "WriteOnly" {
			steps = append(steps, func() error {
				return refusal("consume neighbour topic "+neighbour+" refused", func(ctx context.Context) error { return c.consume(ctx, read{topic: neighbour, refusal: true}) })
			})
		}
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("%s (%s) on topic %s via %s", role, scopeOf(role, prefix), topic, env[kadmdriver.SecretBootstrap]), nil
}

// kafkaConn is the connection a kadm Secret describes, whatever the
// client library: the keys as a workload maps them onto its client's
// settings (the Kafka properties of the same names).
type kafkaConn struct {
	brokers []string
	// tls is nil for PLAINTEXT and SASL_PLAINTEXT; its RootCAs are
	// ssl.ca.pem's, or the system's when the Secret has none.
	tls *tls.Config
	// mechanism is "" without SASL; else PLAIN, SCRAM-SHA-256 or
	// SCRAM-SHA-512, with user and password.
	mechanism, user, password string
}

// kafkaConnFrom reads the connection from the Secret's keys, refusing
// what a Kafka client would refuse (an unknown protocol or mechanism, SASL
// without credentials, a CA that is not PEM).
func kafkaConnFrom(getenv func(string) string) (kafkaConn, error) {
	env, err := needFrom(getenv, kadmdriver.SecretBootstrap)
	if err != nil {
		return kafkaConn{}, err
	}
	c := kafkaConn{brokers: strings.Split(env[kadmdriver.SecretBootstrap], ",")}
	useTLS, useSASL, err := securityOf(getenv(kadmdriver.SecretSecurityProtocol))
	if err != nil {
		return kafkaConn{}, err
	}
	if useTLS {
		c.tls = &tls.Config{MinVersion: tls.VersionTLS12}
		if ca := getenv(kadmdriver.SecretSSLCAPEM); ca != "" {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM([]byte(ca)) {
				return kafkaConn{}, errors.New("ssl.ca.pem: no PEM certificate found")
			}
			c.tls.RootCAs = pool
		}
	}
	if useSASL {
		s, err := needFrom(getenv, kadmdriver.SecretSASLMechanism, kadmdriver.SecretSASLUsername, kadmdriver.SecretSASLPassword)
		if err != nil {
			return kafkaConn{}, fmt.Errorf("security.protocol %s: %w", getenv(kadmdriver.SecretSecurityProtocol), err)
		}
		c.mechanism, c.user, c.password = s[kadmdriver.SecretSASLMechanism], s[kadmdriver.SecretSASLUsername], s[kadmdriver.SecretSASLPassword]
		switch c.mechanism {
		case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
		default:
			return kafkaConn{}, fmt.Errorf("sasl.mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", c.mechanism)
		}
	}
	return c, nil
}

// franzClient is franz-go (kgo) as the probe's round trip configures it
// (kafkaOpts), so the checks here and the round trip agree on what a
// franz-go workload does.
type franzClient struct{ opts []kgo.Opt }

func newFranzClient(getenv func(string) string) (kafkaClient, error) {
	opts, err := kafkaOpts(getenv)
	return franzClient{opts: slices.Clip(opts)}, err
}

func (f franzClient) with(opts ...kgo.Opt) []kgo.Opt { return append(slices.Clip(f.opts), opts...) }

func (f franzClient) produce(ctx context.Context, topic, value string, refusal bool) error {
	return produce(ctx, f.opts, topic, value, refusal)
}

// consume is main.go's consume, with what a careful franz-go consumer
// adds: it commits what it read before it closes (kgo autocommits every
// 5 s; closing alone left nothing committed on the local broker).
func (f franzClient) consume(ctx context.Context, r read) error {
	opts := f.with(kgo.ConsumeTopics(r.topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if r.group != "" {
		opts = append(opts, kgo.ConsumerGroup(r.group))
		if !r.commit {
			opts = append(opts, kgo.DisableAutoCommit())
		}
	}
	if r.readCommitted {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	if r.refusal {
		opts = append(opts, kgo.RequestRetries(0), kgo.RetryTimeout(5*time.Second))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return notRead(r.topic, r.value)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return fmt.Errorf("consume topic %s: %w", r.topic, ferr)
		}
		found := false
		fs.EachRecord(func(rec *kgo.Record) { found = found || r.value == "" || string(rec.Value) == r.value })
		if !found {
			continue
		}
		if r.group != "" && r.commit {
			if err := cl.CommitUncommittedOffsets(ctx); err != nil {
				return fmt.Errorf("commit offsets of group %s: %w", r.group, err)
			}
		}
		return nil
	}
}

func (f franzClient) transact(ctx context.Context, topic, txID, value string) error {
	cl, err := kgo.NewClient(f.with(kgo.TransactionalID(txID))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := cl.BeginTransaction(); err != nil {
		return err
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(value)}).FirstErr(); err != nil {
		if aerr := cl.EndTransaction(ctx, kgo.TryAbort); aerr != nil {
			return fmt.Errorf("%w (and aborting: %v)", err, aerr)
		}
		return err
	}
	return cl.EndTransaction(ctx, kgo.TryCommit)
}

func (franzClient) refused(err error) error { return refused(err) }
