package s3

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/drivertest"
	s3test "github.com/Yolean/buckety-controller/test/s3"
)

// TestConformance runs the drivers' conformance suite (drivers/drivertest)
// on the s3 driver: its validation cases, and the backend contract against
// real VersityGW and MinIO servers (test/s3).
func TestConformance(t *testing.T) {
	suite.Run(t)
}

// TestDrainContract runs the drain contract on every server the driver is
// tested on: VersityGW, MinIO and SeaweedFS; and on VersityGW without a
// versioning directory, whose ListObjectVersions answers NotImplemented,
// so the drain lists current objects instead (no versioned bucket there).
func TestDrainContract(t *testing.T) {
	for _, impl := range ownerImplementations {
		t.Run(impl, func(t *testing.T) {
			drivertest.DrainContract(t, newFixture(t, impl, s3test.Options{}, nil).drainCase())
		})
	}
	t.Run("versitygw-without-versions", func(t *testing.T) {
		dc := newFixture(t, ImplVersityGW, s3test.Options{NoVersioning: true}, nil).drainCase()
		dc.Fills = dc.Fills[:1]
		drivertest.DrainContract(t, dc)
	})
}

// consumerEndpoint is the endpoint the suite's backends write into Secrets.
const consumerEndpoint = "http://s3.example:9000"

var suite = &drivertest.Suite{
	Driver:     New(),
	Names:      nameCases,
	Parameters: parameterCases(),
	Accesses:   accessCases,
	Configs:    configCases,
	Grants: []drivertest.GrantCase{
		{Name: "read-write: the backend's keys, unscoped", Access: drivers.Access{Resource: "b1", Role: "ReadWrite"}, Want: map[string]string{SecretBucket: "b1"}},
		{Name: "the bucket's region wins", Access: drivers.Access{Resource: "b2", ResourceParameters: map[string]string{ParamRegion: "eu-north-1"}},
			Want: map[string]string{SecretBucket: "b2", SecretRegion: "eu-north-1"}},
	},
	Services: []drivertest.Service{
		{
			Name:          "versitygw",
			Open:          openService("versitygw"),
			Params:        map[string]string{ParamVersioning: "true"},
			CreateChange:  "create bucket %s",
			ContentDetail: `holds objects (first: "a/b.txt")`,
			Steps: []drivertest.Step{
				{Params: map[string]string{ParamVersioning: "false"}, Changes: []string{"versioning Enabled -> Suspended"}},
				{Params: map[string]string{ParamVersioning: "true"}, Changes: []string{"versioning Suspended -> Enabled"}},
				{Params: map[string]string{ParamVersioning: "true", ParamAnonymousRead: "true"}, Changes: []string{anonymousReadAllowed}},
				{Params: map[string]string{ParamVersioning: "true", ParamAnonymousRead: "false"}, Changes: []string{anonymousReadRemoved}},
			},
			Drift:          map[string]string{ParamRegion: "us-west-2"},
			DriftParameter: ParamRegion,
		},
		{
			Name:          "minio",
			Open:          openService("minio"),
			Params:        map[string]string{ParamLifecycle: `{"expirationDays": 30}`},
			CreateChange:  "create bucket %s",
			ContentDetail: `holds objects (first: "a/b.txt")`,
			Steps: []drivertest.Step{
				{Params: map[string]string{ParamVersioning: "true", ParamLifecycle: `{"expirationDays": 7}`},
					Changes: []string{"versioning never enabled -> Enabled", "lifecycle replaced (1 rules on the bucket) with: expire after 7d"}},
				// Versioning suspended, buckety's lifecycle rule removed.
				{Params: map[string]string{ParamVersioning: "false"},
					Changes: []string{"versioning Enabled -> Suspended", "lifecycle rule removed (not in spec)"}},
				{Params: map[string]string{ParamVersioning: "false", ParamQuota: "1Mi", ParamAnonymousRead: "true"},
					Changes: []string{"quota none -> 1048576 bytes", anonymousReadAllowed}},
				{Params: map[string]string{ParamVersioning: "false", ParamQuota: "2Mi", ParamSoftQuota: "1Mi", ParamAnonymousRead: "true"},
					Changes: []string{"quota 1048576 bytes -> 2097152 bytes"}},
				// Both removed with their parameters.
				{Params: map[string]string{ParamVersioning: "false"}, Changes: []string{"quota 2097152 bytes -> none", anonymousReadRemoved}},
			},
			Drift:          map[string]string{ParamRegion: "us-west-2"},
			DriftParameter: ParamRegion,
		},
	},
}

// The Changes lines of the anonymous read statement.
const (
	anonymousReadAllowed = "anonymous read allowed (bucket policy statement buckety-anonymous-read: s3:GetObject for anyone)"
	anonymousReadRemoved = "anonymous read removed (bucket policy statement buckety-anonymous-read)"
)

// openService opens the suite's backends on a server of one implementation.
func openService(impl string) func(t *testing.T, timeout time.Duration) *drivertest.Target {
	return func(t *testing.T, timeout time.Duration) *drivertest.Target {
		return newFixture(t, impl, s3test.Options{}, func(c *Config) {
			c.ConsumerEndpoint = consumerEndpoint
			c.RequestTimeout = drivers.Duration{Duration: timeout}
			c.AllowAnonymousRead = true
		}).target()
	}
}

// target is the fixture as the conformance suite sees it.
func (f *fixture) target() *drivertest.Target {
	return &drivertest.Target{
		Backend:    f.backend,
		Requests:   f.counter,
		PutContent: func(t testing.TB, r drivers.Resource) { f.put(t, r.Name, "a/b.txt", "hello") },
		Snapshot:   f.snapshot,
		SecretData: map[string]string{SecretEndpoint: consumerEndpoint, SecretRegion: f.srv.Region,
			SecretAccessKeyID: f.srv.AccessKey, SecretSecretAccessKey: f.srv.SecretKey},
		Stop: f.srv.Stop,
	}
}

// snapshot is a bucket's versioning, lifecycle rules, policy and quota,
// read out of band.
func (f *fixture) snapshot(t testing.TB, r drivers.Resource) string {
	t.Helper()
	ctx := context.Background()
	v, err := f.raw.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(r.Name)})
	if err != nil {
		t.Fatal(err)
	}
	var rules []string
	lc, err := f.raw.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String(r.Name)})
	switch {
	case isNotImplemented(err), isCode(err, "NoSuchLifecycleConfiguration"):
	case err != nil:
		t.Fatal(err)
	default:
		for _, r := range lc.Rules {
			var days int32
			if r.Expiration != nil {
				days = aws.ToInt32(r.Expiration.Days)
			}
			rules = append(rules, fmt.Sprintf("%s: expire after %dd", aws.ToString(r.ID), days))
		}
	}
	return fmt.Sprintf("versioning %q, lifecycle rules %q, policy %q, quota %d", v.Status, rules, f.policy(t, r.Name), f.quota(t, r.Name))
}

// policy is a bucket's policy, read out of band ("" for none).
func (f *fixture) policy(t testing.TB, bucket string) string {
	t.Helper()
	out, err := f.raw.GetBucketPolicy(context.Background(), &s3.GetBucketPolicyInput{Bucket: aws.String(bucket)})
	if isCode(err, "NoSuchBucketPolicy") {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.Policy)
}

// quota is a bucket's hard quota in bytes (0: none), read through the
// backend's own quota store (an admin API the SDK does not speak); 0 on
// implementations without quotas.
func (f *fixture) quota(t testing.TB, bucket string) int64 {
	t.Helper()
	if f.backend.quotas == nil {
		return 0
	}
	n, err := f.backend.quotas.get(context.Background(), bucket)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

var nameCases = []drivertest.NameCase{
	{Name: "tenant1-orders"},
	{Name: "abc"},
	{Name: strings.Repeat("a", 63)},
	{Name: "ab", Errs: []string{"3 to 63 characters, this one is 2"}},
	{Name: strings.Repeat("a", 64), Errs: []string{"3 to 63 characters, this one is 64"}},
	{Name: "Tenant1", Errs: []string{`only lowercase letters, digits, '-' and '.'; found "T"`, "starts with a lowercase letter or digit"}},
	{Name: "ten_ant", Errs: []string{`found "_"`}},
	{Name: "-abc", Errs: []string{"starts with a lowercase letter or digit"}},
	{Name: "abc-", Errs: []string{"ends with a lowercase letter or digit"}},
	{Name: "a..b", Errs: []string{`no two adjacent periods`}},
	{Name: "192.168.5.4", Errs: []string{"not formatted as an IP address"}},
	{Name: "xn--abc", Errs: []string{`does not start with "xn--"`}},
	{Name: "data-s3alias", Errs: []string{`does not end with "-s3alias"`}},
	{Name: "logs.tenant1", Warns: []string{"contains '.'"}},
}

// parameterCases are per implementation: capabilities gate parameters.
func parameterCases() []drivertest.ParametersCase {
	r2 := &Config{Implementation: ImplR2}
	minio := &Config{Implementation: ImplMinIO}
	versitygw := &Config{Implementation: ImplVersityGW}
	aws := &Config{Implementation: ImplAWS}
	none := &Config{}
	lc := `{"expirationDays": 30}`
	return []drivertest.ParametersCase{
		{Name: "all common", Config: minio, New: map[string]string{"region": "eu-north-1", "versioning": "true", "lifecycle": `{"expirationDays": 30, "prefix": "logs/", "abortIncompleteMultipartUploadDays": 7}`}},
		{Name: "bad versioning", Config: minio, New: map[string]string{"versioning": "yes"}, Errs: []string{`spec.parameters[versioning]: Unsupported value: "yes": supported values: "true", "false"`}},
		{Name: "bad region", Config: minio, New: map[string]string{"region": "EU North"}, Errs: []string{`spec.parameters[region]: Invalid value: "EU North"`}},
		{Name: "lifecycle outside the subset", Config: minio, New: map[string]string{"lifecycle": `{"expirationDays": 3, "transitions": [{"days": 1, "storageClass": "GLACIER"}]}`},
			Errs: []string{`spec.parameters[lifecycle]`, `unknown field "transitions"`, "anything else is not supported"}, NumErrs: 1},
		{Name: "lifecycle not json", Config: minio, New: map[string]string{"lifecycle": `expire=30`}, Errs: []string{`spec.parameters[lifecycle]`}},
		{Name: "lifecycle empty", Config: minio, New: map[string]string{"lifecycle": `{"prefix": "x/"}`}, Errs: []string{"set expirationDays and/or abortIncompleteMultipartUploadDays"}},
		{Name: "lifecycle negative", Config: minio, New: map[string]string{"lifecycle": `{"expirationDays": -1}`}, Errs: []string{"days must be positive"}},
		{Name: "unknown key", Config: minio, New: map[string]string{"acl": "public-read"}, Errs: []string{`spec.parameters[acl]: Unsupported value: "acl": supported values: "anonymousRead", "jurisdiction", "lifecycle", "quota", "region", "softQuota", "versioning"`}},
		{Name: "jurisdiction on r2", Config: r2, New: map[string]string{"jurisdiction": "eu"}},
		{Name: "bad jurisdiction on r2", Config: r2, New: map[string]string{"jurisdiction": "us"}, Errs: []string{`spec.parameters[jurisdiction]: Unsupported value: "us": supported values: "eu", "fedramp"`}},
		{Name: "jurisdiction on minio", Config: minio, New: map[string]string{"jurisdiction": "eu"}, Errs: []string{`spec.parameters[jurisdiction]: Forbidden: jurisdiction is only supported for implementation r2, and the backend's implementation is minio`}},
		{Name: "jurisdiction without implementation", Config: none, New: map[string]string{"jurisdiction": "eu"}, Errs: []string{`jurisdiction is only supported for implementation r2, and the backend sets no implementation`}},
		{Name: "region immutable", Config: minio, Old: map[string]string{"region": "eu-north-1"}, New: map[string]string{"region": "us-east-1"}, Errs: []string{`spec.parameters[region]: Forbidden: is immutable after creation (was eu-north-1, now us-east-1)`}},
		{Name: "region added", Config: minio, Old: map[string]string{}, New: map[string]string{"region": "us-east-1"}, Errs: []string{`(was unset, now us-east-1)`}},
		{Name: "jurisdiction immutable", Config: r2, Old: map[string]string{"jurisdiction": "eu"}, New: map[string]string{}, Errs: []string{`spec.parameters[jurisdiction]: Forbidden: is immutable after creation (was eu, now unset)`}},
		{Name: "versioning off warns", Config: minio, Old: map[string]string{"versioning": "true"}, New: map[string]string{"versioning": "false"}, Warns: []string{"S3 cannot turn versioning off; it is suspended"}},
		{Name: "lifecycle mutable", Config: minio, Old: map[string]string{"lifecycle": `{"expirationDays": 1}`}, New: map[string]string{"lifecycle": `{"expirationDays": 2}`}},
		// Capability gating of what some services answer NotImplemented for.
		{Name: "lifecycle on aws", Config: aws, New: map[string]string{"lifecycle": lc}},
		{Name: "lifecycle on r2", Config: r2, New: map[string]string{"lifecycle": lc}},
		{Name: "lifecycle on versitygw", Config: versitygw, New: map[string]string{"lifecycle": lc},
			Errs: []string{"spec.parameters[lifecycle]: Forbidden: lifecycle is only supported for implementation aws, minio, r2, and the backend's implementation is versitygw, which does not implement bucket lifecycle: remove lifecycle, or use a backend whose implementation is aws, minio, r2"}},
		{Name: "lifecycle without implementation", Config: none, New: map[string]string{"lifecycle": lc},
			Errs: []string{"lifecycle is only supported for implementation aws, minio, r2, and the backend sets no implementation: remove lifecycle, or ask the platform team to set implementation: (aws, minio, r2) in the backend's config if its service implements bucket lifecycle"}},
		{Name: "lifecycle added on versitygw", Config: versitygw, Old: map[string]string{}, New: map[string]string{"lifecycle": lc}, Errs: []string{"the backend's implementation is versitygw"}},
		{Name: "lifecycle changed on versitygw", Config: versitygw, Old: map[string]string{"lifecycle": `{"expirationDays": 1}`}, New: map[string]string{"lifecycle": lc}, Errs: []string{"the backend's implementation is versitygw"}},
		{Name: "lifecycle kept on versitygw ratchets", Config: versitygw, Old: map[string]string{"lifecycle": lc}, New: map[string]string{"lifecycle": lc, "versioning": "true"},
			Warns: []string{"spec.parameters[lifecycle]: kept because it is unchanged, but lifecycle is only supported for implementation aws, minio, r2"}},
		{Name: "versioning on versitygw", Config: versitygw, New: map[string]string{"versioning": "true"}},
		{Name: "versioning on aws", Config: aws, New: map[string]string{"versioning": "false"}},
		{Name: "versioning on r2", Config: r2, New: map[string]string{"versioning": "true"},
			Errs: []string{"spec.parameters[versioning]: Forbidden: versioning is only supported for implementation aws, minio, versitygw, seaweedfs, and the backend's implementation is r2, which does not implement bucket versioning"}},
		{Name: "versioning without implementation", Config: none, New: map[string]string{"versioning": "true"}, Errs: []string{"versioning is only supported for implementation aws, minio, versitygw, seaweedfs, and the backend sets no implementation"}},
		{Name: "region is common", Config: none, New: map[string]string{"region": "eu-north-1"}},
		// Quotas: the hard one where the service has one, the soft one everywhere.
		{Name: "quota on minio", Config: minio, New: map[string]string{"quota": "10Gi", "softQuota": "8Gi"}},
		{Name: "quota on seaweedfs", Config: &Config{Implementation: ImplSeaweedFS}, New: map[string]string{"quota": "500M"}},
		{Name: "quota on versitygw", Config: versitygw, New: map[string]string{"quota": "10Gi"},
			Errs: []string{"spec.parameters[quota]: Forbidden: quota is only supported for implementation minio, seaweedfs, and the backend's implementation is versitygw, which does not implement a bucket quota (VersityGW has no bucket quota; a quota of the filesystem under it is the operator's): remove quota, or use a backend whose implementation is minio, seaweedfs; softQuota, a warning without a limit, is allowed on every implementation"}},
		{Name: "quota on aws", Config: aws, New: map[string]string{"quota": "10Gi"}, Errs: []string{"(S3 has no bucket quota)"}},
		{Name: "quota on r2", Config: r2, New: map[string]string{"quota": "10Gi"}, Errs: []string{"(R2 has no bucket quota)"}},
		{Name: "quota kept on versitygw ratchets", Config: versitygw, Old: map[string]string{"quota": "1Gi"}, New: map[string]string{"quota": "1Gi", "versioning": "true"},
			Warns: []string{"spec.parameters[quota]: kept because it is unchanged, but quota is only supported for implementation minio, seaweedfs"}},
		{Name: "softQuota everywhere", Config: none, New: map[string]string{"softQuota": "100Gi"}},
		{Name: "softQuota above quota", Config: minio, New: map[string]string{"quota": "1G", "softQuota": "1Gi"},
			Errs: []string{"spec.parameters[softQuota]: Invalid value: \"1Gi\": softQuota (1Gi, 1073741824 bytes) must not exceed quota (1G, 1000000000 bytes)"}},
		{Name: "quota not a size", Config: minio, New: map[string]string{"quota": "10GB"}, Errs: []string{"spec.parameters[quota]: Invalid value: \"10GB\": want a byte size"}},
		{Name: "quota zero", Config: minio, New: map[string]string{"quota": "0"}, Errs: []string{"spec.parameters[quota]"}},
		{Name: "softQuota fractional", Config: minio, New: map[string]string{"softQuota": "1.5"}, Errs: []string{"spec.parameters[softQuota]: Invalid value: \"1.5\": 1.5 is 1.500 bytes, not a whole number of bytes"}},
		// Anonymous read: the implementation and the backend's config decide.
		{Name: "anonymousRead allowed", Config: &Config{Implementation: ImplVersityGW, AllowAnonymousRead: true}, New: map[string]string{"anonymousRead": "true"}},
		{Name: "anonymousRead not allowed by the config", Config: minio, New: map[string]string{"anonymousRead": "true"},
			Errs: []string{"spec.parameters[anonymousRead]: Forbidden: anonymousRead needs allowAnonymousRead: true in the backend's s3 config"}},
		{Name: "anonymousRead kept when the config stopped allowing it", Config: minio, Old: map[string]string{"anonymousRead": "true"}, New: map[string]string{"anonymousRead": "true", "versioning": "true"},
			Warns: []string{"spec.parameters[anonymousRead]: kept because it is unchanged, but anonymousRead needs allowAnonymousRead"}},
		{Name: "anonymousRead on aws", Config: &Config{Implementation: ImplAWS, AllowAnonymousRead: true}, New: map[string]string{"anonymousRead": "true"},
			Errs: []string{"which does not implement anonymous reads through a bucket policy (S3 Block Public Access"}},
		{Name: "anonymousRead on r2", Config: r2, New: map[string]string{"anonymousRead": "false"}, Errs: []string{"(R2 has no bucket policies"}},
		{Name: "anonymousRead yes", Config: &Config{Implementation: ImplMinIO, AllowAnonymousRead: true}, New: map[string]string{"anonymousRead": "yes"},
			Errs: []string{`spec.parameters[anonymousRead]: Unsupported value: "yes": supported values: "true", "false"`}},
	}
}

var accessCases = []drivertest.AccessCase{
	{Name: "read-write", Role: "ReadWrite", Warns: []string{"not a key scoped to this bucket"}},
	{Name: "read-only with a parameter", Role: "ReadOnly", Params: map[string]string{"prefix": "x"},
		Errs:  []string{`spec.parameters[prefix]: Invalid value: "prefix": the s3 driver has no access parameters`},
		Warns: []string{"hands every s3 access the backend's own keys", "role ReadOnly is not enforced"}},
	{Name: "read-only, a key per access on minio", Role: "ReadOnly", Config: withKeys(Config{Implementation: ImplMinIO, Endpoint: "http://s3:9000", Credentials: &Credentials{}})},
	{Name: "write-only, a key per access on versitygw", Role: "WriteOnly", Config: withKeys(Config{Implementation: ImplVersityGW, Endpoint: "http://s3:7070", Credentials: &Credentials{AdminEndpoint: "http://s3:7071"}})},
	{Name: "read-only, an IAM user per access on aws", Role: "ReadOnly", Config: withKeys(Config{Implementation: ImplAWS, Region: "eu-north-1", Credentials: &Credentials{}})},
	{Name: "write-only, an IAM user per access on seaweedfs", Role: "WriteOnly", Config: withKeys(Config{Implementation: ImplSeaweedFS, Endpoint: "http://s3:8333", Credentials: &Credentials{}})},
	{Name: "read-only, r2 without credentials does not scope", Role: "ReadOnly", Config: withKeys(Config{Implementation: ImplR2, Endpoint: "https://acct.r2.cloudflarestorage.com"}),
		Warns: []string{"hands every s3 access the backend's own keys", "role ReadOnly is not enforced on this backend"}},
}

// withKeys gives a config the keys every config needs.
func withKeys(c Config) *Config { c.AccessKeyID, c.SecretAccessKey = "a", "s"; return &c }

var configCases = []drivertest.ConfigCase{
	{Name: "minimal", Config: withKeys(Config{Endpoint: "http://s3:9000"})},
	{Name: "aws needs no endpoint", Config: withKeys(Config{Implementation: "aws", Region: "eu-north-1"})},
	{Name: "unknown implementation", Config: withKeys(Config{Implementation: "ceph", Endpoint: "http://s3:9000"}), Errs: []string{`config.implementation: Unsupported value: "ceph": supported values: "aws", "r2", "minio", "versitygw"`}},
	{Name: "no endpoint", Config: withKeys(Config{}), Errs: []string{"config.endpoint: Required value"}},
	{Name: "endpoint without scheme", Config: withKeys(Config{Endpoint: "s3:9000"}), Errs: []string{`config.endpoint: Invalid value: "s3:9000": want an http:// or https:// URL`}},
	{Name: "endpoint with path", Config: withKeys(Config{Endpoint: "http://s3:9000/bucket"}), Errs: []string{"want the endpoint without a path"}},
	{Name: "no keys", Config: &Config{Endpoint: "http://s3:9000"}, Errs: []string{"config.accessKeyID: Required value", "config.secretAccessKey: Required value"}},
	{Name: "bad region", Config: withKeys(Config{Endpoint: "http://s3:9000", Region: "EU"}), Errs: []string{`config.region: Invalid value: "EU"`}},
	{Name: "bad slice", Config: withKeys(Config{Endpoint: "http://s3:9000", DeleteSlice: 5000}), Errs: []string{"config.deleteSlice: Invalid value: 5000: must be 1 to 1000"}},
	{Name: "jurisdiction endpoints on r2", Config: withKeys(Config{Implementation: "r2", Endpoint: "https://acct.r2.cloudflarestorage.com", JurisdictionEndpoints: map[string]string{"eu": "https://eu.example:9000"}})},
	{Name: "jurisdiction endpoints elsewhere", Config: withKeys(Config{Implementation: "minio", Endpoint: "http://s3:9000", JurisdictionEndpoints: map[string]string{"eu": "http://eu:9000"}}),
		Errs: []string{"config.jurisdictionEndpoints: Forbidden: jurisdictions are Cloudflare R2's: set implementation: r2, or remove jurisdictionEndpoints (implementation is minio)"}},
	{Name: "unknown jurisdiction endpoint", Config: withKeys(Config{Implementation: "r2", Endpoint: "https://acct.r2.cloudflarestorage.com", JurisdictionEndpoints: map[string]string{"us": "https://us.example", "eu": "eu.example"}}),
		Errs: []string{`config.jurisdictionEndpoints[eu]: Invalid value: "eu.example": want an http:// or https:// URL`, `config.jurisdictionEndpoints[us]: Unsupported value: "us": supported values: "eu", "fedramp"`}},
	{Name: "bad ca", Config: withKeys(Config{Endpoint: "https://s3:9000", CA: "nope"}), Errs: []string{"config.caFile: Invalid value: no PEM certificate found"}},
	// credentials.mode: one of two values; PerAccess only where keys are
	// issued; Shared anywhere, without the issuer settings it would not read.
	{Name: "credentials mode unknown", Config: withKeys(Config{Implementation: "minio", Endpoint: "http://s3:9000", Credentials: &Credentials{Mode: "Scoped"}}),
		Errs: []string{`config.credentials.mode: Unsupported value: "Scoped": supported values: "PerAccess", "Shared"`}},
	{Name: "credentials mode PerAccess on r2", Config: withKeys(Config{Implementation: "r2", Endpoint: "https://acct.r2.cloudflarestorage.com", Credentials: &Credentials{Mode: drivers.PerAccess}}),
		Errs: []string{`config.credentials.mode: Invalid value: "PerAccess": keys per access are issued on implementation aws, minio, versitygw, seaweedfs, not on "r2"`}},
	{Name: "credentials block on r2", Config: withKeys(Config{Implementation: "r2", Endpoint: "https://acct.r2.cloudflarestorage.com", Credentials: &Credentials{}}),
		Errs: []string{`config.credentials: Invalid value: "{...}": keys per access are issued on implementation aws, minio, versitygw, seaweedfs, not on "r2"`}},
	{Name: "credentials mode Shared on r2", Config: withKeys(Config{Implementation: "r2", Endpoint: "https://acct.r2.cloudflarestorage.com", Credentials: &Credentials{Mode: drivers.Shared}})},
	{Name: "credentials mode Shared on minio", Config: withKeys(Config{Implementation: "minio", Endpoint: "http://s3:9000", Credentials: &Credentials{Mode: drivers.Shared}})},
	{Name: "credentials mode Shared with issuer settings", Config: withKeys(Config{Implementation: "minio", Endpoint: "http://s3:9000", Credentials: &Credentials{Mode: drivers.Shared, ParentUser: "p"}}),
		Errs: []string{`config.credentials.parentUser: Forbidden: credentials.mode is Shared`}},
	{Name: "credentials mode PerAccess with issuer settings", Config: withKeys(Config{Implementation: "minio", Endpoint: "http://s3:9000", Credentials: &Credentials{Mode: drivers.PerAccess, ParentUser: "p"}})},
	{Name: "anonymous read allowed on seaweedfs", Config: withKeys(Config{Implementation: "seaweedfs", Endpoint: "http://s3:8333", AllowAnonymousRead: true})},
	{Name: "anonymous read allowed on aws", Config: withKeys(Config{Implementation: "aws", Region: "eu-north-1", AllowAnonymousRead: true}),
		Errs: []string{"config.allowAnonymousRead: Forbidden: anonymous reads are served through a bucket policy on implementation minio, versitygw, seaweedfs only, not on aws"}},
}
