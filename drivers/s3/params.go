package s3

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Parameter keys.
const (
	// ParamRegion is the bucket's region (LocationConstraint); immutable.
	ParamRegion = "region"
	// ParamVersioning is "true" or "false"; reconciled.
	ParamVersioning = "versioning"
	// ParamLifecycle is a JSON object in the portable lifecycle subset;
	// reconciled.
	ParamLifecycle = "lifecycle"
	// ParamJurisdiction is R2's data jurisdiction; capability-gated to
	// implementation r2, immutable.
	ParamJurisdiction = "jurisdiction"
)

var knownKeys = []string{ParamJurisdiction, ParamLifecycle, ParamRegion, ParamVersioning}

// jurisdictions R2 accepts.
var jurisdictions = []string{"eu", "fedramp"}

// capabilityGated maps a gated parameter to the implementations allowing
// it. A parameter is gated when some S3 service the driver claims answers it
// with NotImplemented: refusing it at admission beats a Buckety that is
// Ready while what it asked for never happens. A backend without
// implementation: allows none of them. Widening a list is a minor driver
// version; narrowing one is a major.
var capabilityGated = map[string][]string{
	// Cloudflare R2's feature.
	ParamJurisdiction: {ImplR2},
	// VersityGW answers NotImplemented for bucket lifecycle.
	ParamLifecycle: {ImplAWS, ImplMinIO, ImplR2},
	// Cloudflare R2 has no object versioning. VersityGW has it when the
	// gateway runs with --versioning-dir, which the driver cannot see from
	// its config: without it, versioning stays a runtime shortfall.
	// SeaweedFS (4.53) keeps versioning as S3 does (e2e, every scenario).
	ParamVersioning: {ImplAWS, ImplMinIO, ImplVersityGW, ImplSeaweedFS},
}

// capabilityOf names what a gated parameter needs of the service, for
// messages.
var capabilityOf = map[string]string{
	ParamJurisdiction: "R2 data jurisdictions",
	ParamLifecycle:    "bucket lifecycle",
	ParamVersioning:   "bucket versioning",
}

// gateMessage explains why a gated parameter is refused on impl, and what
// to do instead.
func gateMessage(k string, allowed []string, impl string) string {
	list := strings.Join(allowed, ", ")
	if impl == "" {
		return fmt.Sprintf("%s is only supported for implementation %s, and the backend sets no implementation: remove %s, or ask the platform team to set implementation: (%s) in the backend's config if its service implements %s", k, list, k, list, capabilityOf[k])
	}
	return fmt.Sprintf("%s is only supported for implementation %s, and the backend's implementation is %s, which does not implement %s: remove %s, or use a backend whose implementation is %s", k, list, impl, capabilityOf[k], k, list)
}

// immutable parameters cannot be added, changed or removed after creation.
var immutable = []string{ParamJurisdiction, ParamRegion}

// Lifecycle is the portable lifecycle subset every S3 implementation with
// lifecycle support understands: one rule, optionally scoped to a prefix.
type Lifecycle struct {
	// ExpirationDays expires current objects this many days after creation.
	ExpirationDays int32 `json:"expirationDays,omitempty"`
	// Prefix limits the rule to keys starting with it.
	Prefix string `json:"prefix,omitempty"`
	// AbortIncompleteMultipartUploadDays aborts multipart uploads this many
	// days after they were initiated.
	AbortIncompleteMultipartUploadDays int32 `json:"abortIncompleteMultipartUploadDays,omitempty"`
}

// String renders the lifecycle for messages.
func (l Lifecycle) String() string {
	var parts []string
	if l.ExpirationDays > 0 {
		parts = append(parts, fmt.Sprintf("expire after %dd", l.ExpirationDays))
	}
	if l.AbortIncompleteMultipartUploadDays > 0 {
		parts = append(parts, fmt.Sprintf("abort incomplete uploads after %dd", l.AbortIncompleteMultipartUploadDays))
	}
	if l.Prefix != "" {
		parts = append(parts, fmt.Sprintf("under %q", l.Prefix))
	}
	return strings.Join(parts, ", ")
}

// lifecycleKeys are the JSON keys of Lifecycle.
var lifecycleKeys = []string{"expirationDays", "prefix", "abortIncompleteMultipartUploadDays"}

// parseLifecycle decodes the lifecycle parameter strictly.
func parseLifecycle(s string) (Lifecycle, error) {
	var l Lifecycle
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return Lifecycle{}, fmt.Errorf("want a JSON object with expirationDays, prefix and/or abortIncompleteMultipartUploadDays (the portable subset; anything else is not supported): %v", err)
	}
	if dec.More() {
		return Lifecycle{}, fmt.Errorf("want a single JSON object")
	}
	// encoding/json matches keys case-insensitively; the subset's keys are
	// exact, so "ExpirationDays" is reported instead of silently accepted.
	var keys map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &keys); err != nil {
		return Lifecycle{}, fmt.Errorf("want a single JSON object: %v", err)
	}
	for k := range keys {
		if !contains(lifecycleKeys, k) {
			return Lifecycle{}, fmt.Errorf("unknown key %q: the portable subset has only %s (exact spelling)", k, strings.Join(lifecycleKeys, ", "))
		}
	}
	if l.ExpirationDays < 0 || l.AbortIncompleteMultipartUploadDays < 0 {
		return Lifecycle{}, fmt.Errorf("days must be positive")
	}
	if l.ExpirationDays == 0 && l.AbortIncompleteMultipartUploadDays == 0 {
		return Lifecycle{}, fmt.Errorf("set expirationDays and/or abortIncompleteMultipartUploadDays (remove the parameter to have no lifecycle)")
	}
	if len(l.Prefix) > 1024 {
		return Lifecycle{}, fmt.Errorf("prefix is longer than S3's 1024-byte key limit")
	}
	return l, nil
}

// params is the parsed form of spec.parameters.
type params struct {
	region       string
	versioning   *bool
	lifecycle    *Lifecycle
	jurisdiction string
}

func parseParams(in map[string]string) params {
	var p params
	p.region = in[ParamRegion]
	p.jurisdiction = in[ParamJurisdiction]
	if v, ok := in[ParamVersioning]; ok {
		b := v == "true"
		p.versioning = &b
	}
	if v, ok := in[ParamLifecycle]; ok {
		if l, err := parseLifecycle(v); err == nil {
			p.lifecycle = &l
		}
	}
	return p
}

func validateParams(fp *field.Path, cfg *Config, old, new map[string]string) (warnings []string, errs field.ErrorList) {
	keys := make([]string, 0, len(new))
	for k := range new {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	impl := ""
	if cfg != nil {
		impl = cfg.Implementation
	}
	for _, k := range keys {
		v := new[k]
		kp := fp.Key(k)
		if allowed, gated := capabilityGated[k]; gated && !contains(allowed, impl) {
			if ov, had := old[k]; !had || ov != v {
				errs = append(errs, field.Forbidden(kp, gateMessage(k, allowed, impl)))
				continue
			}
			// Ratcheting, as Kubernetes does for CRD validation: a value
			// admitted before the parameter was gated does not block other
			// edits, but it is said that it cannot be applied.
			warnings = append(warnings, fmt.Sprintf("%s: kept because it is unchanged, but %s", kp, gateMessage(k, allowed, impl)))
		}
		switch k {
		case ParamRegion:
			if !validRegion(v) {
				errs = append(errs, field.Invalid(kp, v, "a region is lowercase letters, digits and '-', as eu-north-1"))
			}
		case ParamVersioning:
			if v != "true" && v != "false" {
				errs = append(errs, field.NotSupported(kp, v, []string{"true", "false"}))
			}
			if v == "false" && old != nil && old[k] == "true" {
				warnings = append(warnings, fmt.Sprintf("%s: S3 cannot turn versioning off; it is suspended, and existing versions stay", kp))
			}
		case ParamLifecycle:
			if _, err := parseLifecycle(v); err != nil {
				errs = append(errs, field.Invalid(kp, v, err.Error()))
			}
		case ParamJurisdiction:
			if !contains(jurisdictions, v) {
				errs = append(errs, field.NotSupported(kp, v, jurisdictions))
			}
		default:
			errs = append(errs, field.NotSupported(kp, k, knownKeys))
		}
	}
	if old != nil {
		for _, k := range immutable {
			if ov, nv := old[k], new[k]; ov != nv {
				errs = append(errs, field.Forbidden(fp.Key(k), fmt.Sprintf("is immutable after creation (was %s, now %s): a bucket's %s is fixed when it is created", orUnset(ov), orUnset(nv), k)))
			}
		}
	}
	return warnings, errs
}

func orUnset(s string) string {
	if s == "" {
		return "unset"
	}
	return s
}
