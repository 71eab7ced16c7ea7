package faults

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kadmdriver "github.com/Yolean/buckety-controller/drivers/kadm"
	s3driver "github.com/Yolean/buckety-controller/drivers/s3"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	appcontroller "github.com/Yolean/buckety-controller/internal/app/controller"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/test/harness"
	"github.com/Yolean/buckety-controller/test/wait"
)

// secondInstallation (issue 49): a second cluster, its own control plane
// and controller (installation f-second), on the same broker and S3
// server, whose maintainer allows adoption on both backends. Its tenant,
// in namespaces of the same names as the first installation's (every
// cluster has team-a), applies a Buckety on every name the first
// installation holds (alice's, with data and without, and mallory's),
// each asking to adopt and converge, each with an access. The row counts
// what the second installation took: a Buckety Ready, a credential issued
// or a Secret written on any of them. 0 to pass.
func (a *attack) secondInstallation() {
	t, ctx := a.t, a.ctx
	type name struct{ backend, name, ns, owner string }
	// live reports whether the Buckety that owns n in the first
	// installation stands (not being deleted): only its resource is
	// certain to stay.
	live := func(n name) bool {
		b := &v1.Buckety{}
		return a.e.k8s.Get(ctx, client.ObjectKey{Namespace: n.ns, Name: n.owner}, b) == nil && b.DeletionTimestamp.IsZero()
	}
	var names []name
	var held v1.BucketyClaimList
	if err := a.e.k8s.List(ctx, &held); err != nil {
		t.Fatal(err)
	}
	for _, c := range held.Items {
		n := name{c.Spec.Backend, c.Spec.ResourceName, c.Spec.Owner.Namespace, c.Spec.Owner.Name}
		if (c.Spec.Backend == "kafka" || c.Spec.Backend == "s3") && c.Spec.Phase == v1.ClaimCreated && live(n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		t.Fatal("second installation: the first holds no resource to try")
	}
	dir := filepath.Join(a.e.dir, "second-installation")
	cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cp := harness.ControlPlane(cctx, t, dir, false)
	scheme, err := appcontroller.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	k8s, err := client.New(cp.RESTConfig, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	k := harness.Kadm("kafka", kadmdriver.Config{SeedBrokers: a.e.broker.Addrs, RequestTimeout: harness.Duration(5 * time.Second),
		SASL: &kadmdriver.SASL{Mechanism: "SCRAM-SHA-512", Username: "buckety", Password: "${FAULTS_KAFKA_PASSWORD}"}})
	k.Adoption = &config.Adoption{Allow: true}
	c := harness.S3Server(a.p.S3, a.e.s3.Endpoint, a.e.s3.Region, "FAULTS_S3_ACCESS_KEY", "FAULTS_S3_SECRET_KEY")
	c.Credentials = &s3driver.Credentials{AdminEndpoint: a.e.s3.AdminEndpoint}
	s := harness.S3("s3", c)
	s.Adoption = &config.Adoption{Allow: true}
	kubeconfig, configDir := harness.ControllerFiles(cctx, t, cp, k8s, dir, "installation: f-second\n"+harness.ConfigYAML(k, s))
	ctrl, err := harness.StartController(harness.ControllerOptions{Dir: filepath.Join(dir, "controller"), Bin: a.e.ctrlBin, Kubeconfig: kubeconfig, ConfigDir: configDir,
		Args: []string{"--leader-elect=false"}, Env: a.e.controllerEnv()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := ctrl.P.Stop(30 * time.Second); err != nil {
			t.Errorf("stop the second installation's controller: %v", err)
		}
	}()
	ns := map[string]bool{}
	var tried []*v1.Buckety
	for i, n := range names {
		owner := n.ns
		if !ns[owner] {
			ns[owner] = true
			if err := harness.CreateOrIgnore(ctx, k8s, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: owner}}); err != nil {
				t.Fatal(err)
			}
		}
		b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: owner, Name: fmt.Sprintf("second-%d", i)}, Spec: v1.BucketySpec{Backend: n.backend, Name: n.name,
			Adoption: v1.AdoptionAndConverge, RetentionPolicy: v1.RetentionDelete, DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: fmt.Sprintf("second-%d", i)}}}
		if err := k8s.Create(ctx, b); err != nil {
			t.Fatal(err)
		}
		tried = append(tried, b)
	}
	taken, settled := 0, 0
	wait.Until(time.Now().Add(3*time.Minute), func() bool {
		taken, settled = 0, 0
		for _, b := range tried {
			cur := &v1.Buckety{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(b), cur); err != nil {
				continue
			}
			c := meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionReady)
			switch {
			case c == nil:
			case c.Status == metav1.ConditionTrue:
				taken++
				settled++
			case c.Reason == v1.ReasonOwnedElsewhere:
				settled++
			}
		}
		return settled == len(tried)
	})
	var creds v1.BucketyCredentialList
	if err := k8s.List(ctx, &creds); err != nil {
		t.Fatal(err)
	}
	var secrets corev1.SecretList
	if err := k8s.List(ctx, &secrets, client.MatchingLabels{v1.ManagedByLabel: v1.ManagedByValue}); err != nil {
		t.Fatal(err)
	}
	a.tb.add(t, a.run, fmt.Sprintf("second installation: of the first's %d names, taken (Ready, credentials, Secrets)", len(tried)),
		fmt.Sprintf("%d, %d, %d", taken, len(creds.Items), len(secrets.Items)), taken == 0 && len(creds.Items) == 0 && len(secrets.Items) == 0)
	a.tb.add(t, a.run, "second installation: refused naming the owner (OwnedElsewhere)", fmt.Sprintf("%d of %d", settled-taken, len(tried)), settled-taken == len(tried))
	// What it tried to delete (retentionPolicy Delete) stays.
	for _, b := range tried {
		if err := k8s.Delete(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	wait.Until(time.Now().Add(2*time.Minute), func() bool {
		var left v1.BucketyList
		return k8s.List(ctx, &left) == nil && len(left.Items) == 0
	})
	topics, err := a.e.topics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	buckets, err := a.e.buckets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gone := 0
	for _, n := range names {
		if !live(n) {
			continue
		}
		if (n.backend == "kafka" && !topics[n.name]) || (n.backend == "s3" && !buckets[n.name]) {
			gone++
		}
	}
	a.tb.add(t, a.run, "second installation: the first's resources deleted by its Delete", gone, gone == 0)
}
