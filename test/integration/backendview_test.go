package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	s3driver "github.com/Yolean/buckety-controller/drivers/s3"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	appcontroller "github.com/Yolean/buckety-controller/internal/app/controller"
	"github.com/Yolean/buckety-controller/internal/metrics"
	"github.com/Yolean/buckety-controller/test/controlplane"
	"github.com/Yolean/buckety-controller/test/harness"
	s3test "github.com/Yolean/buckety-controller/test/s3"
	"github.com/Yolean/buckety-controller/test/wait"
)

// TestBackendView (issue 52 item 2): the leader writes one BucketyBackend
// per configured backend and deletes one whose backend left the config; a
// MinIO that is killed turns its backend Ready False (EndpointUnreachable)
// at the first probe that starts after it stopped, and back to Ready True
// once it serves again; a tenant (bound to edit in its namespace, and
// authenticated: the shipped buckety-backends-view binding) lists and
// reads the backends, may not write them, and finds no credential in them, up or down.
func TestBackendView(t *testing.T) {
	needInfra(t)
	ctx := context.Background()
	const interval = 2 * time.Second
	// A MinIO of this test's own, with the shared one's keys (the
	// controller's environment names those).
	srv := s3test.Start(t, "minio", s3test.Options{AccessKey: minio.AccessKey, SecretKey: minio.SecretKey})
	cfg := harness.S3Server(s3driver.ImplMinIO, srv.Endpoint, srv.Region, "TEST_S3_ACCESS_KEY", "TEST_S3_SECRET_KEY")
	cfg.RequestTimeout = harness.Duration(interval)
	s3b := harness.S3("probed-minio", cfg)
	s3b.Service = "probed-blobs"
	kb := sharedKafka("probed-kafka")
	yamlCfg := harness.ConfigYAML(kb, s3b)
	t.Cleanup(func() {
		if err := k8s.DeleteAllOf(ctx, &v1.BucketyBackend{}); err != nil {
			t.Errorf("delete the BucketyBackends: %v", err)
		}
	})
	stray := &v1.BucketyBackend{ObjectMeta: metav1.ObjectMeta{Name: "retired-backend"}, Status: v1.BucketyBackendStatus{Driver: "s3", Service: "retired-backend"}}
	create(t, stray)
	ns := namespace(t)
	create(t, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "counted", Namespace: ns}, Spec: v1.BucketySpec{Backend: "probed-kafka"}})

	base := probesStarted(t, "probed-minio")
	startControllerWith(t, yamlCfg, nil, func(o *appcontroller.Options) { o.BackendProbe = interval })

	m := waitReady(t, "probed-minio", "True", v1.ReasonReachable)
	if m.Status.Driver != "s3" || m.Status.Implementation != "minio" || m.Status.Service != "probed-blobs" || m.Status.LastProbeTime == nil {
		t.Errorf("want driver s3, implementation minio, service probed-blobs and a probe time, got %+v", m.Status)
	}
	if m.Status.KeysPerAccess == nil || *m.Status.KeysPerAccess {
		t.Errorf("want keysPerAccess false (the config sets no credentials), got %v", m.Status.KeysPerAccess)
	}
	k := waitReady(t, "probed-kafka", "True", v1.ReasonReachable)
	if !m.Status.DrainAllowed || k.Status.DrainAllowed {
		t.Errorf("want drains allowed on s3 and not on kadm (the drivers' defaults), got %v and %v", m.Status.DrainAllowed, k.Status.DrainAllowed)
	}
	if k.Status.Driver != "kadm" || k.Status.Implementation != "kafka" {
		t.Errorf("want driver kadm, implementation kafka, got %s %s", k.Status.Driver, k.Status.Implementation)
	}
	wait.For(t, waitTimeout, "probed-kafka counts the Buckety", func() (bool, string) {
		var bb v1.BucketyBackend
		err := k8s.Get(ctx, client.ObjectKey{Name: "probed-kafka"}, &bb)
		return err == nil && bb.Status.Bucketies == 1, fmt.Sprint(err, bb.Status.Bucketies)
	})
	// Probes that change nothing write nothing (lastProbeTime is refreshed
	// every HeartbeatProbes probes).
	var before, after v1.BucketyBackend
	if err := k8s.Get(ctx, client.ObjectKey{Name: "probed-kafka"}, &before); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * interval)
	if err := k8s.Get(ctx, client.ObjectKey{Name: "probed-kafka"}, &after); err != nil {
		t.Fatal(err)
	}
	if before.ResourceVersion != after.ResourceVersion {
		t.Errorf("want no write while nothing changed, got resourceVersion %s then %s: %+v then %+v", before.ResourceVersion, after.ResourceVersion, before.Status, after.Status)
	}
	wait.For(t, waitTimeout, "the stray BucketyBackend deleted", func() (bool, string) {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(stray), &v1.BucketyBackend{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})

	tc := tenantSees(t, ns, srv)
	minioOutage(t, tc, srv, base)
}

// minioOutage kills the test's MinIO: the first probe of probed-minio that
// starts afterwards writes Ready False (EndpointUnreachable), with no
// credential in its message nor anywhere the tenant reads; once MinIO
// serves again, Ready turns True.
func minioOutage(t *testing.T, tc client.Client, srv *s3test.Server, base float64) {
	t.Helper()
	ctx := context.Background()
	down := downAtFirstProbe(t, srv, "probed-minio", base)
	c := meta.FindStatusCondition(down.Status.Conditions, v1.ConditionReady)
	if c.Reason != v1.ReasonEndpointUnreachable {
		t.Errorf("want Ready False %s while MinIO is down, got %s: %s", v1.ReasonEndpointUnreachable, c.Reason, c.Message)
	}
	t.Logf("Ready False (%s) at probe %d: %s", c.Reason, down.Status.Probes, c.Message)
	noCredential(t, "the Ready False message", c.Message, srv)
	if reason, up := backendUp(t, "probed-minio"); reason != v1.ReasonEndpointUnreachable || up != 0 {
		t.Errorf("want buckety_backend_up{reason=%q} 0 while MinIO is down, got {reason=%q} %v", v1.ReasonEndpointUnreachable, reason, up)
	}
	var l v1.BucketyBackendList
	if err := tc.List(ctx, &l); err != nil {
		t.Fatalf("tenant: want to list the backends while MinIO is down, got %v", err)
	}
	js, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	noCredential(t, "the backends as the tenant reads them while MinIO is down", string(js), srv)

	if err := srv.Respawn(); err != nil {
		t.Fatal(err)
	}
	waitReady(t, "probed-minio", "True", v1.ReasonReachable)
	if reason, up := backendUp(t, "probed-minio"); reason != v1.ReasonReachable || up != 1 {
		t.Errorf("want buckety_backend_up{reason=%q} 1 once MinIO serves again, got {reason=%q} %v", v1.ReasonReachable, reason, up)
	}
}

// waitReady waits until bucketybackend/name is Ready status (reason).
func waitReady(t *testing.T, name, status, reason string) *v1.BucketyBackend {
	t.Helper()
	var bb v1.BucketyBackend
	wait.For(t, waitTimeout, fmt.Sprintf("bucketybackend/%s Ready %s %s", name, status, reason), func() (bool, string) {
		if err := k8s.Get(context.Background(), client.ObjectKey{Name: name}, &bb); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(bb.Status.Conditions, v1.ConditionReady)
		if c == nil {
			return false, "no Ready condition"
		}
		return string(c.Status) == status && c.Reason == reason, condString(bb.Status.Conditions)
	})
	return &bb
}

// downAtFirstProbe kills srv, the server of backend name, and checks that
// the first probe of it that starts afterwards writes Ready False; it
// returns what that probe wrote. It watches every write from before the
// kill on. A write carries its probe's number (status.probes), which
// buckety_backend_probes_total counts as probes start: every probe numbered
// up to the count read after the kill started before that read, and the
// next starts after it, so after the kill. base is that count before the
// controller started (an earlier controller of this process adds to it).
func downAtFirstProbe(t *testing.T, srv *s3test.Server, name string, base float64) *v1.BucketyBackend {
	t.Helper()
	// The timeout is a backstop that ends a hung test, not the assertion.
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	w := watchView(t, ctx, name)
	defer w.Stop()
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	first := int64(probesStarted(t, name)-base) + 1
	for ev := range w.ResultChan() {
		bb, ok := ev.Object.(*v1.BucketyBackend)
		if !ok {
			t.Fatalf("watch bucketybackend/%s: want a BucketyBackend, got %s %+v", name, ev.Type, ev.Object)
		}
		if bb.Status.Probes == 0 {
			t.Fatalf("bucketybackend/%s: want the number of the probe that wrote it (status.probes), got none: %+v", name, bb.Status)
		}
		c := meta.FindStatusCondition(bb.Status.Conditions, v1.ConditionReady)
		if c == nil || c.Status != metav1.ConditionFalse {
			continue
		}
		if bb.Status.Probes > first {
			t.Errorf("bucketybackend/%s: want Ready False from probe %d at the latest (the first to start after the kill), got it from probe %d", name, first, bb.Status.Probes)
		}
		return bb
	}
	t.Fatalf("bucketybackend/%s: no write with Ready False within %s (the watch ended: %v)", name, waitTimeout, ctx.Err())
	return nil
}

// watchView watches bucketybackend/name from its current version on.
func watchView(t *testing.T, ctx context.Context, name string) watch.Interface {
	t.Helper()
	var bb v1.BucketyBackend
	if err := k8s.Get(ctx, client.ObjectKey{Name: name}, &bb); err != nil {
		t.Fatal(err)
	}
	scheme, err := appcontroller.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	wc, err := client.NewWithWatch(cp.RESTConfig, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(ctx, &v1.BucketyBackendList{}, client.MatchingFields{"metadata.name": name}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: bb.ResourceVersion}})
	if err != nil {
		t.Fatalf("watch bucketybackend/%s: %v", name, err)
	}
	return w
}

// noCredential fails when s holds one of srv's keys or the name of the
// variable the config reads its secret key from.
func noCredential(t *testing.T, what, s string, srv *s3test.Server) {
	t.Helper()
	for name, secret := range map[string]string{"secret key": srv.SecretKey, "access key": srv.AccessKey, "config variable": "TEST_S3_SECRET_KEY"} {
		if strings.Contains(s, secret) {
			t.Errorf("%s: want no credential, got the %s %q in %s", what, name, secret, s)
		}
	}
}

// tenantSees checks the view as a tenant: a user bound to edit in ns only,
// with the shipped buckety-backends-view role and binding installed.
func tenantSees(t *testing.T, ns string, srv *s3test.Server) client.Client {
	t.Helper()
	ctx := context.Background()
	installBackendsView(t)
	tc := tenant(t, ns, "backends-tenant")
	var l v1.BucketyBackendList
	wait.For(t, waitTimeout, "the tenant lists the backends", func() (bool, string) {
		err := tc.List(ctx, &l)
		return err == nil && len(l.Items) == 2, fmt.Sprint(err, len(l.Items))
	})
	var bb v1.BucketyBackend
	if err := tc.Get(ctx, client.ObjectKey{Name: "probed-minio"}, &bb); err != nil {
		t.Fatalf("tenant: want to get bucketybackend/probed-minio, got %v", err)
	}
	bb.Status.Conditions = nil
	if err := tc.Update(ctx, &bb); !apierrors.IsForbidden(err) {
		t.Errorf("tenant: want update forbidden, got %v", err)
	}
	if err := tc.Patch(ctx, &bb, client.RawPatch("application/merge-patch+json", []byte(`{"status":{"driver":"fake"}}`))); !apierrors.IsForbidden(err) {
		t.Errorf("tenant: want patch forbidden, got %v", err)
	}
	if err := tc.Delete(ctx, &bb); !apierrors.IsForbidden(err) {
		t.Errorf("tenant: want delete forbidden, got %v", err)
	}
	if err := tc.Create(ctx, &v1.BucketyBackend{ObjectMeta: metav1.ObjectMeta{Name: "mine"}}); !apierrors.IsForbidden(err) {
		t.Errorf("tenant: want create forbidden, got %v", err)
	}
	js, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	noCredential(t, "the backends as the tenant reads them", string(js), srv)
	return tc
}

// installBackendsView installs the shipped buckety-backends-view
// ClusterRole and its binding to system:authenticated.
func installBackendsView(t *testing.T) {
	t.Helper()
	base := filepath.Join(controlplane.RepoRoot(), "deploy", "kustomize", "base")
	var cr rbacv1.ClusterRole
	var crb rbacv1.ClusterRoleBinding
	for f, obj := range map[string]client.Object{"backends-view.yaml": &cr, "backends-view-binding.yaml": &crb} {
		r, err := os.Open(filepath.Join(base, f))
		if err != nil {
			t.Fatal(err)
		}
		err = yaml.NewYAMLOrJSONDecoder(r, 4096).Decode(obj)
		if cerr := r.Close(); cerr != nil {
			t.Fatal(cerr)
		}
		if err != nil && !errors.Is(err, io.EOF) {
			t.Fatalf("%s: %v", f, err)
		}
		if err := harness.CreateOrIgnore(context.Background(), k8s, obj); err != nil {
			t.Fatal(err)
		}
	}
}

// backendUp is buckety_backend_up of backend: its reason label and value
// ("" and -1 when the series is absent).
func backendUp(t *testing.T, backend string) (string, float64) {
	t.Helper()
	labels, m := series(t, metrics.BackendUp, backend)
	if m == nil {
		return "", -1
	}
	return labels["reason"], m.GetGauge().GetValue()
}

// probesStarted is buckety_backend_probes_total of backend (0 before its
// first probe).
func probesStarted(t *testing.T, backend string) float64 {
	t.Helper()
	_, m := series(t, metrics.BackendProbes, backend)
	return m.GetCounter().GetValue()
}

// series is the series of c whose backend label is backend (nil when there
// is none), and its labels.
func series(t *testing.T, c prometheus.Collector, backend string) (map[string]string, *dto.Metric) {
	t.Helper()
	ch := make(chan prometheus.Metric, 64)
	go func() { c.Collect(ch); close(ch) }()
	var found *dto.Metric
	var labels map[string]string
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
			found, labels = m, l
		}
	}
	return labels, found
}
