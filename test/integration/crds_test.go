package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	appcontroller "github.com/Yolean/buckety-controller/internal/app/controller"
	"github.com/Yolean/buckety-controller/test/controlplane"
)

// TestControllerStartsBeforeItsCRDs: a first `kubectl apply -k` creates
// the CRDs and the controller's Deployment in one go, so the controller
// may start before the API server serves its kinds. It waits for them
// (internal/app/crds) instead of ending with "no matches for kind", and
// then works: a Buckety applied after the CRDs turns Ready.
func TestControllerStartsBeforeItsCRDs(t *testing.T) {
	needInfra(t)
	fresh := controlplane.StartT(t, controlplane.Options{})
	run := startControllerWith(t, installationYAML("early", sharedKafka("kafka")), nil, func(o *appcontroller.Options) {
		o.RESTConfig = fresh.RESTConfig
	})
	select {
	case err := <-run.done:
		run.done <- err // for the cleanup's stop
		t.Fatalf("the controller ended while its CRDs were not installed: %v", err)
	case <-time.After(3 * time.Second):
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := fresh.InstallCRDs(ctx, controlplane.CRDDir()); err != nil {
		t.Fatal(err)
	}
	c := clientOn(t, fresh.RESTConfig)
	topic := fmt.Sprintf("early.orders-%d", time.Now().UnixNano())
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "early"}, Spec: v1.BucketySpec{Backend: "kafka", Name: topic, RetentionPolicy: v1.RetentionDelete}}
	applyOn(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "early"}}, b)
	waitConditionOn(t, c, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	deleteOn(t, c, b)
}
