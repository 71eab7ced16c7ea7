package s3

import (
	"fmt"

	"github.com/Yolean/buckety-controller/drivers"
)

// An access naming several Bucketies (drivers.Access.Several, the API's
// spec.bucketyRefs) has one key with its role's rights on every bucket:
// one policy naming every bucket where the key's rights are a policy of
// its own (minio, aws, seaweedfs), and a grant in each bucket's policy on
// versitygw. Its Secret has buckets and bucket.<key> instead of bucket
// (severalData).

var _ drivers.SeveralGranter = (*Driver)(nil)

// GrantsSeveral implements drivers.SeveralGranter.
func (*Driver) GrantsSeveral() {}

// plainBuckets checks that every bucket is a plain S3 bucket name:
// anything else, notably '*' and '?', would make a policy's ARNs match
// other buckets. At least one.
func plainBuckets(buckets []string) error {
	if len(buckets) == 0 {
		return fmt.Errorf("no bucket")
	}
	for _, b := range buckets {
		if !bucketNameRE.MatchString(b) {
			return fmt.Errorf("bucket %q is not a plain S3 bucket name", b)
		}
	}
	return nil
}

// fitUserPolicy refuses a key's policy that the server would not keep
// (server.userPolicyMaxBytes), naming what makes it long: the buckets of
// spec.bucketyRefs.
func (b *Backend) fitUserPolicy(a drivers.Access, doc []byte) error {
	limit := b.srv.userPolicyMaxBytes
	if limit == 0 || len(doc) <= limit {
		return nil
	}
	return &drivers.RefusedError{Err: fmt.Errorf("s3: backend %s: access %s/%s: the policy of its key, naming %d buckets, is %d bytes, and implementation %s keeps at most %d: name fewer Bucketies (or Bucketies with shorter bucket names) in spec.bucketyRefs",
		b.name, a.Namespace, a.Name, len(a.Resources()), len(doc), b.cfg.Implementation, limit)}
}

// Secret keys of the several-resource shape.
const (
	// SecretBuckets lists the buckets of an access naming several.
	SecretBuckets = "buckets"
)

// severalData sets the keys naming the buckets of a's Secret: bucket for
// an access naming one; buckets and bucket.<key> for one naming several,
// with region.<key> for each bucket whose region is not region's (the
// first's, already in data when set). regionOf is a bucket's region ("":
// none).
func severalData(a drivers.Access, data map[string][]byte, regionOf func(map[string]string) string) {
	if len(a.Several) == 0 {
		data[SecretBucket] = []byte(a.Resource)
		return
	}
	data[SecretBuckets] = []byte(drivers.SeveralList(a.Resources()))
	first := string(data[SecretRegion])
	for _, r := range a.Several {
		data[drivers.SeveralKey(SecretBucket, r.Key)] = []byte(r.Name)
		if reg := regionOf(r.Parameters); reg != first && reg != "" {
			data[drivers.SeveralKey(SecretRegion, r.Key)] = []byte(reg)
		}
	}
}

// sameJurisdiction refuses several buckets in different R2
// jurisdictions: each has its own endpoint, and the Secret has one.
func (b *Backend) sameJurisdiction(a drivers.Access) error {
	first := parseParams(a.ResourceParameters).jurisdiction
	for _, r := range a.Several {
		if j := parseParams(r.Parameters).jurisdiction; j != first {
			return fmt.Errorf("s3: backend %s: access %s/%s: spec.bucketyRefs names buckets in different jurisdictions (%q, %q), whose endpoints differ, and the Secret has one endpoint", b.name, a.Namespace, a.Name, first, j)
		}
	}
	return nil
}
