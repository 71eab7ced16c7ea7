package paramschema_test

import (
	"context"
	"strings"
	"testing"

	"github.com/invopop/jsonschema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/kadm"
	"github.com/Yolean/buckety-controller/drivers/s3"
	"github.com/Yolean/buckety-controller/internal/paramschema"
)

type check struct {
	name     string
	old, new map[string]string
	impl     string
	// errs are substrings of the errors; none = valid.
	errs []string
	// gated: the errors are capability gating's, which the driver checks
	// alone (the schema publishes x-buckety-capabilities, and the webhook
	// asks the driver, which knows the backend's server type).
	gated bool
}

func run(t *testing.T, d drivers.Driver, cfg drivers.Config, cases []check) {
	t.Helper()
	v, err := paramschema.Compile(d.Schemas().Parameters)
	if err != nil {
		t.Fatalf("compile %s schema: %v", d.Name(), err)
	}
	p := field.NewPath("spec", "parameters")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			errs := v.Validate(context.Background(), p, c.new, c.old)
			_, goErrs := d.ValidateParameters(p, cfg, c.old, c.new)
			checked := errs
			if c.gated {
				if len(errs) > 0 {
					t.Errorf("schema: want capability gating left to the driver, got %v", errs)
				}
				checked = goErrs
			}
			if (len(checked) == 0) != (len(c.errs) == 0) {
				t.Fatalf("want errors %q, got %v", c.errs, checked)
			}
			for _, e := range c.errs {
				if !strings.Contains(checked.ToAggregate().Error(), e) {
					t.Errorf("want %q in %v", e, checked)
				}
			}
			if c.gated {
				return
			}
			// The published schema and the driver's Go validation agree on
			// what is valid, key by key.
			if keysOf(errs) != keysOf(goErrs) {
				t.Errorf("schema and driver disagree: schema flags [%s] (%v), driver flags [%s] (%v)", keysOf(errs), errs, keysOf(goErrs), goErrs)
			}
		})
	}
}

func keysOf(errs field.ErrorList) string {
	seen := map[string]bool{}
	var out []string
	for _, e := range errs {
		f := e.Field
		if i := strings.Index(f, "["); i >= 0 {
			f = f[i:]
		} else {
			f = "(root)"
		}
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	sortStrings(out)
	return strings.Join(out, ",")
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func TestKadmSchema(t *testing.T) {
	run(t, kadm.New(), &kadm.Config{}, []check{
		{name: "valid", new: map[string]string{"partitions": "12", "replicationFactor": "3", "config.retention.ms": "604800000"}},
		{name: "empty", new: map[string]string{}},
		{name: "zero partitions", new: map[string]string{"partitions": "0"}, errs: []string{"spec.parameters[partitions]", "should match"}},
		{name: "words", new: map[string]string{"partitions": "many"}, errs: []string{"spec.parameters[partitions]"}},
		{name: "unknown key", new: map[string]string{"retentionMs": "1"}, errs: []string{`spec.parameters[retentionMs]: Unsupported value`}},
		{name: "bad config name", new: map[string]string{"config.Retention": "1"}, errs: []string{"config.Retention"}},
		{name: "overlap", new: map[string]string{"config.num.partitions": "3"}, errs: []string{"spec.parameters[config.num.partitions]: Invalid value: config.num.partitions duplicates the driver parameter partitions"}},
		{name: "leader throttle", new: map[string]string{"config.leader.replication.throttled.replicas": "*"}, errs: []string{"spec.parameters[config.leader.replication.throttled.replicas]", "leader.replication.throttled.replicas is an operational config that buckety never sets or removes"}},
		{name: "follower throttle", new: map[string]string{"config.follower.replication.throttled.replicas": "0:1", "partitions": "3"}, errs: []string{"spec.parameters[config.follower.replication.throttled.replicas]"}},
		{name: "grow", old: map[string]string{"partitions": "3"}, new: map[string]string{"partitions": "12"}},
		{name: "shrink", old: map[string]string{"partitions": "12"}, new: map[string]string{"partitions": "3"}, errs: []string{"partitions can only grow"}},
		{name: "removed", old: map[string]string{"partitions": "12"}, new: map[string]string{}, errs: []string{"cannot be removed once set"}},
		{name: "set where the broker decided", old: map[string]string{}, new: map[string]string{"partitions": "3"}},
		{name: "rf changed", old: map[string]string{"replicationFactor": "3"}, new: map[string]string{"replicationFactor": "1"}, errs: []string{"replicationFactor is immutable"}},
		{name: "rf added", old: map[string]string{}, new: map[string]string{"replicationFactor": "1"}, errs: []string{"replicationFactor is immutable"}},
		{name: "rf on create", new: map[string]string{"replicationFactor": "1"}},
	})
}

func TestS3Schema(t *testing.T) {
	r2, minio := &s3.Config{Implementation: "r2"}, &s3.Config{Implementation: "minio"}
	run(t, s3.New(), minio, []check{
		{name: "valid", impl: "minio", new: map[string]string{"versioning": "true", "region": "eu-north-1", "lifecycle": `{"expirationDays": 3}`}},
		{name: "bad versioning", impl: "minio", new: map[string]string{"versioning": "on"}, errs: []string{"spec.parameters[versioning]: Unsupported value"}},
		{name: "unknown key", impl: "minio", new: map[string]string{"acl": "private"}, errs: []string{"spec.parameters[acl]: Unsupported value"}},
		{name: "region immutable", impl: "minio", old: map[string]string{"region": "a"}, new: map[string]string{"region": "b"}, errs: []string{"region is immutable"}},
		{name: "jurisdiction on minio", impl: "minio", new: map[string]string{"jurisdiction": "eu"}, errs: []string{"jurisdiction is only supported for implementation r2, and the backend's implementation is minio"}, gated: true},
	})
	run(t, s3.New(), r2, []check{
		{name: "jurisdiction on r2", impl: "r2", new: map[string]string{"jurisdiction": "eu"}},
		{name: "jurisdiction immutable", impl: "r2", old: map[string]string{"jurisdiction": "eu"}, new: map[string]string{}, errs: []string{"jurisdiction is immutable"}},
		{name: "lifecycle on r2", impl: "r2", new: map[string]string{"lifecycle": `{"expirationDays": 3}`}},
		{name: "versioning on r2", impl: "r2", new: map[string]string{"versioning": "true"}, errs: []string{"versioning is only supported for implementation aws, minio, versitygw, seaweedfs, and the backend's implementation is r2"}, gated: true},
	})
	lc := `{"expirationDays": 3}`
	run(t, s3.New(), &s3.Config{Implementation: "versitygw"}, []check{
		{name: "versioning on versitygw", impl: "versitygw", new: map[string]string{"versioning": "true"}},
		{name: "lifecycle on versitygw", impl: "versitygw", new: map[string]string{"lifecycle": lc}, errs: []string{"lifecycle is only supported for implementation aws, minio, r2, and the backend's implementation is versitygw"}, gated: true},
		{name: "lifecycle changed on versitygw", impl: "versitygw", old: map[string]string{"lifecycle": `{"expirationDays": 1}`}, new: map[string]string{"lifecycle": lc}, errs: []string{"spec.parameters[lifecycle]: Forbidden"}, gated: true},
		{name: "lifecycle unchanged on versitygw ratchets", impl: "versitygw", old: map[string]string{"lifecycle": lc}, new: map[string]string{"lifecycle": lc, "versioning": "false"}},
	})
	run(t, s3.New(), &s3.Config{}, []check{
		{name: "region without implementation", new: map[string]string{"region": "eu-north-1"}},
		{name: "lifecycle and versioning without implementation", new: map[string]string{"lifecycle": lc, "versioning": "true"},
			errs: []string{"spec.parameters[lifecycle]: Forbidden: lifecycle is only supported for implementation aws, minio, r2, and the backend sets no implementation", "spec.parameters[versioning]: Forbidden"}, gated: true},
	})
}

func TestCompileRejectsBrokenRules(t *testing.T) {
	s := &jsonschema.Schema{Type: "object", Extras: map[string]any{"x-kubernetes-validations": []map[string]string{{"rule": "self.partitions +* 1", "message": "broken"}}}}
	if _, err := paramschema.Compile(s); err == nil {
		t.Fatal("want a CEL rule that does not compile refused at start-up")
	}
}
