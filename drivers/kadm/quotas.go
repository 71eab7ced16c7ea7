package kadm

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Kafka client quotas (KIP-546) of per-access users. An access may ask for
// quotas in its parameters; the backend's config bounds them (maxima) and
// gives every per-access user the defaults it does not ask to change. They
// are set on the access's own user (quota entity user=<principal>), so one
// tenant's quota never throttles another's; on a backend without per-access
// users a quota would sit on the shared user and throttle every tenant at
// once, so there the keys are refused.
//
// Every quota on a buckety user's entity is buckety's, as its ALLOW ACLs
// are (acls.go): the user is, and Kafka knows four quota keys for a user,
// all of them buckety's parameters. A key the parameters and the defaults
// do not ask for is drift and removed. Quotas on entities that combine the
// user with a client id (user=…,client-id=…) are an operator's and not
// looked at.

// Access parameter keys of client quotas.
const (
	// AccessProducerByteRate is Kafka's producer_byte_rate: the bytes per
	// second the access's user may produce, per broker.
	AccessProducerByteRate = "producerByteRate"
	// AccessConsumerByteRate is Kafka's consumer_byte_rate: the bytes per
	// second the access's user may fetch, per broker.
	AccessConsumerByteRate = "consumerByteRate"
	// AccessRequestPercentage is Kafka's request_percentage: the share of
	// one broker thread's time (in percent, per quota window) the user's
	// requests may take; above 100 spans several threads.
	AccessRequestPercentage = "requestPercentage"
	// AccessControllerMutationRate is Kafka's controller_mutation_rate: the
	// partitions per second the user may create or delete (KIP-599).
	AccessControllerMutationRate = "controllerMutationRate"
)

// quotaKey is one client quota: its access parameter and Kafka's key.
type quotaKey struct {
	param, kafka string
	// whole keys take integers (byte rates), the others decimals.
	whole bool
}

// quotaKeys lists the client quotas an access may ask for, in the order
// errors and docs name them.
var quotaKeys = []quotaKey{
	{param: AccessProducerByteRate, kafka: "producer_byte_rate", whole: true},
	{param: AccessConsumerByteRate, kafka: "consumer_byte_rate", whole: true},
	{param: AccessRequestPercentage, kafka: "request_percentage"},
	{param: AccessControllerMutationRate, kafka: "controller_mutation_rate"},
}

// quotaKeyOf returns the quota an access parameter asks for.
func quotaKeyOf(param string) (quotaKey, bool) {
	for _, q := range quotaKeys {
		if q.param == param {
			return q, true
		}
	}
	return quotaKey{}, false
}

// The grammar of quota values: a byte rate is a positive integer of at
// most 15 digits (exact as the double Kafka stores); a percentage or a
// rate is a positive decimal with at most 15 digits before the point and 6
// after it. No sign, exponent or leading zero. The patterns are published
// in the access-parameters schema, and ValidateAccess checks the same.
const (
	wholePattern   = `^[1-9][0-9]{0,14}$`
	decimalPattern = `^([1-9][0-9]{0,14}(\.[0-9]{1,6})?|0\.([1-9][0-9]{0,5}|0[1-9][0-9]{0,4}|00[1-9][0-9]{0,3}|000[1-9][0-9]{0,2}|0000[1-9][0-9]?|00000[1-9]))$`
)

var (
	wholeRE   = regexp.MustCompile(wholePattern)
	decimalRE = regexp.MustCompile(decimalPattern)
)

// pattern is the value grammar of q.
func (q quotaKey) pattern() *regexp.Regexp {
	if q.whole {
		return wholeRE
	}
	return decimalRE
}

// parse reads a quota value, or says what is wrong with it.
func (q quotaKey) parse(v string) (float64, error) {
	if !q.pattern().MatchString(v) {
		return 0, errors.New(q.badValue(v))
	}
	n, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, err
	}
	return n, nil
}

// badValue says why v does not match q's grammar.
func (q quotaKey) badValue(v string) string {
	example := `as "25" or "12.5"`
	if q.whole {
		example = `in bytes per second, as "1048576"`
	}
	n, err := strconv.ParseFloat(v, 64)
	intPart, frac, hasFrac := strings.Cut(strings.TrimPrefix(v, "-"), ".")
	switch {
	case err != nil || strings.ContainsAny(v, "eE+xXpP_ \tInN"):
		return "must be a plain decimal number, " + example
	case n <= 0:
		return "must be positive (a quota of 0 lets nothing through); omit the key for no quota, " + example
	case q.whole && hasFrac:
		return "must be a whole number of bytes per second, as \"1048576\""
	case intPart == "":
		return "needs a digit before the decimal point, " + example
	case len(intPart) > 1 && intPart[0] == '0':
		return "must have no leading zeros, " + example
	case hasFrac && (frac == "" || len(frac) > 6):
		return "may have 1 to 6 digits after the decimal point, " + example
	}
	return "may have at most 15 digits before the decimal point, " + example
}

// formatQuota prints a quota value as parameters spell it.
func formatQuota(n float64) string { return strconv.FormatFloat(n, 'f', -1, 64) }

// Quotas bounds the client quotas of per-access users and gives them
// defaults. A maximum bounds only what an access asks for: give a default
// too to bound every user.
type Quotas struct {
	// MaxProducerByteRate is the highest producerByteRate (bytes per
	// second) an access may ask for. Absent: no maximum.
	MaxProducerByteRate *int64 `json:"maxProducerByteRate,omitempty" jsonschema:"minimum=1,maximum=999999999999999"`
	// MaxConsumerByteRate is the highest consumerByteRate (bytes per
	// second) an access may ask for. Absent: no maximum.
	MaxConsumerByteRate *int64 `json:"maxConsumerByteRate,omitempty" jsonschema:"minimum=1,maximum=999999999999999"`
	// MaxRequestPercentage is the highest requestPercentage an access may
	// ask for. Absent: no maximum.
	MaxRequestPercentage *float64 `json:"maxRequestPercentage,omitempty" jsonschema:"exclusiveMinimum=0,exclusiveMaximum=1000000000000000"`
	// MaxControllerMutationRate is the highest controllerMutationRate an
	// access may ask for. Absent: no maximum.
	MaxControllerMutationRate *float64 `json:"maxControllerMutationRate,omitempty" jsonschema:"exclusiveMinimum=0,exclusiveMaximum=1000000000000000"`
	// DefaultProducerByteRate is set on every per-access user whose access
	// does not set producerByteRate. Absent: none.
	DefaultProducerByteRate *int64 `json:"defaultProducerByteRate,omitempty" jsonschema:"minimum=1,maximum=999999999999999"`
	// DefaultConsumerByteRate is set on every per-access user whose access
	// does not set consumerByteRate. Absent: none.
	DefaultConsumerByteRate *int64 `json:"defaultConsumerByteRate,omitempty" jsonschema:"minimum=1,maximum=999999999999999"`
	// DefaultRequestPercentage is set on every per-access user whose access
	// does not set requestPercentage. Absent: none.
	DefaultRequestPercentage *float64 `json:"defaultRequestPercentage,omitempty" jsonschema:"exclusiveMinimum=0,exclusiveMaximum=1000000000000000"`
	// DefaultControllerMutationRate is set on every per-access user whose
	// access does not set controllerMutationRate. Absent: none.
	DefaultControllerMutationRate *float64 `json:"defaultControllerMutationRate,omitempty" jsonschema:"exclusiveMinimum=0,exclusiveMaximum=1000000000000000"`
}

// quotaLimit is the config's maximum and default of one quota (nil: none).
type quotaLimit struct{ max, def *float64 }

// limit is the config's maximum and default of the quota q; a nil Quotas
// has none.
func (qs *Quotas) limit(q quotaKey) quotaLimit {
	if qs == nil {
		return quotaLimit{}
	}
	switch q.param {
	case AccessProducerByteRate:
		return quotaLimit{asFloat(qs.MaxProducerByteRate), asFloat(qs.DefaultProducerByteRate)}
	case AccessConsumerByteRate:
		return quotaLimit{asFloat(qs.MaxConsumerByteRate), asFloat(qs.DefaultConsumerByteRate)}
	case AccessRequestPercentage:
		return quotaLimit{qs.MaxRequestPercentage, qs.DefaultRequestPercentage}
	case AccessControllerMutationRate:
		return quotaLimit{qs.MaxControllerMutationRate, qs.DefaultControllerMutationRate}
	}
	return quotaLimit{}
}

func asFloat(n *int64) *float64 {
	if n == nil {
		return nil
	}
	f := float64(*n)
	return &f
}

// maxField and defaultField name q's config fields, as in error messages.
func (q quotaKey) maxField() string {
	return "max" + strings.ToUpper(q.param[:1]) + q.param[1:]
}

func (q quotaKey) defaultField() string {
	return "default" + strings.ToUpper(q.param[:1]) + q.param[1:]
}

// validateQuotas checks a config's quotas block at p (config.quotas).
func (c *Config) validateQuotas(p *field.Path) field.ErrorList {
	if c.Quotas == nil {
		return nil
	}
	if why := c.sharedWhy(); why != "" {
		return field.ErrorList{field.Forbidden(p, "quotas apply to the user buckety issues per access, and this backend issues none ("+why+"): a quota on the shared user would throttle every tenant at once; remove quotas")}
	}
	var errs field.ErrorList
	for _, q := range quotaKeys {
		l := c.Quotas.limit(q)
		for _, f := range []struct {
			name string
			v    *float64
		}{{q.maxField(), l.max}, {q.defaultField(), l.def}} {
			if f.v != nil && !(*f.v > 0 && *f.v < 1e15) {
				errs = append(errs, field.Invalid(p.Child(f.name), formatQuota(*f.v), "must be positive and below 1e15; omit it for none"))
			}
		}
		if l.max != nil && l.def != nil && *l.def > *l.max {
			errs = append(errs, field.Invalid(p.Child(q.defaultField()), formatQuota(*l.def), fmt.Sprintf("is above %s (%s): every access without %s would get more than any access may ask for", q.maxField(), formatQuota(*l.max), q.param)))
		}
	}
	return errs
}

// validateQuota checks one quota parameter of an access at p.
func validateQuota(p *field.Path, c *Config, q quotaKey, v string) *field.Error {
	if c == nil {
		return field.Forbidden(p, "this backend issues no user per access, so a quota would sit on the shared user and throttle every tenant at once")
	}
	if why := c.sharedWhy(); why != "" {
		return field.Forbidden(p, "this backend issues no user per access ("+why+"), so a quota would sit on the shared user and throttle every tenant at once; remove "+q.param)
	}
	n, err := q.parse(v)
	if err != nil {
		return field.Invalid(p, v, err.Error())
	}
	if max := c.Quotas.limit(q).max; max != nil && n > *max {
		return field.Invalid(p, v, fmt.Sprintf("%s %s is above this backend's maximum of %s (quotas.%s)", q.param, v, formatQuota(*max), q.maxField()))
	}
	return nil
}

// wantQuotas is the exact set of client quotas of an access's user, by
// Kafka key: its parameters, and the config's defaults for the keys it
// does not set.
func (c *Config) wantQuotas(params map[string]string) (map[string]float64, error) {
	out := map[string]float64{}
	for _, q := range quotaKeys {
		v, ok := params[q.param]
		if !ok {
			if def := c.Quotas.limit(q).def; def != nil {
				out[q.kafka] = *def
			}
			continue
		}
		n, err := q.parse(v)
		if err != nil {
			return nil, fmt.Errorf("parameter %s %q: %w", q.param, v, err)
		}
		out[q.kafka] = n
	}
	return out, nil
}

// quotaOp is one change of a user's quotas: a key set to a value, or
// removed.
type quotaOp struct {
	key    string
	value  float64
	remove bool
}

// quotaDiff is what makes have exactly want: the keys to set and the keys
// to remove, sorted by key.
func quotaDiff(have, want map[string]float64) []quotaOp {
	var ops []quotaOp
	for _, k := range sortedFloatKeys(want) {
		if v, ok := have[k]; !ok || v != want[k] {
			ops = append(ops, quotaOp{key: k, value: want[k]})
		}
	}
	for _, k := range sortedFloatKeys(have) {
		if _, ok := want[k]; !ok {
			ops = append(ops, quotaOp{key: k, remove: true})
		}
	}
	return ops
}

// sameQuotas reports whether have is exactly want.
func sameQuotas(have, want map[string]float64) bool { return maps.Equal(have, want) }

func sortedFloatKeys(m map[string]float64) []string { return slices.Sorted(maps.Keys(m)) }
