package drivertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/Yolean/buckety-controller/drivers"
)

// OwnerCase is one running service whose backend keeps owner records
// (drivers.OwnerRecorder), for OwnerContract.
type OwnerCase struct {
	// Open returns a new backend on the service each time it is called,
	// sharing nothing with the others but the service, as the backends of
	// two installations pointed at one service would. The caller closes it
	// when the test ends.
	Open func(t *testing.T) drivers.Backend
	// Create makes the resource a record is kept with, for services that
	// keep the record on the resource itself (an S3 bucket's tags); nil
	// when the backend keeps records apart from the resources (a Kafka
	// backend's registry topic).
	Create func(t *testing.T, name string)
	// Prefix starts the resource names the contract uses; they are valid
	// for every service (lowercase letters, digits and '-').
	Prefix string
}

// OwnerContract checks a drivers.OwnerRecorder: a record written by one
// backend is read at once (MaxAge 0) by another on the same service; a
// second write replaces it whole; a nil write removes it; a resource
// never written to, or missing, has no record; one resource's record
// never shows on another; and a backend reads its own write back from
// memory (MaxAge > 0). A backend whose OwnerRecords says it keeps no
// records is skipped, with its reason.
func OwnerContract(t *testing.T, oc OwnerCase) {
	t.Helper()
	ctx := context.Background()
	recorder := func(t *testing.T) drivers.OwnerRecorder {
		t.Helper()
		be := oc.Open(t)
		or, ok := be.(drivers.OwnerRecorder)
		if !ok {
			t.Fatalf("want %T to implement drivers.OwnerRecorder", be)
		}
		return or
	}
	a, b := recorder(t), recorder(t)
	ok, why, err := a.OwnerRecords(ctx)
	if err != nil {
		t.Fatalf("OwnerRecords: want no error, got %v", err)
	}
	if !ok {
		if why == "" {
			t.Fatal("OwnerRecords: want a reason when records are not kept, got none")
		}
		t.Skipf("the backend keeps no owner records: %s", why)
	}
	name := func(s string) string { return oc.Prefix + "-" + s }
	res := func(s string) drivers.Resource {
		n := name(s)
		if oc.Create != nil {
			oc.Create(t, n)
		}
		return drivers.Resource{Name: n}
	}
	read := func(t *testing.T, who string, or drivers.OwnerRecorder, r drivers.Resource, maxAge time.Duration, want *drivers.OwnerRecord) {
		t.Helper()
		r.MaxAge = maxAge
		got, err := or.ReadOwner(ctx, r)
		if err != nil {
			t.Fatalf("%s: ReadOwner(%s, MaxAge %s): want no error, got %v", who, r.Name, maxAge, err)
		}
		if !got.Same(want) {
			t.Fatalf("%s: ReadOwner(%s, MaxAge %s): want %s, got %s", who, r.Name, maxAge, describe(want), describe(got))
		}
	}
	write := func(t *testing.T, who string, or drivers.OwnerRecorder, r drivers.Resource, rec *drivers.OwnerRecord) {
		t.Helper()
		if err := or.WriteOwner(ctx, r, rec); err != nil {
			t.Fatalf("%s: WriteOwner(%s, %s): want no error, got %v", who, r.Name, describe(rec), err)
		}
	}

	held := &drivers.OwnerRecord{Installation: "east", Namespace: "team", Name: "orders", UID: "uid-1", State: drivers.OwnerHeld}
	// Adopted, so a record's every field makes the round trip (and the
	// overwrite with handed, which is not, drops it).
	retained := &drivers.OwnerRecord{Installation: "east", Namespace: "team", Name: "orders", UID: "uid-1", State: drivers.OwnerRetained, Adopted: true}
	handed := &drivers.OwnerRecord{Installation: "east", Namespace: "team", Name: "orders", UID: "uid-1", State: drivers.OwnerHandedOver, To: "west"}
	other := &drivers.OwnerRecord{Installation: "west", Namespace: "ops", Name: "audit", UID: "uid-2", State: drivers.OwnerHeld}

	t.Run("missing resource has no record", func(t *testing.T) {
		read(t, "a", a, drivers.Resource{Name: name("never-made")}, 0, nil)
	})
	r1, r2 := res("one"), res("two")
	t.Run("never written has no record", func(t *testing.T) {
		read(t, "a", a, r1, 0, nil)
		read(t, "b", b, r1, 0, nil)
	})
	t.Run("a write is seen fresh by another backend", func(t *testing.T) {
		write(t, "a", a, r1, held)
		read(t, "b", b, r1, 0, held)
		read(t, "a", a, r1, 0, held)
	})
	t.Run("a backend reads its own write from memory", func(t *testing.T) {
		read(t, "a", a, r1, time.Hour, held)
	})
	t.Run("records are per resource", func(t *testing.T) {
		write(t, "b", b, r2, other)
		read(t, "a", a, r2, 0, other)
		read(t, "a", a, r1, 0, held)
	})
	t.Run("an overwrite replaces the record whole", func(t *testing.T) {
		write(t, "b", b, r1, retained)
		read(t, "a", a, r1, 0, retained)
		write(t, "a", a, r1, handed)
		read(t, "b", b, r1, 0, handed)
	})
	t.Run("a nil write removes the record", func(t *testing.T) {
		write(t, "a", a, r1, nil)
		read(t, "b", b, r1, 0, nil)
		read(t, "a", a, r1, 0, nil)
		read(t, "a", a, r1, time.Hour, nil)
		read(t, "b", b, r2, 0, other)
	})
	t.Run("a third backend loads what the others left", func(t *testing.T) {
		c := recorder(t)
		read(t, "c", c, r1, 0, nil)
		read(t, "c", c, r2, 0, other)
	})
	t.Run("removing a missing record succeeds", func(t *testing.T) {
		write(t, "b", b, r1, nil)
		read(t, "a", a, r1, 0, nil)
	})
}

func describe(rec *drivers.OwnerRecord) string {
	if rec == nil {
		return "no record"
	}
	return fmt.Sprintf("%+v", *rec)
}
