package backendview

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/internal/metrics"
)

func TestReadyCondition(t *testing.T) {
	unreachable := &drivers.UnavailableError{Backend: "s3", Err: errors.New("dial tcp 127.0.0.1:9: connect: connection refused")}
	denied := &drivers.AccessDeniedError{Backend: "s3", Err: errors.New("InvalidAccessKeyId")}
	for _, tc := range []struct {
		name   string
		f      Facts
		status metav1.ConditionStatus
		reason string
		msg    string
	}{
		{"no probe in the driver", Facts{Driver: "x"}, metav1.ConditionUnknown, v1.ReasonNotProbed, "driver x has no probe"},
		{"not probed yet", Facts{HasProber: true}, metav1.ConditionUnknown, v1.ReasonNotProbed, "not probed"},
		{"answered", Facts{HasProber: true, Probed: true}, metav1.ConditionTrue, v1.ReasonReachable, "answered"},
		{"unreachable", Facts{HasProber: true, Probed: true, ProbeErr: unreachable}, metav1.ConditionFalse, v1.ReasonEndpointUnreachable, "connection refused"},
		{"wrapped unreachable", Facts{HasProber: true, Probed: true, ProbeErr: errors.Join(errors.New("probe"), unreachable)}, metav1.ConditionFalse, v1.ReasonEndpointUnreachable, "connection refused"},
		{"credentials refused", Facts{HasProber: true, Probed: true, ProbeErr: denied}, metav1.ConditionFalse, v1.ReasonCredentialsInvalid, "InvalidAccessKeyId"},
		{"other error", Facts{HasProber: true, Probed: true, ProbeErr: errors.New("InternalError")}, metav1.ConditionFalse, v1.ReasonProbeFailed, "InternalError"},
		{"keys per access required, unavailable", Facts{HasProber: true, Probed: true, IssuingKnown: true, Issuing: &drivers.Issuing{Required: true, Reason: "the admin API answers 501"}},
			metav1.ConditionFalse, v1.ReasonKeysPerAccessUnavailable, "the admin API answers 501"},
		{"keys per access not asked for", Facts{HasProber: true, Probed: true, IssuingKnown: true, Issuing: &drivers.Issuing{Reason: "no credentials in the config"}}, metav1.ConditionTrue, v1.ReasonReachable, "answered"},
		{"keys per access cannot be asked", Facts{HasProber: true, Probed: true, IssuingErr: &drivers.UnavailableError{Backend: "s3", Err: errors.New("iam: dial tcp 10.0.0.7:8111: connect: connection refused")}},
			metav1.ConditionFalse, v1.ReasonKeysPerAccessUnavailable, "could not be asked"},
		{"unreachable wins over scoping", Facts{HasProber: true, Probed: true, ProbeErr: unreachable, IssuingKnown: true, Issuing: &drivers.Issuing{Required: true}}, metav1.ConditionFalse, v1.ReasonEndpointUnreachable, "refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := readyCondition(tc.f)
			if c.Type != v1.ConditionReady || c.Status != tc.status || c.Reason != tc.reason {
				t.Errorf("want Ready %s %s, got %s %s %s", tc.status, tc.reason, c.Type, c.Status, c.Reason)
			}
			if !strings.Contains(c.Message, tc.msg) {
				t.Errorf("want a message with %q, got %q", tc.msg, c.Message)
			}
		})
	}
}

// TestReadyMessageNamesNoAddress: every authenticated user reads the
// view, which holds no endpoint: a probe's error loses its URLs, hosts and
// addresses (the controller's log keeps them).
func TestReadyMessageNamesNoAddress(t *testing.T) {
	for _, msg := range []string{
		`Get "https://minio.storage.svc.cluster.local:9000/?location=": dial tcp 10.96.12.7:9000: connect: connection refused`,
		`dial tcp [fd00::12]:9092: i/o timeout`,
		`unable to dial broker-0.kafka.svc:9093: EOF`,
		`operation error S3: ListBuckets, https response error StatusCode: 403, RequestID: X, api error SignatureDoesNotMatch: https://acct1234.r2.cloudflarestorage.com`,
	} {
		c := readyCondition(Facts{HasProber: true, Probed: true, ProbeErr: &drivers.UnavailableError{Backend: "s3", Err: errors.New(msg)}})
		t.Logf("%s", c.Message)
		for _, leak := range []string{"minio.storage", "10.96.12.7", "fd00::12", "broker-0.kafka", ":9000", ":9093", "acct1234"} {
			if strings.Contains(c.Message, leak) {
				t.Errorf("want no address in the view's message, got %q (from %q)", c.Message, msg)
			}
		}
		if c.Reason != v1.ReasonEndpointUnreachable {
			t.Errorf("want reason %s, got %s", v1.ReasonEndpointUnreachable, c.Reason)
		}
	}
}

// registryWarning is what kadm warns of on a registry that is not
// compacted (drivers/kadm unsoundMessage).
var registryWarning = drivers.Warning{Reason: "RegistryNotCompacted",
	Message: "owner registry __buckety-owners has cleanup.policy=delete (retention.ms=604800000): the brokers may delete its ownership records by age or size. " +
		"Make it compacted with kafka-configs --alter --entity-type topics --entity-name __buckety-owners --add-config cleanup.policy=compact"}

// TestDegradedCondition: a probe that passed and warned is Degraded True
// with the warning's reason and message, and leaves Ready True (the
// backend serves); one that passed without a warning is Degraded False;
// before a probe, Unknown; after a probe that failed, not known (Desired
// keeps the last).
func TestDegradedCondition(t *testing.T) {
	other := drivers.Warning{Reason: "Other", Message: "something else at 10.0.0.7:9092"}
	for _, tc := range []struct {
		name   string
		f      Facts
		known  bool
		status metav1.ConditionStatus
		reason string
		msg    []string
	}{
		{"no probe in the driver", Facts{Driver: "x"}, true, metav1.ConditionUnknown, v1.ReasonNotProbed, []string{"driver x has no probe"}},
		{"not probed yet", Facts{HasProber: true}, true, metav1.ConditionUnknown, v1.ReasonNotProbed, []string{"not probed"}},
		{"passed without a warning", Facts{HasProber: true, Probed: true}, true, metav1.ConditionFalse, v1.ReasonAsExpected, []string{"warned of nothing"}},
		{"passed with a warning", Facts{HasProber: true, Probed: true, Warnings: []drivers.Warning{registryWarning}}, true, metav1.ConditionTrue, "RegistryNotCompacted",
			[]string{"owner registry __buckety-owners has cleanup.policy=delete", "kafka-configs --alter --entity-type topics --entity-name __buckety-owners --add-config cleanup.policy=compact"}},
		{"two warnings", Facts{HasProber: true, Probed: true, Warnings: []drivers.Warning{registryWarning, other}}, true, metav1.ConditionTrue, "RegistryNotCompacted",
			[]string{"cleanup.policy=delete", "; also: something else at <address>"}},
		{"probe failed", Facts{HasProber: true, Probed: true, ProbeErr: errors.New("refused")}, false, metav1.ConditionUnknown, v1.ReasonNotDetermined, []string{"the probe failed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, known := degradedCondition(tc.f)
			if known != tc.known || c.Type != v1.ConditionDegraded || c.Status != tc.status || c.Reason != tc.reason {
				t.Errorf("want Degraded %s %s (known %v), got %s %s %s (known %v)", tc.status, tc.reason, tc.known, c.Type, c.Status, c.Reason, known)
			}
			for _, m := range tc.msg {
				if !strings.Contains(c.Message, m) {
					t.Errorf("want a message with %q, got %q", m, c.Message)
				}
			}
			if r := readyCondition(tc.f); len(tc.f.Warnings) > 0 && (r.Status != metav1.ConditionTrue || r.Reason != v1.ReasonReachable) {
				t.Errorf("want a backend that warns Ready True %s, got %s %s", v1.ReasonReachable, r.Status, r.Reason)
			}
		})
	}
}

// TestDesiredDegraded: a probe's warning turns Degraded True beside Ready
// True; a probe that fails turns Ready False and keeps Degraded as it was
// (the warning is not known to be fixed); the first probe that passes
// without a warning turns it False.
func TestDesiredDegraded(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	f := Facts{Backend: backend(), HasProber: true, Probed: true, Probe: 1, ProbeTime: t0, IssuingKnown: true, Warnings: []drivers.Warning{registryWarning}}
	conds := func(s v1.BucketyBackendStatus) (ready, degraded *metav1.Condition) {
		return meta.FindStatusCondition(s.Conditions, v1.ConditionReady), meta.FindStatusCondition(s.Conditions, v1.ConditionDegraded)
	}
	warned := Desired(f, nil)
	r, d := conds(warned)
	if r == nil || r.Status != metav1.ConditionTrue || d == nil || d.Status != metav1.ConditionTrue || d.Reason != "RegistryNotCompacted" || !d.LastTransitionTime.Time.Equal(t0) {
		t.Fatalf("want Ready True and Degraded True RegistryNotCompacted since %s, got %+v", t0, warned.Conditions)
	}
	if warned.KeysPerAccess == nil {
		t.Error("want keysPerAccess from the Issuing read of a backend that warns")
	}
	g := f
	g.Probe, g.ProbeTime, g.ProbeErr, g.Warnings, g.IssuingKnown = 2, t0.Add(time.Minute), &drivers.UnavailableError{Err: errors.New("timeout")}, nil, false
	down := Desired(g, &warned)
	r, d = conds(down)
	if r == nil || r.Status != metav1.ConditionFalse || d == nil || d.Status != metav1.ConditionTrue || d.Reason != "RegistryNotCompacted" || !d.LastTransitionTime.Time.Equal(t0) {
		t.Errorf("want Ready False and Degraded True kept since %s while the probe fails, got %+v", t0, down.Conditions)
	}
	if !NeedsWrite(&warned, down, time.Minute) {
		t.Error("want the object written when Ready turns False")
	}
	g = f
	g.Probe, g.ProbeTime, g.Warnings = 3, t0.Add(2*time.Minute), nil
	fixed := Desired(g, &down)
	r, d = conds(fixed)
	if r == nil || r.Status != metav1.ConditionTrue || d == nil || d.Status != metav1.ConditionFalse || d.Reason != v1.ReasonAsExpected || !d.LastTransitionTime.Time.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("want Ready True and Degraded False since the probe that warned of nothing, got %+v", fixed.Conditions)
	}
	if !NeedsWrite(&down, fixed, time.Minute) {
		t.Error("want the object written when Degraded turns False")
	}
	first := Desired(g, nil)
	if _, d := conds(Desired(Facts{Backend: backend(), HasProber: true, Probed: true, ProbeErr: errors.New("refused")}, nil)); d == nil || d.Status != metav1.ConditionUnknown || d.Reason != v1.ReasonNotDetermined {
		t.Errorf("want Degraded Unknown %s on a new object whose probe failed, got %+v", v1.ReasonNotDetermined, d)
	}
	if _, d := conds(first); d == nil || d.Status != metav1.ConditionFalse {
		t.Errorf("want Degraded False on a new object whose probe passed without a warning, got %+v", d)
	}
}

func TestReadyMessageBounded(t *testing.T) {
	c := readyCondition(Facts{HasProber: true, Probed: true, ProbeErr: errors.New(strings.Repeat("x", 5000))})
	if len(c.Message) != maxMessage {
		t.Errorf("want a message of %d bytes, got %d", maxMessage, len(c.Message))
	}
}

func backend() *config.Backend {
	return &config.Backend{Name: "minio", Driver: "s3", Service: "blobs",
		Adoption: &config.Adoption{Allow: true},
		Limits: &config.Limits{PerNamespace: 3, AccessesPerNamespace: 7, Partitions: 12,
			DiskBytes: drivers.ByteSize{Bytes: 1 << 30}, QuotaBytes: drivers.ByteSize{Bytes: 2 << 30},
			ParameterMax: map[string]int64{"partitions": 8}, ParameterMin: map[string]int64{"partitions": 2},
			DeniedParameters: []string{"config.flush.*"}, Namespaces: []config.NamespaceLimits{{Names: []string{"gold"}}}},
		Parameters: map[string]string{"quota": "1Gi"}}
}

func TestDesiredCopiesTheConfig(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	f := Facts{Backend: backend(), Driver: "s3", DriverVersion: "1.2.3", Implementation: "minio", HasProber: true, Probed: true, Probe: 5,
		ProbeTime: now, IssuingKnown: true, Issuing: &drivers.Issuing{PerAccess: true, Required: true}, Bucketies: 4, Accesses: 9, Interval: 30 * time.Second}
	s := Desired(f, nil)
	if s.Driver != "s3" || s.DriverVersion != "1.2.3" || s.Implementation != "minio" || s.Service != "blobs" {
		t.Errorf("want s3 1.2.3 minio blobs, got %s %s %s %s", s.Driver, s.DriverVersion, s.Implementation, s.Service)
	}
	if s.KeysPerAccess == nil || !*s.KeysPerAccess || !s.KeysPerAccessRequired {
		t.Errorf("want keys per access, required, got %v %v", s.KeysPerAccess, s.KeysPerAccessRequired)
	}
	if !s.AdoptionAllowed {
		t.Error("want adoptionAllowed")
	}
	l := s.Limits
	if l == nil || l.PerNamespace != 3 || l.AccessesPerNamespace != 7 || l.Partitions != 12 || l.DiskBytes != 1<<30 || l.QuotaBytes != 2<<30 || l.ParameterMax["partitions"] != 8 {
		t.Errorf("want the config's limits, got %+v", l)
	}
	if l == nil || l.ParameterMin["partitions"] != 2 || len(l.DeniedParameters) != 1 || l.NamespaceOverrides != 1 || s.ParameterDefaults["quota"] != "1Gi" {
		t.Errorf("want the floors, the deny list, the number of namespace overrides and the defaults, got %+v and %v", l, s.ParameterDefaults)
	}
	if s.Bucketies != 4 || s.Accesses != 9 {
		t.Errorf("want 4 Bucketies and 9 accesses, got %d and %d", s.Bucketies, s.Accesses)
	}
	if s.LastProbeTime == nil || !s.LastProbeTime.Time.Equal(now) || s.ProbeInterval != "30s" || s.Probes != 5 {
		t.Errorf("want probe 5 at %s, every 30s, got probe %d at %v every %s", now, s.Probes, s.LastProbeTime, s.ProbeInterval)
	}
	if c := meta.FindStatusCondition(s.Conditions, v1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue || !c.LastTransitionTime.Time.Equal(now) {
		t.Errorf("want Ready True since %s, got %+v", now, s.Conditions)
	}
	if c := meta.FindStatusCondition(s.Conditions, v1.ConditionDegraded); len(s.Conditions) != 2 || c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1.ReasonAsExpected {
		t.Errorf("want Ready and Degraded False %s, got %+v", v1.ReasonAsExpected, s.Conditions)
	}
}

func TestDesiredDefaults(t *testing.T) {
	s := Desired(Facts{Backend: &config.Backend{Name: "kafka", Limits: &config.Limits{}}, HasProber: true, Probed: true, IssuingKnown: true, ProbeTime: time.Now()}, nil)
	if s.Service != "kafka" {
		t.Errorf("want the service to default to the backend's name, got %q", s.Service)
	}
	if s.Limits != nil {
		t.Errorf("want no limits from an empty limits block, got %+v", s.Limits)
	}
	if s.KeysPerAccess == nil || *s.KeysPerAccess {
		t.Errorf("want keysPerAccess false on a driver without scoping, got %v", s.KeysPerAccess)
	}
}

// TestDesiredKeepsWhatItCannotTell: a backend that cannot be asked keeps
// its last known keysPerAccess and lastProbeTime; a condition whose status
// holds keeps its transition time.
func TestDesiredKeepsWhatItCannotTell(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	f := Facts{Backend: backend(), HasProber: true, Probed: true, Probe: 1, ProbeTime: t0, IssuingKnown: true, Issuing: &drivers.Issuing{PerAccess: true}}
	first := Desired(f, nil)
	f.ProbeTime, f.IssuingKnown, f.Issuing = t0.Add(time.Minute), false, nil
	second := Desired(f, &first)
	if second.KeysPerAccess == nil || !*second.KeysPerAccess {
		t.Errorf("want keysPerAccess kept while the backend cannot be asked, got %v", second.KeysPerAccess)
	}
	if !second.Conditions[0].LastTransitionTime.Time.Equal(t0) {
		t.Errorf("want Ready's transition time kept at %s, got %s", t0, second.Conditions[0].LastTransitionTime)
	}
	f.Probe, f.ProbeTime, f.ProbeErr = 3, t0.Add(2*time.Minute), &drivers.UnavailableError{Backend: "minio", Err: errors.New("timeout")}
	third := Desired(f, &second)
	if c := third.Conditions[0]; c.Status != metav1.ConditionFalse || !c.LastTransitionTime.Time.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("want Ready False since the failed probe, got %+v", c)
	}
	notProbed := Desired(Facts{Backend: backend(), HasProber: true}, &third)
	if notProbed.LastProbeTime == nil || !notProbed.LastProbeTime.Time.Equal(third.LastProbeTime.Time) || notProbed.Probes != 3 {
		t.Errorf("want the last probe, 3, and its time kept when no probe ran, got probe %d at %v", notProbed.Probes, notProbed.LastProbeTime)
	}
}

func TestNeedsWrite(t *testing.T) {
	const interval = 30 * time.Second
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	f := Facts{Backend: backend(), HasProber: true, Probed: true, Probe: 1, ProbeTime: t0, IssuingKnown: true, Bucketies: 1, Interval: interval}
	cur := Desired(f, nil)
	// at is the status of the probe d after the first.
	at := func(d time.Duration, mod func(*Facts)) v1.BucketyBackendStatus {
		g := f
		g.ProbeTime, g.Probe = t0.Add(d), 1+int64(d/interval)
		if mod != nil {
			mod(&g)
		}
		return Desired(g, &cur)
	}
	for _, tc := range []struct {
		name string
		want v1.BucketyBackendStatus
		cur  *v1.BucketyBackendStatus
		need bool
	}{
		{"no object", cur, nil, true},
		{"same probe", cur, &cur, false},
		{"next probe, nothing changed", at(interval, nil), &cur, false},
		{"heartbeat not due", at(time.Duration(HeartbeatProbes-1)*interval, nil), &cur, false},
		{"heartbeat due", at(time.Duration(HeartbeatProbes)*interval, nil), &cur, true},
		{"a count changed", at(interval, func(g *Facts) { g.Bucketies = 2 }), &cur, true},
		{"unreachable", at(interval, func(g *Facts) { g.ProbeErr = &drivers.UnavailableError{Err: errors.New("refused")} }), &cur, true},
		{"a limit changed", at(interval, func(g *Facts) { b := *g.Backend; b.Limits = nil; g.Backend = &b }), &cur, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NeedsWrite(tc.cur, tc.want, interval); got != tc.need {
				t.Errorf("want NeedsWrite %v, got %v", tc.need, got)
			}
		})
	}
}

func TestCount(t *testing.T) {
	bs := []v1.Buckety{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "x"}, Spec: v1.BucketySpec{Backend: "kafka"}, Status: v1.BucketyStatus{Backend: "kafka"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "y"}, Spec: v1.BucketySpec{Backend: "minio"}},
		// spec.backend changed after the first reconcile: status.backend is sticky.
		{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "x"}, Spec: v1.BucketySpec{Backend: "minio"}, Status: v1.BucketyStatus{Backend: "kafka"}},
	}
	as := []v1.BucketyAccess{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "r"}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "x"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "r"}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "x"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "w"}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "y"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "c", Name: "orphan"}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "x"}}},
	}
	b, a := Count(bs, as)
	if b["kafka"] != 2 || b["minio"] != 1 {
		t.Errorf("want Bucketies kafka 2, minio 1, got %v", b)
	}
	if a["kafka"] != 2 || a["minio"] != 1 {
		t.Errorf("want accesses kafka 2, minio 1 (none for an access whose Buckety is missing), got %v", a)
	}
}

func TestBudgets(t *testing.T) {
	for _, tc := range []struct {
		name string
		l    *v1.BackendLimits
		want string
	}{
		{"no limits", nil, "none"},
		{"parameter bounds only", &v1.BackendLimits{ParameterMax: map[string]int64{"partitions": 8}, DeniedParameters: []string{"config.flush.*"}}, "none"},
		{"partitions and disk", &v1.BackendLimits{Partitions: 6, DiskBytes: 6 << 20}, "per namespace: 6 partitions, 6Mi disk"},
		{"every budget", &v1.BackendLimits{PerNamespace: 3, AccessesPerNamespace: 1, AccessesPerBuckety: 4, Partitions: 1, DiskBytes: 1 << 30, QuotaBytes: 2 << 30},
			"per namespace: 3 Bucketies, 1 access, 1 partition, 1Gi disk, 2Gi bucket quota; 4 accesses per Buckety"},
		{"one Buckety, one access per Buckety", &v1.BackendLimits{PerNamespace: 1, AccessesPerBuckety: 1}, "per namespace: 1 Buckety; 1 access per Buckety"},
		{"with namespace overrides", &v1.BackendLimits{QuotaBytes: 10 << 30, NamespaceOverrides: 3}, "per namespace: 10Gi bucket quota; 3 namespace overrides"},
		{"one namespace override", &v1.BackendLimits{AccessesPerBuckety: 2, NamespaceOverrides: 1}, "2 accesses per Buckety; 1 namespace override"},
		{"namespace overrides only", &v1.BackendLimits{NamespaceOverrides: 2}, "none by default; 2 namespace overrides"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Budgets(tc.l); got != tc.want {
				t.Errorf("want %q, got %q", tc.want, got)
			}
		})
	}
}

// TestDesiredBudgets: status.budgets sums up the status.limits written
// beside it, for the config's limits and for none.
func TestDesiredBudgets(t *testing.T) {
	s := Desired(Facts{Backend: backend(), HasProber: true, Probed: true, ProbeTime: time.Now()}, nil)
	if want := "per namespace: 3 Bucketies, 7 accesses, 12 partitions, 1Gi disk, 2Gi bucket quota; 1 namespace override"; s.Budgets != want {
		t.Errorf("want budgets %q, got %q", want, s.Budgets)
	}
	s = Desired(Facts{Backend: &config.Backend{Name: "kafka"}, HasProber: true, Probed: true, ProbeTime: time.Now()}, nil)
	if s.Budgets != "none" {
		t.Errorf("want budgets %q without limits, got %q", "none", s.Budgets)
	}
}

// TestDegradedGaugeHasEveryReason: a probe that warns of two settings
// (the owner registry not compacted, brokers open to every user) sets
// Degraded to the first reason, and buckety_backend_degraded had only
// that series, so an alert grouped by reason never named the second. Each
// reason has its series now; a probe that warns of nothing leaves one
// series at 0.
func TestDegradedGaugeHasEveryReason(t *testing.T) {
	f := Facts{Backend: &config.Backend{Name: "kafka-two-warnings"}, Driver: "kadm", HasProber: true, Probed: true, ProbeTime: time.Now(),
		Warnings: []drivers.Warning{{Reason: "RegistryNotCompacted", Message: "a"}, {Reason: "BrokersAllowWithoutACLs", Message: "b"}}}
	observe(f)
	if got := degradedSeries(t, f.Backend.Name); len(got) != 2 || got["RegistryNotCompacted"] != 1 || got["BrokersAllowWithoutACLs"] != 1 {
		t.Errorf("want buckety_backend_degraded 1 for each reason warned of, got %v", got)
	}
	f.Warnings = nil
	observe(f)
	if got := degradedSeries(t, f.Backend.Name); len(got) != 1 || got[v1.ReasonAsExpected] != 0 {
		t.Errorf("after a probe that warned of nothing: want one series, reason AsExpected, 0; got %v", got)
	}
}

// degradedSeries is buckety_backend_degraded's value per reason for
// backend.
func degradedSeries(t *testing.T, backend string) map[string]float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 64)
	go func() { metrics.BackendDegraded.Collect(ch); close(ch) }()
	out := map[string]float64{}
	for pm := range ch {
		m := &dto.Metric{}
		if err := pm.Write(m); err != nil {
			t.Fatal(err)
		}
		l := map[string]string{}
		for _, lp := range m.GetLabel() {
			l[lp.GetName()] = lp.GetValue()
		}
		if l["backend"] == backend {
			out[l["reason"]] = m.GetGauge().GetValue()
		}
	}
	return out
}
