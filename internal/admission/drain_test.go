package admission

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

const drainConfig = `backends:
- name: kafka
  driver: kadm
  config: {seedBrokers: ['kafka:9092']}
- name: kafka-reset
  driver: kadm
  service: kafka
  config: {seedBrokers: ['kafka:9092']}
  drain: {allow: true, interval: 5s, stuckAfter: 10m}
- name: s3-grid
  driver: s3
  service: s3
  config: {implementation: minio, endpoint: 'http://minio:9000', accessKeyID: '${AK}', secretAccessKey: '${SK}'}
  drain: {interval: 3m, slowInterval: 15m}
- name: s3
  driver: s3
  config: {implementation: minio, endpoint: 'http://minio:9000', accessKeyID: '${AK}', secretAccessKey: '${SK}'}
- name: s3-keep
  driver: s3
  service: s3
  config: {implementation: minio, endpoint: 'http://minio:9000', accessKeyID: '${AK}', secretAccessKey: '${SK}'}
  drain: {allow: false}
`

// TestBucketyDrain: spec.drain is refused where the backend does not
// allow it (by default on Kafka, by drain.allow: false on S3), naming the
// field and the config key; durations are checked; removing spec.drain
// and unchanged fields are always admitted.
func TestBucketyDrain(t *testing.T) {
	v, err := New(webhookConfig(t, drainConfig), func(context.Context, string, string) (*v1.Buckety, bool) { return nil, false })
	if err != nil {
		t.Fatal(err)
	}
	bv := BucketyValidator{v}
	withDrain := func(backend string, d *v1.DrainSpec) *v1.Buckety {
		b := bky(backend, "", nil, nil)
		b.Spec.Drain = d
		return b
	}
	req := func(r string) *v1.DrainSpec { return &v1.DrainSpec{Request: r} }
	dur := func(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }
	for _, c := range []struct {
		name     string
		old, new *v1.Buckety
		err      string
	}{
		{name: "create on Kafka without drain.allow", new: withDrain("kafka", req("r1")),
			err: `spec.drain: Forbidden: spec.drain is not allowed on backend "kafka": driver kadm does not allow drains unless the backend's configuration in buckety-controller.yaml sets drain.allow: true`},
		{name: "update adding drain on Kafka without drain.allow", old: withDrain("kafka", nil), new: withDrain("kafka", req("r1")),
			err: `spec.drain: Forbidden: spec.drain is not allowed on backend "kafka"`},
		{name: "Kafka with drain.allow", old: withDrain("kafka-reset", nil), new: withDrain("kafka-reset", req("r1"))},
		{name: "S3 by default", old: withDrain("s3", nil), new: withDrain("s3", req("2026-11-28"))},
		{name: "S3 with drain.allow false", old: withDrain("s3-keep", nil), new: withDrain("s3-keep", req("r1")),
			err: `spec.drain: Forbidden: spec.drain is not allowed on backend "s3-keep": its configuration in buckety-controller.yaml sets drain.allow: false`},
		{name: "interval below 1s", old: withDrain("s3", nil), new: withDrain("s3", &v1.DrainSpec{Request: "r1", Interval: dur(100 * time.Millisecond)}),
			err: `spec.drain.interval: Invalid value: "100ms": must be at least 1s`},
		{name: "stuckAfter zero", old: withDrain("s3", nil), new: withDrain("s3", &v1.DrainSpec{Request: "r1", StuckAfter: dur(0)}),
			err: `spec.drain.stuckAfter: Invalid value: "0s": must be positive`},
		{name: "durations in range", old: withDrain("s3", nil), new: withDrain("s3", &v1.DrainSpec{Request: "r1", Interval: dur(time.Second), SlowInterval: dur(time.Second), StuckAfter: dur(5 * time.Second)})},
		{name: "slowInterval shorter than spec.drain.interval", old: withDrain("s3", nil), new: withDrain("s3", &v1.DrainSpec{Request: "r1", Interval: dur(time.Minute), SlowInterval: dur(30 * time.Second)}),
			err: `spec.drain.slowInterval: Invalid value: "30s": must not be shorter than the interval it slows from (1m0s: spec.drain.interval)`},
		{name: "slowInterval shorter than the backend's drain.interval", old: withDrain("s3-grid", nil), new: withDrain("s3-grid", &v1.DrainSpec{Request: "r1", SlowInterval: dur(time.Minute)}),
			err: `spec.drain.slowInterval: Invalid value: "1m0s": must not be shorter than the interval it slows from (3m0s: the backend's drain.interval)`},
		{name: "slowInterval shorter than the default interval", old: withDrain("s3", nil), new: withDrain("s3", &v1.DrainSpec{Request: "r1", SlowInterval: dur(5 * time.Second)}),
			err: `spec.drain.slowInterval: Invalid value: "5s": must not be shorter than the interval it slows from (10s: the default interval)`},
		{name: "slowInterval zero", old: withDrain("s3", nil), new: withDrain("s3", &v1.DrainSpec{Request: "r1", SlowInterval: dur(0)}),
			err: `spec.drain.slowInterval: Invalid value: "0s": must be positive`},
		{name: "slowInterval shorter than the backend's but not the Buckety's interval", old: withDrain("s3-grid", nil), new: withDrain("s3-grid", &v1.DrainSpec{Request: "r1", Interval: dur(10 * time.Second), SlowInterval: dur(time.Minute)})},
		{name: "removing spec.drain where drains are not allowed (cancels)", old: withDrain("kafka", req("r1")), new: withDrain("kafka", nil)},
		{name: "unchanged spec.drain is not rechecked (the maintainer withdrew drain.allow later)", old: withDrain("s3-keep", req("r1")), new: func() *v1.Buckety {
			b := withDrain("s3-keep", req("r1"))
			b.Spec.RetentionPolicy = v1.RetentionDelete
			return b
		}()},
	} {
		t.Run(c.name, func(t *testing.T) {
			var err error
			if c.old == nil {
				_, err = bv.ValidateCreate(context.Background(), c.new)
			} else {
				_, err = bv.ValidateUpdate(context.Background(), c.old, c.new)
			}
			switch {
			case c.err == "" && err != nil:
				t.Errorf("want admitted, got %v", err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Errorf("want an error containing %q, got %v", c.err, err)
			}
		})
	}
}
