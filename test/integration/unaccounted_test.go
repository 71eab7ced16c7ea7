package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	appcontroller "github.com/Yolean/buckety-controller/internal/app/controller"
	"github.com/Yolean/buckety-controller/internal/backends/backendstest"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/internal/metrics"
	"github.com/Yolean/buckety-controller/test/harness"
	"github.com/Yolean/buckety-controller/test/kafka"
	"github.com/Yolean/buckety-controller/test/wait"
)

// observations counts what histogram h has observed.
func observations(t *testing.T, h prometheus.Observer) float64 {
	t.Helper()
	var m dto.Metric
	if err := h.(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return float64(m.GetHistogram().GetSampleCount())
}

// TestUnaccountedPrincipalsRevokedAfterGrace: on a SASL cluster with ACLs,
// with credentials.orphanGrace 2s, a principal whose access and record are
// gone (as after a rebuild: the finalizer stripped, the record deleted by
// hand) and one whose record alone was deleted by hand are revoked by the
// orphan check of the running controller; a live access's principal,
// another installation's and one named before installation markers are
// never touched, however many checks run.
//
// The check needs the kadm driver's ListPrincipals (drivers.PrincipalLister):
// without it this test fails at once, saying so.
func TestUnaccountedPrincipalsRevokedAfterGrace(t *testing.T) {
	needInfra(t)
	const installation, otherInstallation = "inst-a", "inst-b"
	b := kafka.Start(t, kafka.Options{SASL: []string{"SCRAM-SHA-512:buckety:s3cr3t"}, ACLs: true, ReauthMS: 3000})
	be := superuserBackend(b, 0)
	orphanGrace := harness.Duration(2 * time.Second)
	be.Credentials = &config.Credentials{OrphanGrace: &orphanGrace}
	yaml := "installation: " + installation + "\n" + harness.ConfigYAML(be)

	// The test's own connection to the backend, opened as the
	// controller opens its own: to issue principals out of band, as
	// another installation and an earlier release would.
	set := backendstest.Open(t, yaml)
	e, _ := set.Get("kafka")
	if e.Principals == nil {
		t.Fatalf("backend kafka (driver %s) cannot list principals by installation: the driver does not implement drivers.PrincipalLister, so the controller has nothing to find unaccounted principals with", e.Config.Driver)
	}
	if e.Issuer == nil {
		t.Fatal("backend kafka (kadm) issues no per-access credentials")
	}

	startControllerWith(t, yaml, nil, func(o *appcontroller.Options) { o.Recheck, o.OwnerCheck = time.Hour, 200*time.Millisecond })
	ns := namespace(t)
	removeWhileRunning(t, ns)
	topic := ns + ".orders"
	bk := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: topic}}
	create(t, bk)
	mk := func(name string) *v1.BucketyAccess {
		a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1.BucketyAccessSpec{
			BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: name}}
		create(t, a)
		return a
	}
	live, rebuilt, dropped := mk("live"), mk("rebuilt"), mk("dropped")
	for _, a := range []*v1.BucketyAccess{live, rebuilt, dropped} {
		waitCondition(t, a, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	}
	liveData, rebuiltData, droppedData := secret(t, ns, "live").Data, secret(t, ns, "rebuilt").Data, secret(t, ns, "dropped").Data
	for name, d := range map[string]map[string][]byte{"live": liveData, "rebuilt": rebuiltData, "dropped": droppedData} {
		if err := produceWith(t, d, topic); err != nil {
			t.Fatalf("%s: want its Secret to produce before anything is deleted, got %v", name, err)
		}
	}

	// Issued out of band on the same cluster: by another installation,
	// and as by a release before installation markers (no marker).
	grant := func(name, inst string) (string, map[string][]byte) {
		t.Helper()
		a := drivers.Access{Resource: topic, Namespace: ns, Name: name, UID: "uid-" + name + "-" + inst, Installation: inst, Role: drivers.RoleReadWrite,
			Secret: "pw-" + name, Assert: drivers.IssueNew}
		a.Principal = e.Issuer.Principal(a, 1)
		g, err := e.Backend.Grant(context.Background(), a)
		if err != nil {
			t.Fatalf("grant %s as installation %q: %v", name, inst, err)
		}
		return a.Principal, g.Data
	}
	foreignUser, foreignData := grant("foreign", otherInstallation)
	legacyUser, legacyData := grant("legacy", "")
	ours, err := e.Principals.ListPrincipals(context.Background(), installation)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{string(liveData["sasl.username"]), string(rebuiltData["sasl.username"]), string(droppedData["sasl.username"])} {
		if !slices.Contains(ours, p) {
			t.Errorf("want %s, issued by installation %s, in its listing, got %v", p, installation, ours)
		}
	}
	if slices.Contains(ours, foreignUser) || slices.Contains(ours, legacyUser) {
		t.Errorf("want neither %s (installation %s) nor %s (no marker) in installation %s's listing, got %v", foreignUser, otherInstallation, legacyUser, installation, ours)
	}

	revoked := func() float64 {
		return counterValue(t, metrics.CredentialsRevoked.WithLabelValues("kafka", metrics.RevokedUnaccounted))
	}
	before := revoked()
	ctx := context.Background()
	deleteRecords := func(a *v1.BucketyAccess) {
		t.Helper()
		creds := credentialsOf(t, a.UID)
		if len(creds) != 1 {
			t.Fatalf("%s: want one record, got %d", a.Name, len(creds))
		}
		if err := k8s.Delete(ctx, &creds[0]); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
	// A rebuild, as far as this cluster can tell: the access gone
	// without its deletion pass (finalizer stripped), its record gone.
	stripped := &v1.BucketyAccess{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(rebuilt), stripped); err != nil {
		t.Fatal(err)
	}
	// A patch without the resource version: the controller may be
	// writing the access's status meanwhile.
	if err := k8s.Patch(ctx, stripped, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); err != nil {
		t.Fatal(err)
	}
	deleteRecords(rebuilt)
	if err := k8s.Delete(ctx, stripped); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "access rebuilt gone", func() (bool, string) { return gone(t, rebuilt) })
	// A record deleted by hand, its access live.
	deleteRecords(dropped)

	rebuiltUser := string(rebuiltData["sasl.username"])
	adm := superAdmin(t, b)
	wait.For(t, waitTimeout, "the principal of the rebuilt access revoked", func() (bool, string) {
		users, err := adm.DescribeUserSCRAMs(ctx, rebuiltUser)
		if err != nil && !errors.Is(err, kerr.ResourceNotFound) {
			return false, err.Error()
		}
		d, ok := users[rebuiltUser]
		return !ok || d.Err != nil || len(d.CredInfos) == 0, fmt.Sprintf("user %s still has %v", rebuiltUser, d.CredInfos)
	})
	wait.For(t, waitTimeout, "the dropped record's principal refused its password", func() (bool, string) {
		err := produceWith(t, droppedData, topic, kgo.DisableIdempotentWrite())
		return err != nil && !errors.Is(err, kerr.TopicAuthorizationFailed), fmt.Sprint(err)
	})
	if got := revoked() - before; got < 2 {
		t.Errorf("want buckety_credentials_revoked_total{backend=kafka,reason=unaccounted} up by 2 or more, got %v", got)
	}

	// Two more complete listings after those revocations: whatever the
	// check would do to the others, it has done.
	listings := func() float64 {
		return observations(t, metrics.BackendRequestDuration.WithLabelValues("kafka", e.Config.Driver, "list_principals"))
	}
	seen := listings()
	wait.For(t, waitTimeout, "two more listings of kafka's principals", func() (bool, string) {
		n := listings()
		return n >= seen+2, fmt.Sprintf("%v listings, want %v", n, seen+2)
	})
	if err := produceWith(t, liveData, topic); err != nil {
		t.Errorf("live access: want its principal kept, got %v", err)
	}
	if err := produceWith(t, foreignData, topic); err != nil {
		t.Errorf("installation %s's principal %s: want it never touched, got %v", otherInstallation, foreignUser, err)
	}
	if err := produceWith(t, legacyData, topic); err != nil {
		t.Errorf("principal %s named before markers: want it never touched, got %v", legacyUser, err)
	}
}
