package s3

import (
	"slices"

	"github.com/invopop/jsonschema"

	"github.com/Yolean/buckety-controller/drivers"
)

// immutableRule is the CEL transition rule making a parameter immutable.
func immutableRule(k string) map[string]string {
	return map[string]string{
		"rule":      "has(self." + k + ") == has(oldSelf." + k + ") && (!has(self." + k + ") || self." + k + " == oldSelf." + k + ")",
		"message":   k + " is immutable after creation: a bucket's " + k + " is fixed when it is created",
		"fieldPath": "." + k,
	}
}

// softQuotaRule is the CEL rule keeping softQuota at most quota (sizes
// that are no quantity are the pattern's to refuse).
var softQuotaRule = map[string]string{
	"rule":      "!has(self.quota) || !has(self.softQuota) || !isQuantity(self.quota) || !isQuantity(self.softQuota) || quantity(self.softQuota).compareTo(quantity(self.quota)) <= 0",
	"message":   "softQuota must not exceed quota: the warning would come only after writes are refused",
	"fieldPath": "." + ParamSoftQuota,
}

// The keys of an s3 access Secret.
const (
	SecretEndpoint        = "endpoint"
	SecretBucket          = "bucket"
	SecretRegion          = "region"
	SecretAccessKeyID     = "accessKeyID"
	SecretSecretAccessKey = "secretAccessKey"
)

// secretKeys is the declaration of the s3 Secret: the one place its keys
// are listed.
var secretKeys = []drivers.SecretKey{
	{Name: SecretEndpoint, Description: "The S3 endpoint URL consumers use: the backend's consumerEndpoint, or its endpoint; for an R2 bucket with a jurisdiction, that jurisdiction's endpoint."},
	{Name: SecretBucket, Optional: true, Description: "The bucket name (the Buckety's status.backendResourceName), for an access naming one Buckety (spec.bucketyRef)."},
	{Name: SecretBuckets, Optional: true, Description: "For an access naming several Bucketies (spec.bucketyRefs): every bucket name, comma-separated, in the order spec.bucketyRefs names them."},
	{Name: SecretBucket, Optional: true, PerResource: true, Description: "For an access naming several Bucketies (spec.bucketyRefs): bucket.<key> is the bucket name of each, where <key> is the Buckety's name, or <namespace>_<name> for another namespace's."},
	{Name: SecretRegion, Optional: true, Description: "The bucket's region: its region parameter, or the backend's region; for an access naming several Bucketies (spec.bucketyRefs), the first's. Absent when neither is set."},
	{Name: SecretRegion, Optional: true, PerResource: true, Description: "For an access naming several Bucketies (spec.bucketyRefs): region.<key> is the region of each bucket whose region is not region's (keyed as bucket.<key>); absent for the others."},
	{Name: SecretAccessKeyID, Description: "The access key ID: the access's own key where the backend issues keys per access (credentials; ScopingNotImplemented=False): bky<installation marker>-<hash>-<serial> (bky<hash>-<serial> when issued before the installation was named) on minio and versitygw, the key IAM issued to the access's user of that name on aws and seaweedfs; otherwise the backend's own (not scoped to the bucket)."},
	{Name: SecretSecretAccessKey, Description: "The secret access key that goes with accessKeyID: for the access's own key, 40 random characters stored nowhere but this Secret."},
}

// SecretKeys implements drivers.Driver.
func (*Driver) SecretKeys() []drivers.SecretKey { return slices.Clone(secretKeys) }

// Schemas implements drivers.Driver.
func (*Driver) Schemas() drivers.Schemas {
	props := jsonschema.NewProperties()
	props.Set(ParamRegion, &jsonschema.Schema{
		Type: "string", Pattern: `^[a-z0-9-]{1,64}$`,
		Description: "The bucket's region (LocationConstraint), set at creation; immutable. Omitted: the backend's default region, nothing sent.",
	})
	props.Set(ParamVersioning, &jsonschema.Schema{
		Type: "string", Enum: []any{"true", "false"},
		Description: "Bucket versioning. \"false\" suspends versioning on a bucket where it was enabled (S3 cannot remove it). Reconciled: out-of-band changes are reverted. Omitted: never touched. Capability-gated (x-buckety-capabilities): only for backends with implementation aws, minio, versitygw or seaweedfs (R2 has no versioning; VersityGW needs --versioning-dir).",
	})
	props.Set(ParamLifecycle, &jsonschema.Schema{
		Type: "string", Pattern: `^\s*\{[\s\S]*\}\s*$`,
		Description: `The portable lifecycle subset as a JSON object: {"expirationDays": N, "prefix": "logs/", "abortIncompleteMultipartUploadDays": N}; at least one of the day counts. buckety owns one rule (ID "buckety"); reconciled. Omitted: buckety's rule is removed, other rules are left alone. Anything outside the subset is rejected. Capability-gated (x-buckety-capabilities): only for backends with implementation aws, minio or r2 (VersityGW does not implement lifecycle).`,
	})
	props.Set(ParamJurisdiction, &jsonschema.Schema{
		Type: "string", Enum: []any{"eu", "fedramp"},
		Description: "Cloudflare R2 data jurisdiction. Only for backends with implementation: r2; set at creation, immutable.",
	})
	props.Set(ParamQuota, &jsonschema.Schema{
		Type: "string", Pattern: byteSizePattern,
		Description: "The bucket's hard quota, a byte size in Kubernetes quantity syntax (10Gi, 500M, or a whole number of bytes; more than 0): writes past it are refused. Reconciled: a quota changed out of band is set back; removing the parameter removes the bucket's quota. Capability-gated (x-buckety-capabilities): only for backends with implementation minio (its admin API; each upload is checked against the size MinIO's scanner last counted plus the upload) or seaweedfs (its ?seaweedfs-quota extension; the gateway turns a bucket over its quota read-only within a minute). S3, R2 and VersityGW have no bucket quota.",
	})
	props.Set(ParamSoftQuota, &jsonschema.Schema{
		Type: "string", Pattern: byteSizePattern,
		Description: "The usage, a byte size as quota takes it, above which the Buckety reports QuotaWarning; nothing is refused. At most quota. Omitted: 90% of quota when quota is set, else no warning. Every implementation.",
	})
	props.Set(ParamAnonymousRead, &jsonschema.Schema{
		Type: "string", Enum: []any{"true", "false"},
		Description: "\"true\": anyone may read the bucket's objects by key without credentials (a bucket policy statement, Sid " + AnonymousReadSid + ", allowing s3:GetObject to Principal \"*\"); listing, writing and deleting stay refused. \"false\" or omitted: the statement is removed. Reconciled. Only where the backend's config sets allowAnonymousRead: true, and capability-gated (x-buckety-capabilities): only for backends with implementation minio, versitygw or seaweedfs (S3's Block Public Access refuses public policies; R2 has no bucket policies).",
	})
	params := &jsonschema.Schema{
		Type:                 "object",
		Title:                "s3 driver: Buckety spec.parameters",
		Description:          "Parameters of an S3 bucket. Values are strings.",
		Properties:           props,
		AdditionalProperties: jsonschema.FalseSchema,
		Extras: map[string]any{
			"x-kubernetes-validations": []map[string]string{immutableRule(ParamRegion), immutableRule(ParamJurisdiction), softQuotaRule},
			"x-buckety-immutable":      immutable,
			"x-buckety-capabilities":   capabilityGated,
		},
	}
	access := &jsonschema.Schema{
		Type:                 "object",
		Title:                "s3 driver: BucketyAccess spec.parameters",
		Description:          "The s3 driver has no access parameters in v1alpha1.",
		AdditionalProperties: jsonschema.FalseSchema,
	}
	return drivers.Schemas{Parameters: params, AccessParameters: access}
}
