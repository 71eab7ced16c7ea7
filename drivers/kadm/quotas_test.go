package kadm

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/internal/paramschema"
	"github.com/Yolean/buckety-controller/test/kafka"
)

func ptr[T any](v T) *T { return &v }

// scopedConfig is a backend config that issues users per access, with
// quotas.
func scopedConfig(q *Quotas) *Config {
	return &Config{SeedBrokers: []string{"k:9092"}, SASL: &SASL{Mechanism: "SCRAM-SHA-512", Username: "u", Password: "p"}, Quotas: q}
}

// TestValidateQuotaParameters: quota parameters are accepted within the
// backend's maxima on a backend that issues users per access, refused
// above them (naming the key, the value and the maximum), refused
// outright where the backend has no per-access users, and malformed
// values get errors that say what is wrong.
func TestValidateQuotaParameters(t *testing.T) {
	maxima := scopedConfig(&Quotas{MaxProducerByteRate: ptr[int64](10485760), MaxRequestPercentage: ptr(50.0), MaxControllerMutationRate: ptr(2.5)})
	noSASL := &Config{SeedBrokers: []string{"k:9092"}}
	shared := &Config{SeedBrokers: []string{"k:9092"}, SASL: &SASL{Mechanism: "PLAIN", Username: "u", Password: "p"}, ShareCredentials: true}
	for _, tc := range []struct {
		name   string
		cfg    drivers.Config
		params map[string]string
		errs   []string
	}{
		{name: "every key within the maxima", cfg: maxima, params: map[string]string{
			AccessProducerByteRate: "10485760", AccessConsumerByteRate: "999999999999999", AccessRequestPercentage: "12.5", AccessControllerMutationRate: "0.5"}},
		{name: "no maxima: any positive value", cfg: scopedConfig(nil), params: map[string]string{AccessRequestPercentage: "400", AccessControllerMutationRate: "0.000001"}},
		{name: "above the maximum", cfg: maxima, params: map[string]string{AccessProducerByteRate: "10485761", AccessRequestPercentage: "50.5"}, errs: []string{
			`spec.parameters[producerByteRate]: Invalid value: "10485761": producerByteRate 10485761 is above this backend's maximum of 10485760 (quotas.maxProducerByteRate)`,
			`spec.parameters[requestPercentage]: Invalid value: "50.5": requestPercentage 50.5 is above this backend's maximum of 50 (quotas.maxRequestPercentage)`}},
		{name: "no sasl", cfg: noSASL, params: map[string]string{AccessConsumerByteRate: "1024"}, errs: []string{
			`spec.parameters[consumerByteRate]: Forbidden: this backend issues no user per access (it connects without sasl), so a quota would sit on the shared user and throttle every tenant at once`}},
		{name: "shared credentials", cfg: shared, params: map[string]string{AccessRequestPercentage: "10"}, errs: []string{
			`spec.parameters[requestPercentage]: Forbidden: this backend issues no user per access (it has shareCredentials)`}},
		{name: "no config", cfg: nil, params: map[string]string{AccessProducerByteRate: "1"}, errs: []string{`spec.parameters[producerByteRate]: Forbidden`}},
		{name: "zero", cfg: maxima, params: map[string]string{AccessProducerByteRate: "0", AccessRequestPercentage: "0.0"}, errs: []string{
			`[producerByteRate]: Invalid value: "0": must be positive (a quota of 0 lets nothing through)`,
			`[requestPercentage]: Invalid value: "0.0": must be positive`}},
		{name: "negative", cfg: maxima, params: map[string]string{AccessConsumerByteRate: "-1"}, errs: []string{`[consumerByteRate]: Invalid value: "-1": must be positive`}},
		{name: "fractional byte rate", cfg: maxima, params: map[string]string{AccessProducerByteRate: "1.5"}, errs: []string{`[producerByteRate]: Invalid value: "1.5": must be a whole number of bytes per second`}},
		{name: "exponent", cfg: maxima, params: map[string]string{AccessConsumerByteRate: "1e6"}, errs: []string{`[consumerByteRate]: Invalid value: "1e6": must be a plain decimal number, in bytes per second`}},
		{name: "words", cfg: maxima, params: map[string]string{AccessRequestPercentage: "half"}, errs: []string{`[requestPercentage]: Invalid value: "half": must be a plain decimal number, as "25" or "12.5"`}},
		{name: "empty", cfg: maxima, params: map[string]string{AccessRequestPercentage: ""}, errs: []string{`[requestPercentage]: Invalid value: "": must be a plain decimal number`}},
		{name: "leading zero", cfg: maxima, params: map[string]string{AccessConsumerByteRate: "01024", AccessRequestPercentage: "05"}, errs: []string{
			`[consumerByteRate]: Invalid value: "01024": must have no leading zeros`, `[requestPercentage]: Invalid value: "05": must have no leading zeros`}},
		{name: "too many decimals", cfg: maxima, params: map[string]string{AccessControllerMutationRate: "1.1234567"}, errs: []string{`[controllerMutationRate]: Invalid value: "1.1234567": may have 1 to 6 digits after the decimal point`}},
		{name: "no integer part", cfg: maxima, params: map[string]string{AccessRequestPercentage: ".5"}, errs: []string{`[requestPercentage]: Invalid value: ".5": needs a digit before the decimal point`}},
		{name: "trailing point", cfg: maxima, params: map[string]string{AccessControllerMutationRate: "1."}, errs: []string{`[controllerMutationRate]: Invalid value: "1.": may have 1 to 6 digits after the decimal point`}},
		{name: "too large", cfg: maxima, params: map[string]string{AccessConsumerByteRate: "1000000000000000"}, errs: []string{`[consumerByteRate]: Invalid value: "1000000000000000": may have at most 15 digits before the decimal point`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := New().ValidateAccess(field.NewPath("spec", "parameters"), tc.cfg, drivers.RoleReadWrite, tc.params)
			if len(errs) != len(tc.errs) {
				t.Fatalf("want %d errors %q, got %d: %v", len(tc.errs), tc.errs, len(errs), errs)
			}
			got := errs.ToAggregate()
			for _, want := range tc.errs {
				if !strings.Contains(got.Error(), want) {
					t.Errorf("want an error containing %q, got %v", want, got)
				}
			}
		})
	}
}

// TestAccessSchemaAgreesOnQuotas: the published access-parameters schema
// (what the webhook enforces beside ValidateAccess) accepts exactly the
// quota values ValidateAccess accepts on a backend without maxima.
func TestAccessSchemaAgreesOnQuotas(t *testing.T) {
	v, err := paramschema.Compile(New().Schemas().AccessParameters)
	if err != nil {
		t.Fatal(err)
	}
	values := []string{"1", "25", "12.5", "0.5", "0.000001", "0.0000001", "999999999999999", "1000000000000000", "0", "0.0", "00.5",
		"-1", "1e3", "1.", ".5", "1.1234567", "012", "abc", "", " 1", "1,5", "+1", "0x10", "NaN", "Inf"}
	p := field.NewPath("spec", "parameters")
	for _, q := range quotaKeys {
		for _, val := range values {
			params := map[string]string{q.param: val}
			schemaErrs := v.Validate(context.Background(), p, params, nil)
			_, goErrs := New().ValidateAccess(p, scopedConfig(nil), drivers.RoleReadWrite, params)
			if (len(schemaErrs) == 0) != (len(goErrs) == 0) {
				t.Errorf("%s=%q: schema and driver disagree: schema %v, driver %v", q.param, val, schemaErrs, goErrs)
			}
		}
	}
}

// TestWantQuotas: an access's quotas are its parameters, and the config's
// defaults for the keys it does not set.
func TestWantQuotas(t *testing.T) {
	cfg := scopedConfig(&Quotas{DefaultConsumerByteRate: ptr[int64](2048), DefaultRequestPercentage: ptr(10.0), MaxRequestPercentage: ptr(20.0)})
	got, err := cfg.wantQuotas(map[string]string{AccessProducerByteRate: "1024", AccessRequestPercentage: "12.5", AccessConsumerGroupPrefix: "x"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"producer_byte_rate": 1024, "consumer_byte_rate": 2048, "request_percentage": 12.5}
	if !maps.Equal(got, want) {
		t.Errorf("want %v, got %v", want, got)
	}
	if got, err := scopedConfig(nil).wantQuotas(nil); err != nil || len(got) != 0 {
		t.Errorf("no parameters, no defaults: want no quotas, got %v (%v)", got, err)
	}
	if _, err := cfg.wantQuotas(map[string]string{AccessProducerByteRate: "lots"}); err == nil || !strings.Contains(err.Error(), "producerByteRate") {
		t.Errorf("a malformed value: want an error naming the parameter, got %v", err)
	}
}

// TestQuotaDiff: the changes that make one set of quotas another, exactly.
func TestQuotaDiff(t *testing.T) {
	have := map[string]float64{"producer_byte_rate": 1, "consumer_byte_rate": 2, "x_unknown": 3}
	want := map[string]float64{"producer_byte_rate": 1, "consumer_byte_rate": 5, "request_percentage": 7}
	got := fmt.Sprint(quotaDiff(have, want))
	if wantOps := "[{consumer_byte_rate 5 false} {request_percentage 7 false} {x_unknown 0 true}]"; got != wantOps {
		t.Errorf("want %s, got %s", wantOps, got)
	}
	if ops := quotaDiff(want, want); len(ops) != 0 {
		t.Errorf("equal sets: want no change, got %v", ops)
	}
}

// quotasOf reads a user's quotas with the out-of-band client.
func quotasOf(t *testing.T, f *fixture, principal string) map[string]float64 {
	t.Helper()
	got, err := f.admin.DescribeClientQuotas(context.Background(), true, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchName: &principal, MatchType: kmsg.QuotasMatchTypeExact}})
	if err != nil {
		t.Fatal(err)
	}
	return byUser(got)[principal]
}

// setQuotaOutOfBand alters an entity's quotas as an operator would.
func setQuotaOutOfBand(t *testing.T, f *fixture, entity kadm.ClientQuotaEntity, ops ...kadm.AlterClientQuotaOp) {
	t.Helper()
	res, err := f.admin.AlterClientQuotas(context.Background(), []kadm.AlterClientQuotaEntry{{Entity: entity, Ops: ops}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("alter quotas of %v: %v", r.Entity, r.Err)
		}
	}
}

// quotaFixture is a broker with per-access credentials whose backend has
// quota defaults and maxima.
func quotaFixture(t *testing.T) *fixture {
	return newFixture(t, kafka.Options{SASL: []string{"SCRAM-SHA-512:buckety:s3cr3t"}, ACLs: true}, func(c *Config) {
		c.SASL = &SASL{Mechanism: "SCRAM-SHA-512", Username: "buckety", Password: "s3cr3t"}
		c.Quotas = &Quotas{DefaultConsumerByteRate: ptr[int64](4194304), MaxProducerByteRate: ptr[int64](10485760)}
	})
}

// TestQuotasConvergeOnGrant: a new user gets its quotas (parameters and
// the config's defaults) in the Grant that creates it; a Grant without
// Assert sends nothing; changed parameters converge exactly on the next
// Grant with Assert, a removed key included.
func TestQuotasConvergeOnGrant(t *testing.T) {
	f := quotaFixture(t)
	ctx := context.Background()
	f.ensure(t, "orders", nil)
	a := drivers.Access{Resource: "orders", Namespace: "team", Name: "app", UID: "uid-quota", Role: drivers.RoleReadWrite, Assert: drivers.IssueNew,
		Parameters: map[string]string{AccessProducerByteRate: "1048576", AccessRequestPercentage: "12.5"}}
	a.Principal = f.backend.Principal(a, 1)
	g, err := f.backend.Grant(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"producer_byte_rate": 1048576, "request_percentage": 12.5, "consumer_byte_rate": 4194304}
	if got := quotasOf(t, f, a.Principal); !maps.Equal(got, want) {
		t.Errorf("after the first Grant: want quotas %v, got %v", want, got)
	}

	a.Assert, a.Secret = drivers.Trust, string(g.Data[SecretSASLPassword])
	a.Parameters = map[string]string{AccessProducerByteRate: "2097152", AccessConsumerByteRate: "1024", AccessControllerMutationRate: "0.5"}
	f.counter.Reset()
	if _, err := f.backend.Grant(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, all := f.counter.Reset(); all != 0 {
		t.Errorf("without Assert: want no request, got %d", all)
	}
	if got := quotasOf(t, f, a.Principal); !maps.Equal(got, want) {
		t.Errorf("without Assert: want the quotas unchanged %v, got %v", want, got)
	}

	a.Assert = drivers.Reassert
	if _, err := f.backend.Grant(ctx, a); err != nil {
		t.Fatal(err)
	}
	want = map[string]float64{"producer_byte_rate": 2097152, "consumer_byte_rate": 1024, "controller_mutation_rate": 0.5}
	if got := quotasOf(t, f, a.Principal); !maps.Equal(got, want) {
		t.Errorf("after changing the parameters: want quotas %v (request_percentage removed), got %v", want, got)
	}

	// Back to no parameters: only the config's default is left.
	a.Parameters = nil
	if _, err := f.backend.Grant(ctx, a); err != nil {
		t.Fatal(err)
	}
	want = map[string]float64{"consumer_byte_rate": 4194304}
	if got := quotasOf(t, f, a.Principal); !maps.Equal(got, want) {
		t.Errorf("without quota parameters: want only the default %v, got %v", want, got)
	}
	f.counter.Reset()
	if _, err := f.backend.Grant(ctx, a); err != nil {
		t.Fatal(err)
	}
	if ops := f.counter.Ops(); ops["AlterClientQuotas"] != 0 || ops["DescribeClientQuotas"] != 1 {
		t.Errorf("re-asserting quotas in sync: want one DescribeClientQuotas and no AlterClientQuotas, got %v", ops)
	}
}

// TestQuotaDriftIsSweptAndRepaired: quotas changed out of band on a
// buckety user (a key changed, a key added) are drift to the credential
// sweep, which reads every user's quotas in one request; Grant with Assert
// restores them. An operator's quota on the user combined with a client id
// is not buckety's: not drift, and kept through revocation, which removes
// the user's own quotas.
func TestQuotaDriftIsSweptAndRepaired(t *testing.T) {
	f := quotaFixture(t)
	ctx := context.Background()
	f.ensure(t, "orders", nil)
	var as []drivers.Access
	for i := range 3 {
		a := drivers.Access{Resource: "orders", Namespace: "team", Name: fmt.Sprintf("app-%d", i), UID: fmt.Sprintf("uid-q%d", i), Role: drivers.RoleReadWrite,
			Parameters: map[string]string{AccessProducerByteRate: "1048576"}}
		a.Principal = f.backend.Principal(a, 1)
		g, err := f.backend.Grant(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		a.Secret = string(g.Data[SecretSASLPassword])
		as = append(as, a)
	}
	if got, err := f.backend.SweepCredentials(ctx, as); err != nil || len(got) != 0 {
		t.Fatalf("in sync: want no drift, got %v (%v)", got, err)
	}
	setQuotaOutOfBand(t, f, userEntity(as[0].Principal), kadm.AlterClientQuotaOp{Key: "producer_byte_rate", Value: 99999999})
	setQuotaOutOfBand(t, f, userEntity(as[1].Principal), kadm.AlterClientQuotaOp{Key: "request_percentage", Value: 1})
	clientID := "reporting"
	combined := kadm.ClientQuotaEntity{{Type: "user", Name: &as[2].Principal}, {Type: "client-id", Name: &clientID}}
	setQuotaOutOfBand(t, f, combined, kadm.AlterClientQuotaOp{Key: "consumer_byte_rate", Value: 10})
	f.counter.Reset()
	got, err := f.backend.SweepCredentials(ctx, as)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[0 1]" {
		t.Errorf("want accesses 0 and 1 drifted, got %v", got)
	}
	ops := f.counter.Ops()
	if writes, all := f.counter.Reset(); all != 3 || len(writes) != 0 || ops["DescribeClientQuotas"] != 1 {
		t.Errorf("want three reads for the whole cluster, one of them DescribeClientQuotas, got %v", ops)
	}
	for _, i := range got {
		a := as[i]
		a.Assert = drivers.Reassert
		if _, err := f.backend.Grant(ctx, a); err != nil {
			t.Fatal(err)
		}
		if q := quotasOf(t, f, a.Principal); !maps.Equal(q, map[string]float64{"producer_byte_rate": 1048576, "consumer_byte_rate": 4194304}) {
			t.Errorf("%s after re-asserting: want its own quotas back, got %v", a.Name, q)
		}
	}
	if got, err := f.backend.SweepCredentials(ctx, as); err != nil || len(got) != 0 {
		t.Errorf("after re-asserting: want no drift, got %v (%v)", got, err)
	}

	for _, a := range as {
		if err := f.backend.Revoke(ctx, a); err != nil {
			t.Fatal(err)
		}
		if q := quotasOf(t, f, a.Principal); len(q) != 0 {
			t.Errorf("%s after Revoke: want no quotas, got %v", a.Name, q)
		}
		if err := f.backend.Revoke(ctx, a); err != nil {
			t.Errorf("revoking %s again: want success, got %v", a.Name, err)
		}
	}
	all, err := f.admin.DescribeClientQuotas(ctx, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 || len(all[0].Entity) != 2 || !strings.Contains(all[0].Entity.String(), "client-id=reporting") {
		t.Errorf("after revoking: want only the operator's %v left, got %v", combined, all)
	}
}

// TestQuotaConfigs: the quotas block's values must be positive, a default
// at most its maximum, and the block is refused where the backend issues
// no user per access.
func TestQuotaConfigs(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  *Config
		errs []string
	}{
		{name: "defaults within maxima", cfg: scopedConfig(&Quotas{MaxProducerByteRate: ptr[int64](100), DefaultProducerByteRate: ptr[int64](100), MaxRequestPercentage: ptr(50.0), DefaultRequestPercentage: ptr(12.5), DefaultControllerMutationRate: ptr(1.0)})},
		{name: "default above maximum", cfg: scopedConfig(&Quotas{MaxConsumerByteRate: ptr[int64](100), DefaultConsumerByteRate: ptr[int64](101), MaxControllerMutationRate: ptr(1.0), DefaultControllerMutationRate: ptr(1.5)}), errs: []string{
			"config.quotas.defaultConsumerByteRate: Invalid value: \"101\": is above maxConsumerByteRate (100)",
			"config.quotas.defaultControllerMutationRate: Invalid value: \"1.5\": is above maxControllerMutationRate (1)"}},
		{name: "zero and negative", cfg: scopedConfig(&Quotas{MaxProducerByteRate: ptr[int64](0), DefaultRequestPercentage: ptr(-1.0)}), errs: []string{
			"config.quotas.maxProducerByteRate: Invalid value: \"0\": must be positive", "config.quotas.defaultRequestPercentage: Invalid value: \"-1\": must be positive"}},
		{name: "without sasl", cfg: &Config{SeedBrokers: []string{"k:9092"}, Quotas: &Quotas{}}, errs: []string{
			"config.quotas: Forbidden: quotas apply to the user buckety issues per access, and this backend issues none (it connects without sasl)"}},
		{name: "with shared credentials", cfg: &Config{SeedBrokers: []string{"k:9092"}, SASL: &SASL{Mechanism: "PLAIN", Username: "u", Password: "p"}, ShareCredentials: true, Quotas: &Quotas{}}, errs: []string{
			"config.quotas: Forbidden: quotas apply to the user buckety issues per access, and this backend issues none (it has shareCredentials)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := tc.cfg.Validate(field.NewPath("config"))
			if len(errs) != len(tc.errs) {
				t.Fatalf("want %d errors %q, got %v", len(tc.errs), tc.errs, errs)
			}
			for _, want := range tc.errs {
				if !strings.Contains(errs.ToAggregate().Error(), want) {
					t.Errorf("want an error containing %q, got %v", want, errs)
				}
			}
		})
	}
}
