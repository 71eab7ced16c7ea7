package integration

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// TestControllerStoppedConsumersWork: the controller is off the data path;
// with it stopped, a consumer still produces and consumes (and puts and
// gets) with nothing but the Secret's values.
func TestControllerStoppedConsumersWork(t *testing.T) {
	needInfra(t)
	run := startController(t, configYAML("kafka", "s3"), nil, time.Hour)
	ns := namespace(t)
	kb := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "stream", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: "${namespace}.stream", DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "stream-topic"}}}
	sb := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "blobs", Namespace: ns}, Spec: v1.BucketySpec{Backend: "s3", Name: "${namespace}-blobs", DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "blobs-bucket"}}}
	create(t, kb)
	create(t, sb)
	waitCondition(t, kb, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	waitCondition(t, sb, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	ks, ss := secret(t, ns, "stream-topic"), secret(t, ns, "blobs-bucket")
	run.stop(t)
	produceConsume(t, string(ks.Data["bootstrap"]), string(ks.Data["topic"]), "while the controller is down")
	putGet(t, ss.Data, "down.txt", "while the controller is down")
}
