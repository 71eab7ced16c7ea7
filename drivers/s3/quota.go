package s3

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/s3/adminhttp"
	"github.com/Yolean/buckety-controller/drivers/s3/minioadmin"
)

// Hard bucket quotas, which S3 itself does not have: MinIO keeps them in
// its admin API (set-bucket-quota) and checks every upload against the
// size its scanner last counted plus the upload's own; SeaweedFS keeps
// them on the bucket (PUT /BUCKET?seaweedfs-quota, an S3 extension) and
// its gateway compares them with the bucket's volumes once a minute,
// turning a bucket over its quota read-only until it is under again. The
// parameter is reconciled: a quota changed out of band is set back, and
// one left on a bucket whose parameter is removed is removed (buckety
// cannot tell a quota it set from one an operator set).

// quotaStore reads and writes one implementation's hard bucket quotas, in
// bytes; 0 is none.
type quotaStore interface {
	get(ctx context.Context, bucket string) (int64, error)
	set(ctx context.Context, bucket string, bytes int64) error
}

// ensureQuota makes the bucket's hard quota the parameter's, or none.
func (b *Backend) ensureQuota(ctx context.Context, bucket string, p params, g *writeGate, res *drivers.EnsureResult) error {
	if b.quotas == nil {
		if p.quota > 0 {
			// Admitted on another implementation (the backend's config
			// changed since); admission refuses it now.
			res.Shortfalls = append(res.Shortfalls, drivers.Shortfall{Parameter: ParamQuota, Message: "this backend's implementation has no bucket quota; the bucket has no limit"})
		}
		return nil
	}
	cur, err := b.quotas.get(ctx, bucket)
	if err != nil {
		err = b.adminError("read the quota of bucket "+bucket, err)
	}
	switch {
	case err != nil && p.quota == 0 && !drivers.IsUnavailable(err):
		// Keys that may not read quotas, or a server without the API,
		// have no quota of buckety's to remove: a bucket that asks for
		// none is not held up by it.
		return nil
	case err != nil:
		return err
	case cur == p.quota:
		return nil
	}
	change := fmt.Sprintf("quota %s -> %s", quotaString(cur), quotaString(p.quota))
	if g.dryRun {
		res.Changes = append(res.Changes, change)
		return nil
	}
	if err := g.open(ctx); err != nil {
		return err
	}
	if err := b.quotas.set(ctx, bucket, p.quota); err != nil {
		return b.adminError("set the quota of bucket "+bucket, err)
	}
	res.Changes = append(res.Changes, change)
	return nil
}

// quotaString is a quota for Changes lines.
func quotaString(n int64) string {
	if n == 0 {
		return "none"
	}
	return fmt.Sprintf("%d bytes", n)
}

// minioQuotas are MinIO's hard quotas, through its admin API.
type minioQuotas struct{ admin *minioadmin.Client }

func (m minioQuotas) get(ctx context.Context, bucket string) (int64, error) {
	q, err := m.admin.BucketQuota(ctx, bucket)
	return int64(q.Bytes()), err
}

// set keeps what else the server stores with the quota (rate, requests):
// a read before the write.
func (m minioQuotas) set(ctx context.Context, bucket string, bytes int64) error {
	q, err := m.admin.BucketQuota(ctx, bucket)
	if err != nil {
		return err
	}
	return m.admin.SetBucketQuota(ctx, bucket, q.WithBytes(uint64(bytes)))
}

// seaweedQuotas are SeaweedFS's bucket quotas, through its S3 extension
// GET/PUT /BUCKET?seaweedfs-quota (actions s3:GetBucketQuota and
// s3:PutBucketQuota), signed as any S3 request with the backend's keys.
// Buckets are addressed by path, which SeaweedFS always serves.
type seaweedQuotas struct{ s *adminhttp.Signer }

// seaweedQuota is the extension's JSON body; a stored negative quota is a
// disabled one, answered as enabled false.
type seaweedQuota struct {
	Size    int64  `json:"quota_size"`
	Unit    string `json:"quota_unit"`
	Enabled bool   `json:"quota_enabled"`
}

var seaweedQuotaQuery = url.Values{"seaweedfs-quota": {""}}

func (w seaweedQuotas) get(ctx context.Context, bucket string) (int64, error) {
	data, err := w.call(ctx, http.MethodGet, bucket, nil, http.StatusOK)
	if err != nil {
		return 0, err
	}
	var q seaweedQuota
	if err := json.Unmarshal(data, &q); err != nil {
		return 0, fmt.Errorf("seaweedfs quota of bucket %s: the answer is not the ?seaweedfs-quota extension's (a SeaweedFS without it?): %w", bucket, err)
	}
	switch {
	case !q.Enabled:
		// A disabled quota limits nothing.
		return 0, nil
	case q.Unit != "B":
		return 0, fmt.Errorf("seaweedfs quota of bucket %s: answered in %q, not in bytes", bucket, q.Unit)
	}
	return q.Size, nil
}

func (w seaweedQuotas) set(ctx context.Context, bucket string, bytes int64) error {
	body, err := json.Marshal(seaweedQuota{Size: bytes, Unit: "B", Enabled: bytes > 0})
	if err != nil {
		return err
	}
	_, err = w.call(ctx, http.MethodPut, bucket, body, http.StatusNoContent, http.StatusOK)
	return err
}

// call sends one request of the extension and returns the answer's body.
func (w seaweedQuotas) call(ctx context.Context, method, bucket string, body []byte, want ...int) ([]byte, error) {
	ct := ""
	if body != nil {
		ct = "application/json"
	}
	resp, err := w.s.Send(ctx, method, "/"+url.PathEscape(bucket), seaweedQuotaQuery, body, ct)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := adminhttp.ReadAll(resp.Body, 64<<10)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(want, resp.StatusCode) {
		return nil, &seaweedQuotaError{Status: resp.StatusCode, Body: strings.TrimSpace(string(data))}
	}
	return data, nil
}

// seaweedQuotaError is a refusal of the quota extension: XML for S3
// errors (NoSuchBucket, AccessDenied), JSON for its own.
type seaweedQuotaError struct {
	Status int
	Body   string
}

func (e *seaweedQuotaError) Error() string {
	return fmt.Sprintf("seaweedfs quota: HTTP %d: %.300s", e.Status, e.Body)
}
