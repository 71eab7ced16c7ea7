package faults

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/Yolean/buckety-controller/test/kafka"
)

// victim is alice's workload during the hostile run: in rounds, until
// halted, it produces a record to her topic and consumes it back, and puts
// an object in her bucket and gets it back, with nothing but her Secrets
// and long-lived clients, as a deployed workload would.
type victim struct {
	stop, done chan struct{}
	once       sync.Once
	mu         sync.Mutex
	rounds     []victimRound
}

// victimRound is one round of alice's workload.
type victimRound struct {
	at       time.Time
	took     time.Duration
	requests int
	failed   []string
}

// startVictim starts alice's workload on the Secrets of her topic and her
// bucket; it stops when halted or when the test ends.
func (e *env) startVictim(t *testing.T, ns, topicSecret, bucketSecret string) *victim {
	t.Helper()
	ctx := context.Background()
	td, err := e.secretData(ctx, ns, topicSecret)
	if err != nil {
		t.Fatalf("alice's Secret %s: %v", topicSecret, err)
	}
	bd, err := e.secretData(ctx, ns, bucketSecret)
	if err != nil {
		t.Fatalf("alice's Secret %s: %v", bucketSecret, err)
	}
	topic, bucket := string(td["topic"]), string(bd["bucket"])
	cl, err := kafka.SecretClient(td, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	sc := s3Client(string(bd["endpoint"]), regionOf(bd), string(bd["accessKeyID"]), string(bd["secretAccessKey"]))
	v := &victim{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(v.done)
		defer cl.Close()
		for n := 0; ; n++ {
			select {
			case <-v.stop:
				return
			default:
			}
			r := victimOnce(cl, topic, sc, bucket, n)
			v.mu.Lock()
			v.rounds = append(v.rounds, r)
			v.mu.Unlock()
			select {
			case <-v.stop:
				return
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(v.halt)
	return v
}

// halt stops the workload and waits for its last round.
func (v *victim) halt() {
	v.once.Do(func() { close(v.stop) })
	<-v.done
}

// stats summarises the rounds that started in [from, to): their count, the
// requests and those that failed, and the median and slowest round.
func (v *victim) stats(from, to time.Time) (rounds, requests int, failed []string, p50, worst time.Duration) {
	v.mu.Lock()
	defer v.mu.Unlock()
	var took []time.Duration
	for _, r := range v.rounds {
		if r.at.Before(from) || !r.at.Before(to) {
			continue
		}
		requests += r.requests
		failed = append(failed, r.failed...)
		took = append(took, r.took)
	}
	if len(took) == 0 {
		return 0, requests, failed, 0, 0
	}
	slices.Sort(took)
	return len(took), requests, failed, took[len(took)/2], took[len(took)-1]
}

// victimOnce is one round: four requests, each failure recorded.
func victimOnce(cl *kgo.Client, topic string, sc *s3.Client, bucket string, n int) victimRound {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tag := fmt.Sprintf("victim-%05d", n)
	r := victimRound{at: time.Now(), requests: 4}
	fail := func(what string, err error) {
		r.failed = append(r.failed, fmt.Sprintf("%s: %s: %v", tag, what, err))
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(tag)}).FirstErr(); err != nil {
		fail("produce", err)
		fail("consume", errors.New("not tried: nothing produced"))
	} else if err := kafka.ConsumeMatching(ctx, cl, func(r *kgo.Record) bool { return string(r.Value) == tag }); err != nil {
		fail("consume", err)
	}
	key := "victim/" + tag
	if _, err := sc.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader(tag)}); err != nil {
		fail("put", err)
		fail("get", errors.New("not tried: nothing put"))
	} else if out, err := sc.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err != nil {
		fail("get", err)
	} else {
		b, err := io.ReadAll(out.Body)
		out.Body.Close()
		if err != nil || string(b) != tag {
			fail("get", fmt.Errorf("want %q, got %q (%v)", tag, b, err))
		}
	}
	r.took = time.Since(r.at)
	return r
}

// regionOf is an S3 access Secret's region, us-east-1 when it has none.
func regionOf(d map[string][]byte) string {
	if r := string(d["region"]); r != "" {
		return r
	}
	return "us-east-1"
}

// victimResource is one of alice's topics or buckets.
type victimResource struct {
	// kind is "topic" or "bucket".
	kind, name string
	// endpoint is a bucket's S3 server; key an object alice wrote there.
	endpoint, key string
}

// tries reports whether cred (an access Secret's data) is tried on r: a
// Kafka credential on topics, an S3 key on the buckets of its own server.
func tries(cred map[string][]byte, r victimResource) bool {
	switch {
	case r.kind == "topic":
		_, ok := cred["sasl.username"]
		return ok
	case r.kind == "bucket":
		return cred["accessKeyID"] != nil && strings.TrimRight(string(cred["endpoint"]), "/") == strings.TrimRight(r.endpoint, "/")
	}
	return false
}

// reach tries cred on r and returns the requests that worked: describe
// (Metadata), produce and fetch on a topic; list, get and put on a bucket.
// Fetch is tried only when describe worked: reading a topic needs its
// metadata, and Kafka's READ implies DESCRIBE.
func reach(ctx context.Context, cred map[string][]byte, r victimResource) (worked []string, tried bool) {
	if !tries(cred, r) {
		return nil, false
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if r.kind == "topic" {
		cl, err := kafka.SecretClient(cred)
		if err != nil {
			return nil, true
		}
		defer cl.Close()
		err = kafka.Describe(ctx, cl, r.name)
		var ke *kerr.Error
		if err != nil && !errors.As(err, &ke) {
			// No Kafka answer at all: the broker closed the connection,
			// as kfake does when SASL authentication fails (a revoked
			// user), so no request of this client can work.
			return nil, true
		}
		if err == nil {
			worked = append(worked, "describe")
		}
		pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
		err = cl.ProduceSync(pctx, &kgo.Record{Topic: r.name, Value: []byte("mallory")}).FirstErr()
		pcancel()
		if err == nil {
			worked = append(worked, "produce")
		}
		if len(worked) > 0 && worked[0] == "describe" {
			cc, err := kafka.SecretClient(cred, kgo.ConsumeTopics(r.name), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			if err == nil {
				fctx, fcancel := context.WithTimeout(ctx, 5*time.Second)
				if kafka.ConsumeOne(fctx, cc) == nil {
					worked = append(worked, "fetch")
				}
				fcancel()
				cc.Close()
			}
		}
		return worked, true
	}
	sc := s3Client(string(cred["endpoint"]), regionOf(cred), string(cred["accessKeyID"]), string(cred["secretAccessKey"]))
	if _, err := sc.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(r.name), MaxKeys: aws.Int32(1)}); err == nil {
		worked = append(worked, "list")
	}
	if out, err := sc.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(r.name), Key: aws.String(r.key)}); err == nil {
		out.Body.Close()
		worked = append(worked, "get")
	}
	if _, err := sc.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(r.name), Key: aws.String("mallory-was-here"), Body: strings.NewReader("mallory")}); err == nil {
		worked = append(worked, "put")
	}
	return worked, true
}

// ownResourceWorks checks, without writing, that an access Secret's
// credential reaches its own resource: Metadata on a topic, ListObjects on
// a bucket.
func ownResourceWorks(ctx context.Context, d map[string][]byte, tg reclaimTarget) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if tg.kind == "topic" {
		cl, err := kafka.SecretClient(d)
		if err != nil {
			return err
		}
		defer cl.Close()
		return kafka.Describe(ctx, cl, tg.name)
	}
	sc := s3Client(string(d["endpoint"]), regionOf(d), string(d["accessKeyID"]), string(d["secretAccessKey"]))
	_, err := sc.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(tg.name), MaxKeys: aws.Int32(1)})
	return err
}

// aliceWrites writes r.key (an object, or a record with that value) with
// alice's Secret d, and reads it back.
func aliceWrites(ctx context.Context, d map[string][]byte, r victimResource) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if r.kind == "topic" {
		cl, err := kafka.SecretClient(d, kgo.ConsumeTopics(r.name), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			return err
		}
		defer cl.Close()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: r.name, Value: []byte(r.key)}).FirstErr(); err != nil {
			return fmt.Errorf("produce: %w", err)
		}
		if err := kafka.ConsumeMatching(ctx, cl, func(rec *kgo.Record) bool { return string(rec.Value) == r.key }); err != nil {
			return fmt.Errorf("consume: %w", err)
		}
		return nil
	}
	sc := s3Client(string(d["endpoint"]), regionOf(d), string(d["accessKeyID"]), string(d["secretAccessKey"]))
	if _, err := sc.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(r.name), Key: aws.String(r.key), Body: strings.NewReader(r.key)}); err != nil {
		return fmt.Errorf("put: %w", err)
	}
	out, err := sc.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(r.name), Key: aws.String(r.key)})
	if err != nil {
		return fmt.Errorf("get: %w", err)
	}
	return out.Body.Close()
}
