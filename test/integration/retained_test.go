package integration

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/twmb/franz-go/pkg/kgo"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/internal/controller/claims"
	"github.com/Yolean/buckety-controller/test/harness"
	"github.com/Yolean/buckety-controller/test/wait"
)

// TestRetainAndRepeatHeld (issue 50, 3) on the real broker and MinIO: a
// tenant under limits.perNamespace: 1 creates a topic (and a bucket),
// fills it, deletes its Buckety with the default retentionPolicy Retain
// and applies another: the retained resource keeps counting, so the
// second waits (LimitExceeded, naming the retained resource). Applying
// the first again is refused (it holds content, no adoption key) and
// sheds nothing. Only the maintainer's release of the claim lets the
// second in. Before, the delete released the claim: one namespace held
// any number of resources under a limit of one.
func TestRetainAndRepeatHeld(t *testing.T) {
	needInfra(t)
	bs := sharedBackends("kafka", "s3")
	for i := range bs {
		bs[i].Limits = &config.Limits{PerNamespace: 1}
		// A sibling: another name for the same service, under the same
		// limit, through which the re-apply below tries the resource.
		sib := bs[i]
		sib.Name, sib.Service = bs[i].Name+"-sibling", bs[i].Name
		bs = append(bs, sib)
	}
	startController(t, harness.ConfigYAML(bs...), nil, time.Hour)
	ns := namespace(t)
	removeWhileRunning(t, ns)
	ctx := context.Background()
	_, kcl := kafkaAdmin(t)
	root := rootS3(t)
	for _, c := range []struct {
		backend, resource string
		fill              func(name string)
		exists            func(name string) bool
	}{
		{"kafka", ns + ".first", func(name string) {
			if err := kcl.ProduceSync(ctx, &kgo.Record{Topic: name, Value: []byte("the tenant's")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}, func(name string) bool { return topic(t, name).exists }},
		{"s3", ns + "-first", func(name string) {
			if _, err := root.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(name), Key: aws.String("data"), Body: strings.NewReader("the tenant's")}); err != nil {
				t.Fatal(err)
			}
		}, func(name string) bool {
			_, err := root.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(name)})
			return err == nil
		}},
	} {
		t.Run(c.backend, func(t *testing.T) {
			mk := func(name, resource string) *v1.Buckety {
				return &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1.BucketySpec{Backend: c.backend, Name: resource}}
			}
			first := mk(c.backend+"-first", c.resource)
			create(t, first)
			waitCondition(t, first, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
			c.fill(c.resource)
			deleteBuckety(t, first)
			wait.For(t, waitTimeout, "the first Buckety gone", func() (bool, string) { return gone(t, first) })
			if !c.exists(c.resource) {
				t.Fatalf("want %s retained on the backend", c.resource)
			}
			cl := &v1.BucketyClaim{}
			if err := k8s.Get(ctx, types.NamespacedName{Name: claims.Name(c.backend, c.resource)}, cl); err != nil || !claims.IsRetained(cl) {
				t.Fatalf("want the claim on %s kept as retained, got %v %+v", c.resource, err, cl.Spec)
			}

			second := mk(c.backend+"-second", c.resource+"-2")
			create(t, second)
			if got := waitCondition(t, second, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonLimitExceeded, waitTimeout); !strings.Contains(got.Message, "counting 1 resources retained on the backend") {
				t.Errorf("want the retained resource named in the limit, got %q", got.Message)
			}

			// Applied again, through the sibling, to shed the count:
			// refused, and nothing shed.
			retained := cl.Spec.DeepCopy()
			again := mk(c.backend+"-first", c.resource)
			again.Spec.Backend = c.backend + "-sibling"
			create(t, again)
			waitCondition(t, again, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonAdoptionRefused, waitTimeout)
			deleteBuckety(t, again)
			wait.For(t, waitTimeout, "the re-applied Buckety gone", func() (bool, string) { return gone(t, again) })
			patch(t, second, `{"metadata":{"annotations":{"poke":"1"}}}`)
			if got := waitCondition(t, second, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonLimitExceeded, waitTimeout); !strings.Contains(got.Message, "retained") {
				t.Errorf("after a refused re-apply: want the retained resource still counted, got %q", got.Message)
			}
			if err := k8s.Get(ctx, types.NamespacedName{Name: claims.Name(c.backend, c.resource)}, cl); err != nil || !claims.IsRetained(cl) || cl.Spec.Owner.UID != string(first.UID) {
				t.Fatalf("want the claim reverted to the first Buckety's retained record, got %v %+v", err, cl.Spec)
			}
			if cl.Spec.Backend != retained.Backend || cl.Spec.Service != retained.Service || !maps.Equal(cl.Spec.Location, retained.Location) || !reflect.DeepEqual(cl.Spec.Budgeted, retained.Budgeted) {
				t.Errorf("want the reverted claim's backend, service, location and budget as the first Buckety left them (%q, %q, %v, %+v), got %q, %q, %v, %+v",
					retained.Backend, retained.Service, retained.Location, retained.Budgeted, cl.Spec.Backend, cl.Spec.Service, cl.Spec.Location, cl.Spec.Budgeted)
			}

			// The maintainer releases it (kubectl delete bucketyclaim).
			if err := k8s.Delete(ctx, cl); err != nil {
				t.Fatal(err)
			}
			waitCondition(t, second, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
			if !c.exists(c.resource) {
				t.Errorf("want %s left on the backend by the release: only a claim is deleted", c.resource)
			}
			deleteBuckety(t, second)
			wait.For(t, waitTimeout, fmt.Sprintf("%s gone", second.Name), func() (bool, string) { return gone(t, second) })
		})
	}
}
