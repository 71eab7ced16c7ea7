package backendview

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/config"
)

// HeartbeatProbes is how many probe rounds may pass without a write to an
// object whose status did not change: lastProbeTime is then refreshed, so
// a reader can tell a view that is current from one a stopped controller
// left behind.
const HeartbeatProbes = 10

// maxMessage bounds a condition message (the API allows 32 KiB; a driver
// error that long says nothing more).
const maxMessage = 1024

// Facts are what one round found about one backend.
type Facts struct {
	// Backend is the backend's config entry.
	Backend *config.Backend
	// Driver is its driver's name and version.
	Driver, DriverVersion string
	// Implementation is the software behind it ("" when unknown).
	Implementation string
	// HasProber is false when the driver has no probe.
	HasProber bool
	// Probed is true when a probe ran; ProbeErr is its error; Probe is its
	// number, counted per backend since the leader started.
	Probed   bool
	ProbeErr error
	Probe    int64
	// Warnings are what a probe that passed warned of (drivers.Warner):
	// the backend serves, and its operator should fix them.
	Warnings []drivers.Warning
	// ProbeTime is when the probe ran.
	ProbeTime time.Time
	// Issuing is the backend's answer about keys per access: nil when the
	// driver has no notion of it (every access gets the backend's
	// credentials) or when it could not be asked (ScopingKnown false).
	Issuing      *drivers.Issuing
	IssuingKnown bool
	// IssuingErr is the error of asking it, when the probe answered but
	// the service that issues credentials per access did not (an IAM
	// endpoint down, an admin API refusing the controller's keys).
	IssuingErr error
	// Bucketies and Accesses count the objects on the backend.
	Bucketies, Accesses int64
	// Interval is the probe interval.
	Interval time.Duration
}

// readyCondition derives the Ready condition from the facts: Unknown before
// a probe (or without one), False with the probe's reason when it failed
// or when keys per access are required and unavailable, True otherwise.
func readyCondition(f Facts) metav1.Condition {
	c := metav1.Condition{Type: v1.ConditionReady}
	switch {
	case !f.HasProber:
		c.Status, c.Reason = metav1.ConditionUnknown, v1.ReasonNotProbed
		c.Message = fmt.Sprintf("driver %s has no probe: whether the backend answers shows only on its Bucketies", f.Driver)
	case !f.Probed:
		c.Status, c.Reason = metav1.ConditionUnknown, v1.ReasonNotProbed
		c.Message = "not probed since the controller started"
	case f.ProbeErr != nil:
		c.Status = metav1.ConditionFalse
		switch {
		case drivers.IsUnavailable(f.ProbeErr):
			c.Reason = v1.ReasonEndpointUnreachable
		case drivers.IsAccessDenied(f.ProbeErr):
			c.Reason = v1.ReasonCredentialsInvalid
		default:
			c.Reason = v1.ReasonProbeFailed
		}
		c.Message = truncate(redact(f.ProbeErr.Error()))
	case f.IssuingErr != nil:
		// The data endpoint answers, but every access waiting for a key
		// of its own waits on this: not Reachable, which would keep
		// BucketyBackendDown quiet while no access gets a key.
		c.Status, c.Reason = metav1.ConditionFalse, v1.ReasonKeysPerAccessUnavailable
		c.Message = truncate("the backend answered the probe, but its service for credentials per access could not be asked, so accesses that need a credential of their own wait: " + redact(f.IssuingErr.Error()))
	case f.IssuingKnown && f.Issuing != nil && f.Issuing.Required && !f.Issuing.PerAccess:
		c.Status, c.Reason = metav1.ConditionFalse, v1.ReasonKeysPerAccessUnavailable
		c.Message = truncate("the config asks for a credential per access, which the backend cannot issue now, so accesses wait: " + f.Issuing.Reason)
	default:
		c.Status, c.Reason = metav1.ConditionTrue, v1.ReasonReachable
		c.Message = "the backend answered the controller's probe with the controller's credentials"
	}
	return c
}

// degradedCondition derives the Degraded condition from the facts: True
// with the first warning's reason and every warning's message when the
// probe passed and warned, False when it passed without a warning, Unknown
// before a probe (or without one). known is false when the probe failed:
// the warnings of a backend that does not answer are not known, and the
// condition keeps what the last probe that passed found (Desired), as
// Ready says the backend is down.
func degradedCondition(f Facts) (c metav1.Condition, known bool) {
	c = metav1.Condition{Type: v1.ConditionDegraded}
	switch {
	case !f.HasProber:
		c.Status, c.Reason = metav1.ConditionUnknown, v1.ReasonNotProbed
		c.Message = fmt.Sprintf("driver %s has no probe, so nothing warns of a setting that puts the backend's data at risk", f.Driver)
	case !f.Probed:
		c.Status, c.Reason = metav1.ConditionUnknown, v1.ReasonNotProbed
		c.Message = "not probed since the controller started"
	case f.ProbeErr != nil:
		c.Status, c.Reason = metav1.ConditionUnknown, v1.ReasonNotDetermined
		c.Message = "the probe failed (Ready says why), and only a probe that passes tells what to warn of"
		return c, false
	case len(f.Warnings) > 0:
		msgs := make([]string, len(f.Warnings))
		for i, w := range f.Warnings {
			msgs[i] = w.Message
		}
		c.Status, c.Reason = metav1.ConditionTrue, f.Warnings[0].Reason
		c.Message = truncate(redact(strings.Join(msgs, "; also: ")))
	default:
		c.Status, c.Reason = metav1.ConditionFalse, v1.ReasonAsExpected
		c.Message = "the backend's last probe warned of nothing"
	}
	return c, true
}

// Addresses in a driver's error (a URL, a host or IP and port), which the
// view's readers, every authenticated user, are not to learn from it: the
// view holds "never a credential, an endpoint" (v1.BucketyBackend).
var (
	urlPattern  = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"'<>]+`)
	addrPattern = regexp.MustCompile(`\[[0-9a-fA-F:.]+\](:\d+)?|\b[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)*:\d{1,5}\b|\b\d{1,3}(\.\d{1,3}){3}\b`)
)

// redact replaces the addresses in msg, a driver's error, with
// "<endpoint>" and "<address>": the reason says the backend is
// unreachable, the controller's log has the whole error.
func redact(msg string) string {
	return addrPattern.ReplaceAllString(urlPattern.ReplaceAllString(msg, "<endpoint>"), "<address>")
}

func truncate(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	return s[:maxMessage-3] + "..."
}

// Desired is the status the facts call for, given the object's current
// status (nil for none): its conditions keep their lastTransitionTime when
// their status did not change, and keysPerAccess and Degraded keep their
// last known value while the backend cannot be asked.
func Desired(f Facts, cur *v1.BucketyBackendStatus) v1.BucketyBackendStatus {
	b := f.Backend
	s := v1.BucketyBackendStatus{
		Driver:                f.Driver,
		DriverVersion:         f.DriverVersion,
		Implementation:        f.Implementation,
		Service:               b.Name,
		AdoptionAllowed:       b.Adoption != nil && b.Adoption.Allow,
		DrainAllowed:          b.AllowsDrain(),
		Limits:                limits(b.Limits),
		ParameterDefaults:     maps.Clone(b.Parameters),
		ConvergeParameters:    b.ConvergeParameters,
		Bucketies:             f.Bucketies,
		Accesses:              f.Accesses,
		ProbeInterval:         f.Interval.String(),
		KeysPerAccessRequired: f.Issuing != nil && f.Issuing.Required,
	}
	s.Budgets = Budgets(s.Limits)
	if b.Service != "" {
		s.Service = b.Service
	}
	switch {
	case f.IssuingKnown && f.Issuing == nil:
		s.KeysPerAccess = ptr(false)
	case f.IssuingKnown:
		s.KeysPerAccess = ptr(f.Issuing.PerAccess)
	case cur != nil:
		s.KeysPerAccess = cur.KeysPerAccess
		s.KeysPerAccessRequired = cur.KeysPerAccessRequired
	}
	if f.Probed {
		s.LastProbeTime, s.Probes = &metav1.Time{Time: f.ProbeTime}, f.Probe
	} else if cur != nil {
		s.LastProbeTime, s.Probes = cur.LastProbeTime, cur.Probes
	}
	if cur != nil {
		s.Conditions = append([]metav1.Condition(nil), cur.Conditions...)
	}
	at := metav1.Time{Time: f.ProbeTime}
	if at.IsZero() {
		at = metav1.Now()
	}
	c := readyCondition(f)
	c.LastTransitionTime = at
	meta.SetStatusCondition(&s.Conditions, c)
	if d, known := degradedCondition(f); known || meta.FindStatusCondition(s.Conditions, v1.ConditionDegraded) == nil {
		d.LastTransitionTime = at
		meta.SetStatusCondition(&s.Conditions, d)
	}
	return s
}

func limits(l *config.Limits) *v1.BackendLimits {
	if l == nil {
		return nil
	}
	out := &v1.BackendLimits{
		PerNamespace:         int64(l.PerNamespace),
		AccessesPerNamespace: int64(l.AccessesPerNamespace),
		AccessesPerBuckety:   int64(l.AccessesPerBuckety),
		Partitions:           l.Partitions,
		DiskBytes:            l.DiskBytes.Bytes,
		QuotaBytes:           l.QuotaBytes.Bytes,
	}
	if len(l.ParameterMax) > 0 {
		out.ParameterMax = maps.Clone(l.ParameterMax)
	}
	if len(l.ParameterMin) > 0 {
		out.ParameterMin = maps.Clone(l.ParameterMin)
	}
	out.DeniedParameters = slices.Clone(l.DeniedParameters)
	out.NamespaceOverrides = int64(len(l.Namespaces))
	if equality.Semantic.DeepEqual(*out, v1.BackendLimits{}) {
		return nil
	}
	return out
}

// Budgets sums up a backend's limits (status.limits) in the words of
// kubectl get -o wide's BUDGETS column: what one namespace may use, what
// one Buckety may have, and how many namespace overrides change either.
// Parameter bounds and denied parameters are not budgets (nothing sums
// them up): -o yaml has them.
func Budgets(l *v1.BackendLimits) string {
	if l == nil {
		return "none"
	}
	var ns []string
	for _, b := range []struct {
		n         int64
		one, many string
	}{
		{l.PerNamespace, "Buckety", "Bucketies"},
		{l.AccessesPerNamespace, "access", "accesses"},
		{l.Partitions, "partition", "partitions"},
	} {
		if b.n > 0 {
			ns = append(ns, count(b.n, b.one, b.many))
		}
	}
	if l.DiskBytes > 0 {
		ns = append(ns, drivers.FormatBytes(l.DiskBytes)+" disk")
	}
	if l.QuotaBytes > 0 {
		ns = append(ns, drivers.FormatBytes(l.QuotaBytes)+" bucket quota")
	}
	var parts []string
	if len(ns) > 0 {
		parts = append(parts, "per namespace: "+strings.Join(ns, ", "))
	}
	if l.AccessesPerBuckety > 0 {
		parts = append(parts, count(l.AccessesPerBuckety, "access", "accesses")+" per Buckety")
	}
	if l.NamespaceOverrides > 0 {
		if len(parts) == 0 {
			parts = append(parts, "none by default")
		}
		parts = append(parts, count(l.NamespaceOverrides, "namespace override", "namespace overrides"))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// count is n and the noun, singular or plural.
func count(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func ptr[T any](v T) *T { return &v }

// NeedsWrite reports whether want must be written over cur (nil: the
// object does not exist): when anything but lastProbeTime and probes
// differs, or when lastProbeTime is HeartbeatProbes intervals old.
func NeedsWrite(cur *v1.BucketyBackendStatus, want v1.BucketyBackendStatus, interval time.Duration) bool {
	if cur == nil {
		return true
	}
	a, b := *cur.DeepCopy(), *want.DeepCopy()
	a.LastProbeTime, b.LastProbeTime = nil, nil
	a.Probes, b.Probes = 0, 0
	if !equality.Semantic.DeepEqual(a, b) {
		return true
	}
	if want.LastProbeTime == nil {
		return false
	}
	if cur.LastProbeTime == nil {
		return true
	}
	return want.LastProbeTime.Sub(cur.LastProbeTime.Time) >= time.Duration(HeartbeatProbes)*interval
}
