package kadm

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/Yolean/buckety-controller/drivers"
)

// TestBulkReadsLeaveNoClientMetadata: after a sweep and after a usage
// measurement, the client's metadata cache no longer holds the topics they
// read (RequestCachedMetadata has to ask the broker), while an ordinary
// cached read is answered without a request (the probe can tell the two
// apart).
func TestBulkReadsLeaveNoClientMetadata(t *testing.T) {
	f := newCountingFixture(t, &Driver{})
	ctx := context.Background()
	rs := make([]drivers.Resource, 20)
	topics := make([]string, len(rs))
	for i := range rs {
		rs[i] = drivers.Resource{Name: fmt.Sprintf("meta.%02d", i), Parameters: map[string]string{"partitions": "1"}}
		topics[i] = rs[i].Name
		if _, err := f.backend.Ensure(ctx, rs[i]); err != nil {
			t.Fatal(err)
		}
	}
	req := kmsg.NewPtrMetadataRequest()
	for _, tp := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(tp)
		req.Topics = append(req.Topics, rt)
	}
	// cachedMetadataRequests reads the topics' metadata through the
	// backend's client, accepting an hour-old cache, and says how many
	// Metadata requests that cost.
	cachedMetadataRequests := func() int64 {
		t.Helper()
		_, base := f.requests(t, nil)
		if _, err := f.backend.kgo.RequestCachedMetadata(ctx, req, time.Hour); err != nil {
			t.Fatal(err)
		}
		delta, _ := f.requests(t, base)
		return delta["Metadata"]
	}
	purged := func() {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for f.backend.purge.running.Load() {
			if time.Now().After(deadline) {
				t.Fatal("metadata purge still running after a minute's backstop")
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	for _, bulk := range []struct {
		name string
		read func() error
	}{
		{"sweep", func() error { _, err := f.backend.Sweep(ctx, rs); return err }},
		{"usage", func() error { _, err := f.backend.Usage(ctx, rs); return err }},
	} {
		if n := cachedMetadataRequests(); n != 1 && n != 0 {
			t.Fatalf("%s: warm-up read: %d Metadata requests", bulk.name, n)
		}
		if n := cachedMetadataRequests(); n != 0 {
			t.Fatalf("%s: a read of cached metadata cost %d Metadata requests, want 0: the probe cannot see the cache", bulk.name, n)
		}
		if err := bulk.read(); err != nil {
			t.Fatalf("%s: %v", bulk.name, err)
		}
		purged()
		if n := cachedMetadataRequests(); n != 1 {
			t.Errorf("after a %s: reading its topics' metadata cost %d Metadata requests, want 1 (the client's cache should not hold them)", bulk.name, n)
		}
	}
}
