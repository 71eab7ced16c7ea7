package harness

import (
	"context"
	"time"

	"github.com/Yolean/buckety-controller/drivers"
	s3driver "github.com/Yolean/buckety-controller/drivers/s3"
	s3test "github.com/Yolean/buckety-controller/test/s3"
)

// IssuedS3Keys lists the keys buckety issued on srv (MinIO: users named
// bky…, and service accounts of the legacy parent; VersityGW: users named
// bky…), read as the driver reads them, as the server's root, directly
// (not through a harness's counting proxy). The fault and scale harnesses
// count with it what is left of per-access keys.
func IssuedS3Keys(ctx context.Context, srv *s3test.Server) (keys map[string]bool, err error) {
	be, err := s3driver.New().Open(ctx, "issued-keys", &s3driver.Config{Implementation: srv.Implementation, Endpoint: srv.Endpoint, Region: srv.Region,
		ForcePathStyle: true, AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey, RequestTimeout: drivers.Duration{Duration: 30 * time.Second},
		Credentials: &s3driver.Credentials{AdminEndpoint: srv.AdminEndpoint}})
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := be.Close(); err == nil {
			err = cerr
		}
	}()
	return be.(*s3driver.Backend).IssuedCredentials(ctx)
}
