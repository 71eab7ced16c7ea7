package s3

import "github.com/Yolean/buckety-controller/drivers"

// DrainPolicy implements drivers.DrainDeclarer. A bucket's drain is on
// unless the backend's configuration sets drain.allow false: emptying a
// bucket is what its owner can do anyway with the bucket's own
// credentials; the drain does it without holding a client open for hours.
func (*Driver) DrainPolicy() drivers.DrainPolicy {
	return drivers.DrainPolicy{Supported: true, AllowedByDefault: true}
}
