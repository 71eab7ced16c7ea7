package s3

import (
	"context"
	"testing"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/drivertest"
)

// TestGrantRegion: a Secret's region is the bucket's region parameter, else
// the backend's region, else absent. (The conformance suite checks the
// Secrets of backends on real servers, which all have a region.)
func TestGrantRegion(t *testing.T) {
	noRegion := &Backend{cfg: &Config{Endpoint: "http://x:1", AccessKeyID: "ak", SecretAccessKey: "sk"}}
	g, err := noRegion.Grant(context.Background(), drivers.Access{Resource: "b"})
	if _, ok := g.Data[SecretRegion]; ok || err != nil {
		t.Errorf("no region configured: want no region key, got %q %v", g.Data, err)
	}
	drivertest.CheckGrant(t, New().SecretKeys(), g)
	g, err = noRegion.Grant(context.Background(), drivers.Access{Resource: "b", ResourceParameters: map[string]string{ParamRegion: "eu-north-1"}})
	if string(g.Data[SecretRegion]) != "eu-north-1" || err != nil {
		t.Errorf("bucket region: want eu-north-1 in the Secret, got %q %v", g.Data, err)
	}
}
