package s3

import "github.com/Yolean/buckety-controller/drivers"

// The S3 actions each role's per-access key is allowed, on its bucket only,
// where the implementation issues credentials per access (minio: the
// user's canned policy; versitygw: bucket-policy statements; aws,
// seaweedfs: the IAM user's inline policy). Never
// bucket creation, deletion, policy, versioning or lifecycle: those are
// the controller's.
//
// Bucket-level actions apply to arn:aws:s3:::BUCKET, object-level ones to
// arn:aws:s3:::BUCKET/*.

// roleActions is a role's actions, split by the resource they apply to.
type roleActions struct {
	Bucket []string
	Object []string
}

// actionsOf maps a role (v1alpha1 Role) to its actions.
var actionsOf = map[drivers.Role]roleActions{
	drivers.RoleReadWrite: {
		Bucket: []string{"s3:ListBucket", "s3:GetBucketLocation", "s3:ListBucketMultipartUploads"},
		Object: []string{"s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"},
	},
	drivers.RoleReadOnly: {
		Bucket: []string{"s3:ListBucket", "s3:GetBucketLocation"},
		Object: []string{"s3:GetObject"},
	},
	drivers.RoleWriteOnly: {
		Bucket: []string{"s3:GetBucketLocation", "s3:ListBucketMultipartUploads"},
		Object: []string{"s3:PutObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"},
	},
}
