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
	// ParamQuota is the bucket's hard quota, a byte size; capability-gated
	// to the implementations with a bucket quota in their API; reconciled.
	ParamQuota = "quota"
	// ParamSoftQuota is the usage, a byte size, above which the controller
	// warns (QuotaWarning); every implementation. The driver only
	// validates it and reports it in its Footprint.
	ParamSoftQuota = "softQuota"
	// ParamAnonymousRead is "true" or "false": anyone may read the
	// bucket's objects (s3:GetObject, no listing). Capability-gated, and
	// allowed only where the backend's config sets allowAnonymousRead;
	// reconciled.
	ParamAnonymousRead = "anonymousRead"
)

var knownKeys = []string{ParamAnonymousRead, ParamJurisdiction, ParamLifecycle, ParamQuota, ParamRegion, ParamSoftQuota, ParamVersioning}

// jurisdictions R2 accepts.
var jurisdictions = []string{"eu", "fedramp"}

// gatedParams are the capability-gated parameters. A parameter is gated
// when some S3 service the driver claims answers it with NotImplemented:
// refusing it at admission beats a Buckety that is Ready while what it
// asked for never happens. Which implementations honour each is in the
// servers table (servers.go): R2's jurisdictions; bucket lifecycle (which
// VersityGW answers NotImplemented); versioning (R2 has none; VersityGW
// has it when the gateway runs with --versioning-dir, which the driver
// cannot see from its config: without it, versioning stays a runtime
// shortfall; SeaweedFS keeps versioning as S3 does); a hard quota (MinIO's
// admin API, SeaweedFS's S3 extension, quota.go); anonymous reads through a
// bucket policy statement (anonread.go). A backend without implementation:
// allows none of them. Widening a server's list is a minor driver version;
// narrowing one is a major.
var gatedParams = []string{ParamJurisdiction, ParamLifecycle, ParamVersioning, ParamQuota, ParamAnonymousRead}

// capabilityGated maps a gated parameter to the implementations allowing
// it, derived from the servers table; the parameter schema publishes it
// (x-buckety-capabilities).
var capabilityGated = gatedBy()

// capabilityOf names what a gated parameter needs of the service, for
// messages.
var capabilityOf = map[string]string{
	ParamJurisdiction: "R2 data jurisdictions",
	ParamLifecycle:    "bucket lifecycle",
	ParamVersioning:   "bucket versioning",
	ParamQuota:        "a bucket quota",
	// The statement is the mechanism; anonymous reads are what is asked.
	ParamAnonymousRead: "anonymous reads through a bucket policy",
}

// gateHint is what to use instead of a gated parameter, where there is
// something.
var gateHint = map[string]string{
	ParamQuota: "; softQuota, a warning without a limit, is allowed on every implementation",
}

// gateMessage explains why a gated parameter is refused on srv, and what
// to do instead.
func gateMessage(k string, allowed []string, srv *server) string {
	list := strings.Join(allowed, ", ")
	if srv.impl == "" {
		return fmt.Sprintf("%s is only supported for implementation %s, and the backend sets no implementation: remove %s, or ask the platform team to set implementation: (%s) in the backend's config if its service implements %s%s", k, list, k, list, capabilityOf[k], gateHint[k])
	}
	why := ""
	if w := srv.lacks[k]; w != "" {
		why = " (" + w + ")"
	}
	return fmt.Sprintf("%s is only supported for implementation %s, and the backend's implementation is %s, which does not implement %s%s: remove %s, or use a backend whose implementation is %s%s", k, list, srv.impl, capabilityOf[k], why, k, list, gateHint[k])
}

// anonymousReadRefused is why anonymousRead is refused on a backend whose
// config does not allow it.
const anonymousReadRefused = "anonymousRead needs allowAnonymousRead: true in the backend's s3 config (whether a backend may serve buckets to anyone is the platform team's decision): remove anonymousRead, or ask the platform team to allow it"

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
	// quota and softQuota are bytes, 0 when unset.
	quota, softQuota int64
	anonymousRead    *bool
}

func parseParams(in map[string]string) params {
	var p params
	p.region = in[ParamRegion]
	p.jurisdiction = in[ParamJurisdiction]
	p.versioning = parseBool(in, ParamVersioning)
	p.anonymousRead = parseBool(in, ParamAnonymousRead)
	if v, ok := in[ParamLifecycle]; ok {
		if l, err := parseLifecycle(v); err == nil {
			p.lifecycle = &l
		}
	}
	// Admission refuses a size that does not parse: 0 is an unset one.
	if n, err := parseByteSize(in[ParamQuota]); err == nil {
		p.quota = n
	}
	if n, err := parseByteSize(in[ParamSoftQuota]); err == nil {
		p.softQuota = n
	}
	return p
}

// parseBool is a "true"/"false" parameter, nil when unset.
func parseBool(in map[string]string, k string) *bool {
	v, ok := in[k]
	if !ok {
		return nil
	}
	b := v == "true"
	return &b
}

func validateParams(fp *field.Path, cfg *Config, old, new map[string]string) (warnings []string, errs field.ErrorList) {
	keys := make([]string, 0, len(new))
	for k := range new {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		w, e := validateGates(fp.Key(k), cfg, k, new[k], old)
		if len(e) == 0 {
			// A refused parameter's value is not worth judging too.
			w2, e2 := validateValue(fp.Key(k), k, new[k], old)
			w, e = append(w, w2...), e2
		}
		warnings, errs = append(warnings, w...), append(errs, e...)
	}
	errs = append(errs, validateQuotas(fp, new)...)
	if old != nil {
		for _, k := range immutable {
			if ov, nv := old[k], new[k]; ov != nv {
				errs = append(errs, field.Forbidden(fp.Key(k), fmt.Sprintf("is immutable after creation (was %s, now %s): a bucket's %s is fixed when it is created", orUnset(ov), orUnset(nv), k)))
			}
		}
	}
	return warnings, errs
}

// validateGates refuses a parameter the backend cannot honour: a
// capability-gated one on another implementation, anonymousRead where the
// config does not allow it. Gating ratchets, as Kubernetes does for CRD
// validation: a value admitted before it was refused does not block other
// edits when it is unchanged, but it is said that it is not applied.
func validateGates(kp *field.Path, cfg *Config, k, v string, old map[string]string) (warnings []string, errs field.ErrorList) {
	srv := &generic
	if cfg != nil {
		srv = cfg.server()
	}
	why := ""
	if allowed, gated := capabilityGated[k]; gated && !srv.has(k) {
		why = gateMessage(k, allowed, srv)
	} else if k == ParamAnonymousRead && (cfg == nil || !cfg.AllowAnonymousRead) {
		why = anonymousReadRefused
	}
	if why == "" {
		return nil, nil
	}
	if ov, had := old[k]; had && ov == v {
		return []string{fmt.Sprintf("%s: kept because it is unchanged, but %s", kp, why)}, nil
	}
	return nil, field.ErrorList{field.Forbidden(kp, why)}
}

// validateValue checks one parameter's value.
func validateValue(kp *field.Path, k, v string, old map[string]string) (warnings []string, errs field.ErrorList) {
	switch k {
	case ParamRegion:
		if !validRegion(v) {
			errs = append(errs, field.Invalid(kp, v, "a region is lowercase letters, digits and '-', as eu-north-1"))
		}
	case ParamVersioning, ParamAnonymousRead:
		if v != "true" && v != "false" {
			errs = append(errs, field.NotSupported(kp, v, []string{"true", "false"}))
		}
		if k == ParamVersioning && v == "false" && old != nil && old[k] == "true" {
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
	case ParamQuota, ParamSoftQuota:
		if _, err := parseByteSize(v); err != nil {
			errs = append(errs, field.Invalid(kp, v, err.Error()))
		}
	default:
		errs = append(errs, field.NotSupported(kp, k, knownKeys))
	}
	return warnings, errs
}

// validateQuotas refuses a softQuota above the quota: the warning would
// come only after writes are refused.
func validateQuotas(fp *field.Path, in map[string]string) field.ErrorList {
	hard, errH := parseByteSize(in[ParamQuota])
	soft, errS := parseByteSize(in[ParamSoftQuota])
	if errH != nil || errS != nil || hard == 0 || soft <= hard {
		return nil
	}
	return field.ErrorList{field.Invalid(fp.Key(ParamSoftQuota), in[ParamSoftQuota],
		fmt.Sprintf("softQuota (%s, %d bytes) must not exceed quota (%s, %d bytes): the warning would come only after writes are refused", in[ParamSoftQuota], soft, in[ParamQuota], hard))}
}

func orUnset(s string) string {
	if s == "" {
		return "unset"
	}
	return s
}
