package wake

import (
	"context"
	"errors"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// TestEachMessageReachesItsController: every message lands on a channel
// of the controller it wakes, naming the object, and the sources are one
// per channel.
func TestEachMessageReachesItsController(t *testing.T) {
	ctx := context.Background()
	c := New()
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "orders"}}
	if err := c.BucketyDrifted(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := c.QuotaWarningChanged(ctx, b); err != nil {
		t.Fatal(err)
	}
	c.ProvisionedFor(ctx, b, []string{"orders", "reader"})
	if err := c.CredentialDrifted(ctx, "a", "writer"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		ch   chan event.GenericEvent
		want []string
	}{
		{"drifted", c.drifted, []string{"*v1alpha1.Buckety a/orders"}},
		{"quota warning", c.quotaWarning, []string{"*v1alpha1.Buckety a/orders"}},
		{"provisioned", c.provisioned, []string{"*v1alpha1.BucketyAccess a/orders", "*v1alpha1.BucketyAccess a/reader"}},
		{"credentials", c.credentials, []string{"*v1alpha1.BucketyAccess a/writer"}},
	} {
		var got []string
		for len(tc.ch) > 0 {
			o := (<-tc.ch).Object
			got = append(got, fmt.Sprintf("%T %s/%s", o, o.GetNamespace(), o.GetName()))
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: want %v, got %v", tc.name, tc.want, got)
		}
	}
	if n, m := len(c.BucketySources()), len(c.AccessSources()); n != 2 || m != 2 {
		t.Errorf("want 2 sources per controller, got %d and %d", n, m)
	}
}

// TestFullBufferWaitsUntilContextEnds: a sender waits on a full buffer
// rather than dropping, and gives up with the context's error; a nil
// Channels sends nothing and has no sources.
func TestFullBufferWaitsUntilContextEnds(t *testing.T) {
	c := New()
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "orders"}}
	for range buffer {
		if err := c.BucketyDrifted(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.BucketyDrifted(ctx, b); !errors.Is(err, context.Canceled) {
		t.Errorf("full buffer, context ended: want context.Canceled, got %v", err)
	}
	var none *Channels
	if err := none.BucketyDrifted(ctx, b); err != nil || none.BucketySources() != nil || none.AccessSources() != nil {
		t.Errorf("nil Channels: want no error and no sources, got %v", err)
	}
	none.ProvisionedFor(ctx, b, []string{"x"})
}
