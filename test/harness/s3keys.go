package harness

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/Yolean/buckety-controller/drivers/s3/iam"
	s3test "github.com/Yolean/buckety-controller/test/s3"
)

// S3KeyOwners lists the credentials buckety minted on srv (IssuedS3Keys:
// keys on MinIO and VersityGW, IAM users on SeaweedFS) and maps every
// access key that works for one of them to it: on SeaweedFS the keys of
// each user, listed through its IAM API as the server's root; elsewhere
// the principal is the key. A Secret's accessKeyID is checked against
// owners, as on SeaweedFS it is a key IAM issued, not the user.
func S3KeyOwners(ctx context.Context, srv *s3test.Server) (principals map[string]bool, owners map[string]string, err error) {
	principals, err = IssuedS3Keys(ctx, srv)
	if err != nil {
		return nil, nil, err
	}
	owners = map[string]string{}
	if srv.Implementation != "seaweedfs" {
		for p := range principals {
			owners[p] = p
		}
		return principals, owners, nil
	}
	c := iam.New(srv.Endpoint, srv.Region, srv.AccessKey, srv.SecretKey, &http.Client{Timeout: 30 * time.Second})
	for u := range principals {
		keys, err := c.ListAccessKeys(ctx, u)
		if err != nil {
			return nil, nil, fmt.Errorf("list the keys of %s: %w", u, err)
		}
		for _, k := range keys {
			owners[k.AccessKeyID] = u
		}
	}
	return principals, owners, nil
}
