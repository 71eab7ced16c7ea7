package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/test/wait"
)

// TestDeletionBlockedThenRetainOrDelete: deletion waits for explicit
// accesses (never cascading), then Retain keeps the topic and Delete
// removes it.
func TestDeletionBlockedThenRetainOrDelete(t *testing.T) {
	needInfra(t)
	startController(t, configYAML("kafka", "s3"), nil, time.Hour)
	ns := namespace(t)
	ctx := context.Background()
	for _, policy := range []v1.RetentionPolicy{v1.RetentionRetain, v1.RetentionDelete} {
		name := strings.ToLower(string(policy))
		resource := ns + "." + name
		b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: resource, RetentionPolicy: policy}}
		create(t, b)
		a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: name + "-app", Namespace: ns}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: name}, CredentialsSecretName: name + "-app"}}
		create(t, a)
		waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
		if err := k8s.Delete(ctx, b); err != nil {
			t.Fatal(err)
		}
		c := waitCondition(t, b, v1.ConditionBlockedByAccesses, metav1.ConditionTrue, v1.ReasonAccessesExist, waitTimeout)
		if !strings.Contains(c.Message, name+"-app") {
			t.Errorf("%s: want the blocking access named, got %q", policy, c.Message)
		}
		time.Sleep(time.Second)
		if ok, _ := gone(t, a); ok {
			t.Fatalf("%s: the controller must not cascade-delete accesses", policy)
		}
		if !topic(t, resource).exists {
			t.Fatalf("%s: the topic must stay while deletion is blocked", policy)
		}
		if err := k8s.Delete(ctx, a); err != nil {
			t.Fatal(err)
		}
		wait.For(t, waitTimeout, string(policy)+" Buckety deleted", func() (bool, string) { return gone(t, b) })
		if exists := topic(t, resource).exists; exists != (policy == v1.RetentionRetain) {
			t.Errorf("%s: want topic exists=%v, got %v", policy, policy == v1.RetentionRetain, exists)
		}
	}
}

// TestRecursiveBucketDeletion: retentionPolicy Delete on a bucket with
// thousands of objects shows progress in the Ready condition and an event,
// then removes the bucket.
func TestRecursiveBucketDeletion(t *testing.T) {
	needInfra(t)
	startController(t, configYAML("kafka", "s3"), nil, time.Hour)
	ns := namespace(t)
	ctx := context.Background()
	bucket := ns + "-doomed"
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "doomed", Namespace: ns}, Spec: v1.BucketySpec{Backend: "s3", Name: bucket, RetentionPolicy: v1.RetentionDelete, Parameters: map[string]string{"versioning": "true"}}}
	create(t, b)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	cl := rootS3(t)
	errs := make(chan error, 2500)
	sem := make(chan struct{}, 16)
	for i := 0; i < 2500; i++ {
		sem <- struct{}{}
		go func(i int) {
			defer func() { <-sem }()
			_, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(fmt.Sprintf("o/%05d", i)), Body: strings.NewReader("x")})
			errs <- err
		}(i)
	}
	for i := 0; i < 2500; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if err := k8s.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	c := waitCondition(t, b, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonDeleting, waitTimeout)
	wait.For(t, waitTimeout, "bucket gone", func() (bool, string) {
		return !bucketExists(t, bucket), "exists"
	})
	wait.For(t, waitTimeout, "Buckety gone", func() (bool, string) { return gone(t, b) })
	var evs eventsv1.EventList
	if err := k8s.List(ctx, &evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var progress, deleted bool
	for _, e := range evs.Items {
		progress = progress || (e.Reason == "DeletionProgress" && strings.Contains(e.Note, "removed so far"))
		deleted = deleted || (e.Reason == "Deleted" && strings.Contains(e.Note, bucket))
	}
	if !progress || !deleted {
		t.Errorf("want DeletionProgress and Deleted events, got progress=%v deleted=%v (last condition %q)", progress, deleted, c.Message)
	}
}
