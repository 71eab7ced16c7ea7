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
	{Name: SecretBucket, Description: "The bucket name (the Buckety's status.backendResourceName)."},
	{Name: SecretRegion, Optional: true, Description: "The bucket's region: its region parameter, or the backend's region. Absent when neither is set."},
	{Name: SecretAccessKeyID, Description: "The access key ID: the access's own key where the backend issues keys per access (credentials; ScopingNotImplemented=False): bky<hash>-<serial> on minio and versitygw, the key IAM issued to the access's user bky<hash>-<serial> on aws and seaweedfs; otherwise the backend's own (not scoped to the bucket)."},
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
		Type: "string", Pattern: `^\s*\{.*\}\s*$`,
		Description: `The portable lifecycle subset as a JSON object: {"expirationDays": N, "prefix": "logs/", "abortIncompleteMultipartUploadDays": N}; at least one of the day counts. buckety owns one rule (ID "buckety"); reconciled. Omitted: buckety's rule is removed, other rules are left alone. Anything outside the subset is rejected. Capability-gated (x-buckety-capabilities): only for backends with implementation aws, minio or r2 (VersityGW does not implement lifecycle).`,
	})
	props.Set(ParamJurisdiction, &jsonschema.Schema{
		Type: "string", Enum: []any{"eu", "fedramp"},
		Description: "Cloudflare R2 data jurisdiction. Only for backends with implementation: r2; set at creation, immutable.",
	})
	params := &jsonschema.Schema{
		Type:                 "object",
		Title:                "s3 driver: Buckety spec.parameters",
		Description:          "Parameters of an S3 bucket. Values are strings.",
		Properties:           props,
		AdditionalProperties: jsonschema.FalseSchema,
		Extras: map[string]any{
			"x-kubernetes-validations": []map[string]string{immutableRule(ParamRegion), immutableRule(ParamJurisdiction)},
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
