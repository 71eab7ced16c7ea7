package integration

import (
	"context"
	"net/http"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestControllerLeasesGoToTheLeaderElectionLevel: with the deploy base's
// FlowSchema, the API server puts the controller's Lease requests in its
// leader-election priority level, and only those: its other requests stay
// in workload-low with every ServiceAccount's. Read from the priority level
// and flow schema the API server names in each answer's APF headers, for
// requests as the controller's ServiceAccount.
func TestControllerLeasesGoToTheLeaderElectionLevel(t *testing.T) {
	needInfra(t)
	installRBAC(t)
	rc := rest.CopyConfig(cp.RESTConfig)
	rc.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + systemNS + ":" + saName}
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	uid := func(o client.Object, name string) types.UID {
		t.Helper()
		if err := k8s.Get(context.Background(), client.ObjectKey{Name: name}, o); err != nil {
			t.Fatal(err)
		}
		return o.GetUID()
	}
	leaderElection := uid(&flowcontrolv1.PriorityLevelConfiguration{}, "leader-election")
	workloadLow := uid(&flowcontrolv1.PriorityLevelConfiguration{}, "workload-low")
	ours := uid(&flowcontrolv1.FlowSchema{}, "buckety-controller-leases")
	for _, c := range []struct {
		path, level string
		want        types.UID
		schema      bool
	}{
		{"/apis/coordination.k8s.io/v1/namespaces/" + systemNS + "/leases", "leader-election", leaderElection, true},
		{"/apis/coordination.k8s.io/v1/namespaces/" + systemNS + "/leases/buckety-controller.buckety.yolean.se", "leader-election", leaderElection, true},
		{"/apis/buckety.yolean.se/v1alpha1/bucketies", "workload-low", workloadLow, false},
		{"/api/v1/namespaces/" + systemNS + "/secrets", "workload-low", workloadLow, false},
	} {
		req, err := http.NewRequest(http.MethodGet, rc.Host+c.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if err := resp.Body.Close(); err != nil {
			t.Fatal(err)
		}
		level := types.UID(resp.Header.Get("X-Kubernetes-PF-PriorityLevel-UID"))
		schema := types.UID(resp.Header.Get("X-Kubernetes-PF-FlowSchema-UID"))
		if level != c.want {
			t.Errorf("GET %s as the controller (%s): priority level %q, want %s (%s)", c.path, resp.Status, level, c.level, c.want)
		}
		if (schema == ours) != c.schema {
			t.Errorf("GET %s as the controller: flow schema %q; buckety-controller-leases is %s, want it to match: %v", c.path, schema, ours, c.schema)
		}
	}
}
