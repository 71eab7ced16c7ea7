package buckety

import (
	"testing"
	"time"
)

// TestRecordMarkerPacesUnfoundRecords: a claim whose record the backend
// does not show is looked at again after one interval, then two, three,
// up to an hour, not every interval for ever.
func TestRecordMarkerPacesUnfoundRecords(t *testing.T) {
	m := &RecordMarker{Interval: 20 * time.Minute}
	now := time.Now()
	var got []time.Duration
	for range 5 {
		m.wait("c", now)
		got = append(got, m.waits["c"].next.Sub(now))
	}
	want := []time.Duration{20 * time.Minute, 40 * time.Minute, time.Hour, time.Hour, time.Hour}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("want waits %v, got %v", want, got)
		}
	}
}
