package access

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// TestBucketyUpdatesThatWakeAccesses: a Buckety's status write that only
// turns its Ready (or says more of its accesses, its usage, its drain)
// wakes none of its accesses; one that changes what an access reads of
// it (its Provisioned condition, resource, generation, spec, deletion)
// wakes them.
func TestBucketyUpdatesThatWakeAccesses(t *testing.T) {
	now := metav1.Now()
	ready := func() *v1.Buckety {
		return &v1.Buckety{
			ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "orders", UID: "uid", Generation: 2, ResourceVersion: "10"},
			Spec:       v1.BucketySpec{Backend: "kafka", Parameters: map[string]string{"partitions": "1"}},
			Status: v1.BucketyStatus{
				Backend: "kafka", Driver: "kadm", BackendResourceName: "a.orders", ObservedGeneration: 2,
				EffectiveParameters: map[string]string{"partitions": "1"},
				Conditions: []metav1.Condition{
					{Type: v1.ConditionProvisioned, Status: metav1.ConditionTrue, Reason: v1.ReasonReconciled, Message: "created a.orders on backend kafka", ObservedGeneration: 2, LastTransitionTime: now},
					{Type: v1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1.ReasonReconciled, Message: "in sync", ObservedGeneration: 2, LastTransitionTime: now},
					{Type: v1.ConditionReconciling, Status: metav1.ConditionFalse, Reason: v1.ReasonAsExpected, Message: "no work in progress", ObservedGeneration: 2, LastTransitionTime: now},
				},
			},
		}
	}
	setCond := func(b *v1.Buckety, typ string, s metav1.ConditionStatus, reason, msg string) {
		for i := range b.Status.Conditions {
			if c := &b.Status.Conditions[i]; c.Type == typ {
				c.Status, c.Reason, c.Message, c.LastTransitionTime = s, reason, msg, metav1.Now()
			}
		}
	}
	for _, c := range []struct {
		name   string
		change func(b *v1.Buckety)
		wake   bool
	}{
		{"nothing but the resourceVersion (a resync)", func(b *v1.Buckety) { b.ResourceVersion = "11" }, false},
		{"Ready turned False for a pending access", func(b *v1.Buckety) {
			setCond(b, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonAccessesNotReady, "waiting for access Secrets: all-0")
			setCond(b, v1.ConditionReconciling, metav1.ConditionTrue, v1.ReasonProgressing, "waiting for access Secrets: all-0")
		}, false},
		{"ScopingNotImplemented names another access", func(b *v1.Buckety) {
			b.Status.Conditions = append(b.Status.Conditions, metav1.Condition{Type: v1.ConditionScopingNotImplemented, Status: metav1.ConditionTrue, Reason: v1.ReasonCredentialsNotScoped, Message: "one-0, all-0"})
		}, false},
		{"status.sharedWith and usage", func(b *v1.Buckety) {
			b.Status.SharedWith = &v1.SharedWith{Accesses: 1}
			b.Status.Usage = &v1.Usage{}
		}, false},
		{"Provisioned turned False", func(b *v1.Buckety) {
			setCond(b, v1.ConditionProvisioned, metav1.ConditionFalse, v1.ReasonBackendUnreachable, "unreachable")
		}, true},
		{"Provisioned for a new generation", func(b *v1.Buckety) {
			b.Generation = 3
			b.Status.Conditions[0].ObservedGeneration = 3
		}, true},
		{"another resource name", func(b *v1.Buckety) { b.Status.BackendResourceName = "a.other" }, true},
		{"parameter defaults recorded", func(b *v1.Buckety) { b.Status.ParameterDefaults = map[string]string{"retention.ms": "1"} }, true},
		{"a sharing rule", func(b *v1.Buckety) { b.Spec.Sharing = []v1.SharingRule{{Namespace: "b"}} }, true},
		{"deletion began", func(b *v1.Buckety) { b.DeletionTimestamp = &now }, true},
		{"replaced by another of the name", func(b *v1.Buckety) { b.UID = "uid2" }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			old, cur := ready(), ready()
			c.change(cur)
			if got := concernsAccesses(event.UpdateEvent{ObjectOld: old, ObjectNew: cur}); got != c.wake {
				t.Errorf("wake the accesses: want %v, got %v", c.wake, got)
			}
		})
	}
}

// TestOwnSecretWrites: the events of an access's Secret at the version
// this controller wrote (or read holding the wanted data) are dropped;
// the version a start-up list merely read, any other version, another
// owner's Secret and the initial list's events pass.
func TestOwnSecretWrites(t *testing.T) {
	ctrlRef := true
	secret := func(owner, rv string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "creds", ResourceVersion: rv,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: v1.GroupVersion.String(), Kind: "BucketyAccess", Name: "x", UID: types.UID(owner), Controller: &ctrlRef}}}}
	}
	data := map[string][]byte{"topic": []byte("t")}
	r := &Reconciler{}
	r.verified.record("written", "10", data)
	r.verified.recordIfAbsent("listed", "20", data)
	r.verified.creating("creating", true)
	p := r.ownSecretWrites()
	creatingEvent := p.Create(event.CreateEvent{Object: secret("creating", "30")})
	r.verified.creating("creating", false)
	cases := []struct {
		name string
		pass bool
		got  bool
	}{
		{"own create", false, p.Create(event.CreateEvent{Object: secret("written", "10")})},
		{"own write's update", false, p.Update(event.UpdateEvent{ObjectOld: secret("written", "9"), ObjectNew: secret("written", "10")})},
		{"initial list", true, p.Create(event.CreateEvent{Object: secret("written", "10"), IsInInitialList: true})},
		{"another version", true, p.Update(event.UpdateEvent{ObjectOld: secret("written", "10"), ObjectNew: secret("written", "11")})},
		{"a version only listed", true, p.Update(event.UpdateEvent{ObjectOld: secret("listed", "19"), ObjectNew: secret("listed", "20")})},
		{"another access's", true, p.Create(event.CreateEvent{Object: secret("other", "10")})},
		{"created while its create is under way", false, creatingEvent},
		{"created after its create's answer", true, p.Create(event.CreateEvent{Object: secret("creating", "30")})},
		{"deleted", true, p.Delete(event.DeleteEvent{Object: secret("written", "10")})},
	}
	for _, c := range cases {
		if c.got != c.pass {
			t.Errorf("%s: want passed %v, got %v", c.name, c.pass, c.got)
		}
	}
}
