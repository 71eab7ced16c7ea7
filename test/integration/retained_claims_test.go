package integration

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/claims"
	s3test "github.com/Yolean/buckety-controller/test/s3"
	"github.com/Yolean/buckety-controller/test/wait"
)

// TestRetainedTakenOverWhereItLives, on the real API server and two real
// S3 servers (the R2 backend's account endpoint, and its EU
// jurisdiction's): Buckety data made its bucket in the EU and was deleted
// with the default retentionPolicy Retain, so its claim stays, retained,
// recording jurisdiction eu. Applied again without the jurisdiction, it is
// refused (InvalidParameters, naming spec.parameters[jurisdiction] and
// saying the bucket is retained), no bucket of the name is made at the
// account endpoint, and the claim stays retained in the EU. With the
// jurisdiction set, it takes the bucket over in the EU (empty, and its
// owner record says this installation retained it: the adoption rules
// let it in without keys). Before, the takeover dropped the location the
// claim recorded, found no bucket at the account endpoint, and created a
// second one there, Ready, with the record of the EU bucket gone.
func TestRetainedTakenOverWhereItLives(t *testing.T) {
	needInfra(t)
	eu := s3test.Start(t, "minio", s3test.Options{AccessKey: minio.AccessKey, SecretKey: minio.SecretKey, Region: minio.Region})
	startController(t, r2YAML(eu), nil, time.Hour)
	ns := namespace(t)
	removeWhileRunning(t, ns)
	ctx := context.Background()
	name := ns + "-eu-data"
	inEU := map[string]string{"jurisdiction": "eu"}
	mk := func(params map[string]string) *v1.Buckety {
		return &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns}, Spec: v1.BucketySpec{Backend: "r2", Name: name, Parameters: params}}
	}
	atAccount := func() bool {
		_, err := rootS3(t).HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(name)})
		return err == nil
	}

	first := mk(maps.Clone(inEU))
	create(t, first)
	waitCondition(t, first, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	deleteBuckety(t, first)
	wait.For(t, waitTimeout, "the first Buckety gone", func() (bool, string) { return gone(t, first) })
	if cl, ok := claimOn(t, "r2", name); !ok || !claims.IsRetained(cl) || !maps.Equal(cl.Spec.Location, inEU) {
		t.Fatalf("want the claim retained, recording jurisdiction eu, got %+v", cl)
	}

	again := mk(nil)
	create(t, again)
	got := waitCondition(t, again, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonInvalidParameters, waitTimeout)
	if !strings.Contains(got.Message, "spec.parameters[jurisdiction]") || !strings.Contains(got.Message, "retained") {
		t.Errorf("want the refusal to name spec.parameters[jurisdiction] and say the bucket is retained, got %q", got.Message)
	}
	if atAccount() {
		t.Errorf("want no bucket %s made at the account endpoint", name)
	}
	if cl, ok := claimOn(t, "r2", name); !ok || !claims.IsRetained(cl) || cl.Spec.Owner.UID != string(first.UID) || !maps.Equal(cl.Spec.Location, inEU) {
		t.Fatalf("want the claim still retained from the first Buckety in the EU, got %+v", cl)
	}

	patch(t, again, `{"spec":{"parameters":{"jurisdiction":"eu"}}}`)
	waitCondition(t, again, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	if cl, ok := claimOn(t, "r2", name); !ok || cl.Spec.Owner.UID != string(again.UID) || cl.Spec.Phase != v1.ClaimAdopted || !maps.Equal(cl.Spec.Location, inEU) {
		t.Errorf("want the EU bucket taken over, Adopted, got %+v", cl)
	}
	if atAccount() {
		t.Errorf("want no bucket %s made at the account endpoint", name)
	}
}
