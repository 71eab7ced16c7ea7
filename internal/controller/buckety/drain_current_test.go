package buckety

import (
	"testing"
	"time"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// TestDrainCurrentBetweenCounts: a bucket whose first step counted what
// it left shows its initial content at once, and between steps that
// cannot tell what remains (no listing to the end), current is the
// initial content less what was deleted, bytes included, never below
// zero; a step that counts again corrects it.
func TestDrainCurrentBetweenCounts(t *testing.T) {
	b := drainingBuckety(2, &v1.DrainSpec{Request: "r1"}, nil)
	drainRequest(b, t0)
	st := b.Status.Drain
	step := func(deleted, deletedBytes int64, remaining *drivers.Content) drivers.DrainStep {
		s := drivers.DrainStep{Deleted: drivers.Content{Known: true, Objects: deleted, Bytes: deletedBytes}, Requests: 20}
		if remaining != nil {
			s.Remaining = *remaining
		}
		return s
	}
	applyStep("s3", st, step(10000, 10000, &drivers.Content{Known: true, Objects: 40000, Bytes: 40000}), nil, *at(time.Second))
	if st.Initial == nil || st.Initial.Objects == nil || *st.Initial.Objects != 50000 {
		t.Fatalf("after a first step that counted 40000 left: want initial 50000 objects, got %+v", st.Initial)
	}
	if st.Initial.Bytes == nil || *st.Initial.Bytes != 50000 {
		t.Errorf("want initial bytes from the listing's sizes, 50000, got %+v", st.Initial.Bytes)
	}
	applyStep("s3", st, step(10000, 10000, nil), nil, *at(2 * time.Second))
	if st.Current == nil || st.Current.Objects == nil || *st.Current.Objects != 30000 || st.Current.Bytes == nil || *st.Current.Bytes != 30000 {
		t.Errorf("after 20000 of 50000 deleted, remaining unknown: want current 30000 objects and bytes, got %+v", st.Current)
	}
	// Content written meanwhile: the next counting step says more remains.
	applyStep("s3", st, step(10000, 10000, &drivers.Content{Known: true, Objects: 25000, Bytes: 25000}), nil, *at(3 * time.Second))
	if *st.Current.Objects != 25000 {
		t.Errorf("a step that counted 25000 left: want current 25000, got %+v", st.Current)
	}
	// More deleted than the start held (writes during the drain): zero, not negative.
	applyStep("s3", st, step(30000, 30000, nil), nil, *at(4 * time.Second))
	if *st.Current.Objects != 0 {
		t.Errorf("60000 deleted of an initial 50000: want current 0, got %+v", st.Current)
	}
}
