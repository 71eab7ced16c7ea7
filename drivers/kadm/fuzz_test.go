package kadm_test

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/drivertest"
	"github.com/Yolean/buckety-controller/drivers/kadm"
	"github.com/Yolean/buckety-controller/test/fuzzinput"
)

// The fuzz targets below check the kadm driver's admission-facing checks and
// its Secret payload against properties stated independently of the code
// under test: Kafka's own topic-name rule, the documented parameter keys, and
// the documented Secret keys. Every target is seeded from examples/.

func kadmSeeds(f *testing.F) fuzzinput.Specs {
	f.Helper()
	s, err := fuzzinput.ExampleSpecs("../../examples/kadm/*/*.yaml", "../../examples/quickstart/*.yaml")
	if err != nil {
		f.Fatal(err)
	}
	if len(s.Parameters) == 0 || len(s.Names) == 0 {
		f.Fatalf("want seed parameters and names from examples/kadm, got %d and %d", len(s.Parameters), len(s.Names))
	}
	return s
}

// kafkaTopic is Kafka's own rule (kafka.common.internals.Topic): 1 to 249
// of [a-zA-Z0-9._-], not "." or "..".
var kafkaTopic = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)

// FuzzValidateName: accepted exactly when Kafka accepts the name, minus the
// "__" prefix reserved for internal topics, in any spelling Kafka takes for
// it ('.' and '_' collide).
func FuzzValidateName(f *testing.F) {
	for _, n := range kadmSeeds(f).Names {
		f.Add(n)
	}
	for _, n := range []string{"", ".", "..", "__consumer_offsets", "_.transaction_state", "._schemas", "a.b_c", strings.Repeat("x", 250), "tenant1.orders.v003", "ö"} {
		f.Add(n)
	}
	d := kadm.New()
	f.Fuzz(func(t *testing.T, name string) {
		p := field.NewPath("spec", "name")
		_, errs := d.ValidateName(p, &kadm.Config{}, name)
		drivertest.CheckPaths(t, errs, "spec.name")
		want := kafkaTopic.MatchString(name) && name != "." && name != ".." && !strings.HasPrefix(strings.ReplaceAll(name, ".", "_"), "__")
		if got := len(errs) == 0; got != want {
			t.Fatalf("name %q: want accepted=%v, got accepted=%v (%v)", name, want, got, errs)
		}
	})
}

// FuzzValidateParameters: on create and on update (old and new both
// arbitrary), errors name a parameter; accepted parameters use only the
// documented keys with well-formed values; an accepted update never
// shrinks partitions or changes the replication factor; and re-applying an
// accepted object unchanged is accepted.
func FuzzValidateParameters(f *testing.F) {
	s := kadmSeeds(f)
	for _, p := range s.Parameters {
		f.Add(false, "", fuzzinput.Encode(p))
		f.Add(true, fuzzinput.Encode(p), fuzzinput.Encode(p))
	}
	f.Add(true, "partitions=3\nreplicationFactor=1", "partitions=2\nreplicationFactor=3")
	f.Add(true, "config.retention.ms=1", "config.retention.ms=2\nconfig.cleanup.policy=compact")
	f.Add(false, "", "partitions=+1\nconfig.num.partitions=3\nconfig.X=1\nreplicationFactor=40000")
	d := kadm.New()
	f.Fuzz(func(t *testing.T, hasOld bool, oldS, newS string) {
		var old map[string]string
		if hasOld {
			old = fuzzinput.Map(oldS)
		}
		nw := fuzzinput.Map(newS)
		p := field.NewPath("spec", "parameters")
		_, errs := d.ValidateParameters(p, &kadm.Config{}, old, nw)
		drivertest.CheckPaths(t, errs, "spec.parameters")
		if len(errs) > 0 {
			return
		}
		for k, v := range nw {
			switch {
			case k == kadm.ParamPartitions:
				if n, err := strconv.ParseInt(v, 10, 32); err != nil || n <= 0 {
					t.Fatalf("accepted partitions %q, want a positive int32", v)
				}
			case k == kadm.ParamReplicationFactor:
				if n, err := strconv.ParseInt(v, 10, 16); err != nil || n <= 0 {
					t.Fatalf("accepted replicationFactor %q, want a positive int16", v)
				}
			case strings.HasPrefix(k, kadm.ConfigPrefix) && len(k) > len(kadm.ConfigPrefix):
			default:
				t.Fatalf("accepted key %q, want partitions, replicationFactor or config.<name>", k)
			}
		}
		if old != nil {
			if old[kadm.ParamReplicationFactor] != nw[kadm.ParamReplicationFactor] {
				t.Fatalf("accepted a replicationFactor change %q -> %q", old[kadm.ParamReplicationFactor], nw[kadm.ParamReplicationFactor])
			}
			on, oerr := strconv.Atoi(old[kadm.ParamPartitions])
			nn, nerr := strconv.Atoi(nw[kadm.ParamPartitions])
			if oerr == nil && nerr == nil && nn < on {
				t.Fatalf("accepted partitions shrinking %d -> %d", on, nn)
			}
		}
		if _, errs := d.ValidateParameters(p, &kadm.Config{}, nw, nw); len(errs) > 0 {
			t.Fatalf("accepted %v, but re-applying it unchanged is rejected: %v", nw, errs)
		}
	})
}

// FuzzValidateAccess: errors name a parameter; on a backend without
// per-access users the only accepted parameter is consumerGroupPrefix; on
// one with them, the quota parameters too, each a positive number within
// the backend's maximum.
func FuzzValidateAccess(f *testing.F) {
	s := kadmSeeds(f)
	for _, p := range s.AccessParameters {
		for _, r := range append(s.Roles, "", "ReadWrite") {
			f.Add(r, fuzzinput.Encode(p))
		}
	}
	f.Add("Admin", "consumerGroupPrefix=\nx=y")
	f.Add("ReadOnly", "producerByteRate=1048576\nrequestPercentage=12.5\ncontrollerMutationRate=0.5")
	f.Add("ReadWrite", "consumerByteRate=0\nrequestPercentage=51")
	d := kadm.New()
	maxPercentage := 50.0
	scoped := &kadm.Config{SeedBrokers: []string{"k:9092"}, SASL: &kadm.SASL{Mechanism: "PLAIN", Username: "u", Password: "p"},
		Quotas: &kadm.Quotas{MaxRequestPercentage: &maxPercentage}}
	quotaKeys := map[string]bool{kadm.AccessProducerByteRate: true, kadm.AccessConsumerByteRate: true, kadm.AccessRequestPercentage: true, kadm.AccessControllerMutationRate: true}
	f.Fuzz(func(t *testing.T, role, params string) {
		m := fuzzinput.Map(params)
		p := field.NewPath("spec", "parameters")
		_, errs := d.ValidateAccess(p, &kadm.Config{}, drivers.Role(role), m)
		drivertest.CheckPaths(t, errs, "spec.parameters")
		for k := range m {
			if len(errs) == 0 && k != kadm.AccessConsumerGroupPrefix {
				t.Fatalf("without sasl: accepted access parameter %q, want only %s", k, kadm.AccessConsumerGroupPrefix)
			}
		}
		_, errs = d.ValidateAccess(p, scoped, drivers.Role(role), m)
		drivertest.CheckPaths(t, errs, "spec.parameters")
		if len(errs) > 0 {
			return
		}
		for k, v := range m {
			if k == kadm.AccessConsumerGroupPrefix {
				continue
			}
			if !quotaKeys[k] {
				t.Fatalf("accepted access parameter %q, want only %s and the quotas", k, kadm.AccessConsumerGroupPrefix)
			}
			if n, err := strconv.ParseFloat(v, 64); err != nil || !(n > 0) || (k == kadm.AccessRequestPercentage && n > maxPercentage) {
				t.Fatalf("accepted %s=%q, want a positive number (requestPercentage at most %v)", k, v, maxPercentage)
			}
		}
	})
}

// FuzzGrant: the Secret payload for any access has exactly the declared
// flat keys (SecretKeys: bootstrap and topic), topic is the resource name, bootstrap is
// the configured address, every key is a valid Secret key, and a grant is
// never reported per access for a role it does not enforce.
func FuzzGrant(f *testing.F) {
	s := kadmSeeds(f)
	for i, n := range s.Names {
		role := "ReadWrite"
		if len(s.Roles) > 0 {
			role = s.Roles[i%len(s.Roles)]
		}
		f.Add(n, "tenant1", "orders", role, "", "partitions=3", "kafka:9092", "")
	}
	f.Add("t", "ns", "a", "ReadOnly", "consumerGroupPrefix=g-", "", "a:1,b:2", "public:9093")
	d := kadm.New()
	f.Fuzz(func(t *testing.T, resource, ns, name, role, params, resourceParams, seeds, bootstrap string) {
		cfg := &kadm.Config{SeedBrokers: strings.Split(seeds, ","), Bootstrap: bootstrap}
		if len(cfg.Validate(field.NewPath("config"))) > 0 {
			return // Open is only ever called with a validated config
		}
		be, err := d.Open(context.Background(), "kafka", cfg)
		if err != nil {
			t.Fatalf("open with a valid config: %v", err)
		}
		defer func() {
			if err := be.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		}()
		g, err := be.Grant(context.Background(), drivers.Access{Resource: resource, Namespace: ns, Name: name, Role: drivers.Role(role),
			Parameters: fuzzinput.Map(params), ResourceParameters: fuzzinput.Map(resourceParams)})
		if resource == "" {
			if err == nil {
				t.Fatalf("grant without a topic: want an error, got Secret keys %v", g.Data)
			}
			return
		}
		if err != nil {
			t.Fatalf("grant: %v", err)
		}
		drivertest.CheckGrant(t, d.SecretKeys(), g)
		if got := string(g.Data["topic"]); got != resource {
			t.Fatalf("want topic %q, got %q", resource, got)
		}
		want := bootstrap
		if want == "" {
			var addrs []string
			for _, a := range strings.Split(seeds, ",") {
				if a = strings.TrimSpace(a); a != "" {
					addrs = append(addrs, a)
				}
			}
			want = strings.Join(addrs, ",")
		}
		if got := string(g.Data["bootstrap"]); got != want {
			t.Fatalf("want bootstrap %q, got %q", want, got)
		}
		if g.PerAccess && role != "" && role != "ReadWrite" {
			t.Fatalf("grant for role %q reported scoped, but v1alpha1 hands read-write credentials", role)
		}
	})
}
