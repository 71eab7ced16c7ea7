package minioadmin

import "testing"

// TestBucketQuotaBytes: the limit MinIO enforces, from either generation's
// field, only for the hard type; WithBytes writes both and keeps the rest.
func TestBucketQuotaBytes(t *testing.T) {
	for _, c := range []struct {
		name string
		q    BucketQuota
		want uint64
	}{
		{"none", BucketQuota{}, 0},
		{"size", BucketQuota{Size: 10, Quota: 20, Type: QuotaHard}, 10},
		{"before August 2023: quota only", BucketQuota{Quota: 20, Type: QuotaHard}, 20},
		{"not hard", BucketQuota{Size: 10, Type: "fifo"}, 0},
	} {
		if got := c.q.Bytes(); got != c.want {
			t.Errorf("%s: want %d, got %d", c.name, c.want, got)
		}
	}
	q := BucketQuota{Rate: 5, Requests: 7}.WithBytes(1 << 20)
	if q != (BucketQuota{Quota: 1 << 20, Size: 1 << 20, Rate: 5, Requests: 7, Type: QuotaHard}) {
		t.Errorf("WithBytes(1 MiB): got %+v", q)
	}
	if q = q.WithBytes(0); q.Bytes() != 0 || q.Type != "" || q.Rate != 5 {
		t.Errorf("WithBytes(0): want no limit, rate kept, got %+v", q)
	}
}
