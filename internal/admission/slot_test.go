package admission

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/shard"
)

// TestSlotLabel: a tenant may leave out the shard slot label (buckety
// sets it) or keep the value it has, but not point an object at another
// shard, nor make every shard read an object that nothing shares.
func TestSlotLabel(t *testing.T) {
	bv, av := BucketyValidator{sharingValidators(t)}, AccessValidator{sharingValidators(t)}
	labelled := func(v string) map[string]string { return map[string]string{shard.SlotLabel: v} }
	own, other := shard.SlotValue("payments"), shard.SlotValue("payments-x")
	if own == other {
		t.Fatalf("the test needs two namespaces of different slots; both are in %s", own)
	}
	ro := []v1.Role{v1.RoleReadOnly}
	buckety := func(l map[string]string, rules ...v1.SharingRule) *v1.Buckety {
		return &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "payments", Name: "orders", Labels: l}, Spec: v1.BucketySpec{Backend: "kafka", Sharing: rules}}
	}
	const refused = `metadata.labels[buckety.yolean.se/slot]: Invalid value`
	check := func(t *testing.T, err error, want string) {
		t.Helper()
		switch {
		case want == "" && err != nil:
			t.Fatalf("want admitted, got %v", err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Fatalf("want refused with %q, got %v", want, err)
		}
	}
	ctx := context.Background()
	for _, c := range []struct {
		name string
		b    *v1.Buckety
		want string
	}{
		{"no label", buckety(nil), ""},
		{"its namespace's slot", buckety(labelled(own)), ""},
		{"another slot", buckety(labelled(other)), refused},
		{"every shard, while it shares", buckety(labelled(shard.Everywhere), v1.SharingRule{Namespace: "analytics", Roles: ro}), ""},
		{"every shard, sharing nothing", buckety(labelled(shard.Everywhere)), refused},
	} {
		t.Run("create "+c.name, func(t *testing.T) {
			_, err := bv.ValidateCreate(ctx, c.b)
			check(t, err, c.want)
		})
	}
	t.Run("update keeping the value buckety set before sharing ended", func(t *testing.T) {
		old := buckety(labelled(shard.Everywhere), v1.SharingRule{Namespace: "analytics", Roles: ro})
		_, err := bv.ValidateUpdate(ctx, old, buckety(labelled(shard.Everywhere)))
		check(t, err, "")
	})
	t.Run("update moving it to another slot", func(t *testing.T) {
		_, err := bv.ValidateUpdate(ctx, buckety(labelled(own)), buckety(labelled(other)))
		check(t, err, refused)
	})
	t.Run("update removing the label buckety set", func(t *testing.T) {
		_, err := bv.ValidateUpdate(ctx, buckety(labelled(own)), buckety(map[string]string{"team": "a"}))
		check(t, err, `metadata.labels[buckety.yolean.se/slot]: Required value`)
		_, err = av.ValidateUpdate(ctx, &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "payments", Name: "app", Labels: labelled(own)}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: "app"}},
			&v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "payments", Name: "app"}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: "app"}})
		check(t, err, `metadata.labels[buckety.yolean.se/slot]: Required value`)
	})
	t.Run("relabelling an object being deleted", func(t *testing.T) {
		now := metav1.Now()
		old := buckety(labelled(own))
		old.DeletionTimestamp, old.Finalizers = &now, []string{v1.Finalizer, "x.example/pin"}
		relabelled := old.DeepCopy()
		relabelled.Labels = labelled("x")
		_, err := bv.ValidateUpdate(ctx, old, relabelled)
		check(t, err, refused)
		released := old.DeepCopy()
		released.Finalizers = []string{"x.example/pin"}
		_, err = bv.ValidateUpdate(ctx, old, released)
		check(t, err, "")
		oa := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "payments", Name: "app", Labels: labelled(own), DeletionTimestamp: &now, Finalizers: []string{v1.Finalizer, "x.example/pin"}},
			Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: "app"}}
		ra := oa.DeepCopy()
		ra.Labels = labelled("x")
		_, err = av.ValidateUpdate(ctx, oa, ra)
		check(t, err, refused)
		ra = oa.DeepCopy()
		ra.Labels = nil
		_, err = av.ValidateUpdate(ctx, oa, ra)
		check(t, err, `metadata.labels[buckety.yolean.se/slot]: Required value`)
		ra = oa.DeepCopy()
		ra.Finalizers = []string{"x.example/pin"}
		_, err = av.ValidateUpdate(ctx, oa, ra)
		check(t, err, "")
	})
	t.Run("update of an object buckety has not labelled yet", func(t *testing.T) {
		_, err := bv.ValidateUpdate(ctx, buckety(nil), buckety(map[string]string{"team": "a"}))
		check(t, err, "")
	})
	t.Run("an access naming another namespace's Buckety is read everywhere", func(t *testing.T) {
		a := foreignAccess("analytics", "orders", v1.RoleReadOnly)
		a.Labels = labelled(shard.Everywhere)
		_, err := av.ValidateCreate(ctx, a)
		check(t, err, "")
		a.Labels = labelled(shard.SlotValue("payments"))
		_, err = av.ValidateCreate(ctx, a)
		check(t, err, refused)
	})
}
