package claims

import (
	"fmt"
	"maps"
	"sort"
	"strings"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// NoLocation is the one key of the location a claim records for a
// resource made with none of its driver's location parameters set (an R2
// bucket without a jurisdiction, on the account endpoint). A claim that
// records no location at all (nil) was made before claims recorded it,
// and records the spec's at its next pass: without this entry, a claim
// made without a jurisdiction stayed nil, and a jurisdiction set later
// (by a tenant editing a Buckety being deleted where the webhook did not
// see it, or by a backend default that converges) pointed every call,
// deletion included, at a bucket of the same name in another
// jurisdiction, and recorded it there.
const NoLocation = "(none)"

// Location picks the location parameters (keys, as the driver declares
// them: drivers.Locator) out of params, for a claim to record: NoLocation
// when the driver has location parameters and params set none; nil when
// the driver has none.
func Location(keys []string, params map[string]string) map[string]string {
	var out map[string]string
	for _, k := range keys {
		if v, ok := params[k]; ok {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	if out == nil && len(keys) > 0 {
		out = map[string]string{NoLocation: ""}
	}
	return out
}

// Effective is params with the location parameters as cl recorded them:
// what every backend call on cl's resource is made with, so that an edit
// of a location parameter after the claim (say, during deletion) never
// points a call at another resource. A claim that recorded no location
// (made before claims recorded it) leaves params as they are.
func Effective(keys []string, cl *v1.BucketyClaim, params map[string]string) map[string]string {
	if cl == nil || cl.Spec.Location == nil || len(keys) == 0 {
		return params
	}
	out := maps.Clone(params)
	if out == nil {
		out = map[string]string{}
	}
	for _, k := range keys {
		if v, ok := cl.Spec.Location[k]; ok {
			out[k] = v
		} else {
			delete(out, k)
		}
	}
	return out
}

// LocationChanged describes how params' location parameters differ from
// those cl recorded, naming each key; "" when they agree (or cl recorded
// none).
func LocationChanged(keys []string, cl *v1.BucketyClaim, params map[string]string) string {
	var diffs []string
	for _, k := range LocationKeysChanged(keys, cl, params) {
		was, had := cl.Spec.Location[k]
		now, has := params[k]
		diffs = append(diffs, fmt.Sprintf("spec.parameters[%s] is %s, but %s was claimed with %s", k, quoteOrUnset(now, has), cl.Spec.ResourceName, quoteOrUnset(was, had)))
	}
	return strings.Join(diffs, "; ")
}

// LocationKeysChanged names, sorted, the location parameters params sets
// otherwise than cl recorded them; none when they agree (or cl recorded
// none).
func LocationKeysChanged(keys []string, cl *v1.BucketyClaim, params map[string]string) []string {
	if cl == nil || cl.Spec.Location == nil {
		return nil
	}
	var out []string
	for _, k := range keys {
		was, had := cl.Spec.Location[k]
		now, has := params[k]
		if had != has || was != now {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func quoteOrUnset(v string, set bool) string {
	if !set {
		return "it unset"
	}
	return fmt.Sprintf("%q", v)
}
