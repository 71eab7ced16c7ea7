package s3

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/Yolean/buckety-controller/drivers"
)

// Name is the driver's registry name. It never changes.
const Name = "s3"

// version is the driver's SemVer; releases override it with
// -ldflags "-X github.com/Yolean/buckety-controller/drivers/s3.version=0.3.1".
//
// 0.8.0 grants an access naming several Bucketies (spec.bucketyRefs,
// drivers.SeveralGranter): one key with the role's rights on every
// bucket, and a Secret with buckets and bucket.<key> (region.<key> where a
// bucket's region is not the first's) instead of bucket. A minor: the
// published secret schema no longer requires bucket, which an access
// naming one Buckety still always has; nothing stored changes meaning.
//
// 0.7.0 drains a bucket and keeps it (drivers.Drainer): multipart uploads,
// object versions and delete markers, in bounded steps; the bucket's
// configuration is never touched. A minor: nothing existing changes.
//
// 0.6.0 keeps an owner record per bucket as its buckety.yolean.se/* tags
// (drivers.OwnerRecorder), and names new principals with their
// installation's marker and lists them (drivers.PrincipalLister). A minor:
// principals already issued keep their names, and a bucket's other tags
// are kept.
//
// 0.5.0 adds the parameters quota (a hard bucket quota, capability-gated
// to minio and seaweedfs), softQuota (every implementation) and
// anonymousRead (capability-gated to minio, versitygw and seaweedfs, and
// allowed only by the new config field allowAnonymousRead), and reports
// usage (drivers.UsageReporter) and footprints (drivers.FootprintMeasurer):
// a minor, as nothing stored changes meaning. Ensure now reads a minio or
// seaweedfs bucket's quota, and a minio, versitygw or seaweedfs bucket's
// policy, on every pass, and removes a quota or an anonymous read
// statement that no parameter asks for.
//
// 0.4.0 adds implementation seaweedfs (keys per access as IAM users, as
// on aws) and allows versioning on it: widening a capability gate, a minor.
//
// 0.3.0 adds secret formats (aws-env, aws-files, obc, rclone): keys an
// access asks for in spec.secretFormats, additively; a Secret without them
// is unchanged.
//
// 0.2.0 capability-gates lifecycle (aws, minio, r2) and versioning (aws,
// minio, versitygw), and adds the jurisdictionEndpoints config field. A
// minor: no stored Buckety changes meaning or becomes invalid (gating
// ratchets: an unchanged value is kept on update, with a warning), so
// existing resources keep reconciling; only new requests for a parameter
// the backend cannot apply are refused, which is what gating is for.
var version = "0.8.0"

// Driver is the s3 driver.
type Driver struct {
	// APIOptions are added to every client the driver opens; tests count
	// requests with them.
	APIOptions []func(*middleware.Stack) error
}

// New returns the s3 driver.
func New() *Driver { return &Driver{} }

// Name implements drivers.Driver.
func (*Driver) Name() string { return Name }

// Version implements drivers.Driver.
func (*Driver) Version() drivers.Version { return drivers.MustParseVersion(version) }

// NewConfig implements drivers.Driver.
func (*Driver) NewConfig() drivers.Config { return &Config{} }

// ValidateName applies the S3 bucket-naming rules, explaining each
// violation.
func (*Driver) ValidateName(p *field.Path, _ drivers.Config, name string) (warnings []string, errs field.ErrorList) {
	bad := func(msg string) { errs = append(errs, field.Invalid(p, name, msg)) }
	if len(name) < 3 || len(name) > 63 {
		bad(fmt.Sprintf("a bucket name is 3 to 63 characters, this one is %d", len(name)))
	}
	var illegal []string
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.') && !contains(illegal, string(r)) {
			illegal = append(illegal, string(r))
		}
	}
	if len(illegal) > 0 {
		bad(fmt.Sprintf("a bucket name has only lowercase letters, digits, '-' and '.'; found %q", strings.Join(illegal, "")))
	}
	if name != "" && !alnum(name[0]) {
		bad("a bucket name starts with a lowercase letter or digit")
	}
	if name != "" && !alnum(name[len(name)-1]) {
		bad("a bucket name ends with a lowercase letter or digit")
	}
	if strings.Contains(name, "..") {
		bad(`a bucket name has no two adjacent periods ("..")`)
	}
	if ip := net.ParseIP(name); ip != nil && ip.To4() != nil || ipShaped.MatchString(name) {
		// Four dot-separated runs of digits, whatever their values
		// (10.0.0.01, 999.1.1.1): MinIO refuses them all, where
		// net.ParseIP takes only real addresses.
		bad("a bucket name is not formatted as an IP address (four dot-separated numbers)")
	}
	if strings.Contains(name, ".-") || strings.Contains(name, "-.") {
		// Each dot-separated label starts and ends with a letter or
		// digit, as a DNS label does; MinIO refuses the bucket.
		bad(`a bucket name has no '-' next to a '.' (".-" or "-.")`)
	}
	for _, prefix := range []string{"xn--", "sthree-", "amzn-s3-demo-"} {
		if strings.HasPrefix(name, prefix) {
			bad(fmt.Sprintf("a bucket name does not start with %q (reserved)", prefix))
		}
	}
	for _, suffix := range []string{"-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"} {
		if strings.HasSuffix(name, suffix) {
			bad(fmt.Sprintf("a bucket name does not end with %q (reserved)", suffix))
		}
	}
	if strings.Contains(name, ".") && len(errs) == 0 {
		warnings = append(warnings, fmt.Sprintf("%s: bucket name %q contains '.': virtual-hosted-style HTTPS cannot verify it, so clients must use path-style addressing", p, name))
	}
	return warnings, errs
}

// ipShaped is a name of four dot-separated runs of digits.
var ipShaped = regexp.MustCompile(`^(\d+\.){3}\d+$`)

func alnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

// ValidateParameters implements drivers.Driver.
func (*Driver) ValidateParameters(p *field.Path, cfg drivers.Config, old, new map[string]string) ([]string, field.ErrorList) {
	c, _ := cfg.(*Config)
	return validateParams(p, c, old, new)
}

// ValidateAccess accepts every role and no access parameters. It warns
// when the backend's config rules out a key per access (no credentials, or
// an implementation that issues none): every access then gets
// the backend's own keys and its role is not enforced. A backend that may
// scope does so when its server's admin API answers; the access's
// ScopingNotImplemented condition says whether it does.
func (*Driver) ValidateAccess(p *field.Path, cfg drivers.Config, role drivers.Role, params map[string]string) (warnings []string, errs field.ErrorList) {
	for k := range params {
		errs = append(errs, field.Invalid(p.Key(k), k, "the s3 driver has no access parameters in v1alpha1"))
	}
	c, _ := cfg.(*Config)
	if c != nil && c.sharedReason("") == "" {
		return nil, errs
	}
	warnings = append(warnings, "this backend hands every s3 access the backend's own keys, not a key scoped to this bucket (no credentials in its config, or an implementation other than minio, versitygw, aws and seaweedfs: ScopingNotImplemented)")
	if role.OrDefault() != drivers.RoleReadWrite {
		warnings = append(warnings, fmt.Sprintf("role %s is not enforced on this backend (no key per access): the keys allow reading and writing (ScopingNotImplemented)", role))
	}
	return warnings, errs
}

// Open creates the backend's client. It does not contact the endpoint.
func (d *Driver) Open(_ context.Context, backend string, cfg drivers.Config) (drivers.Backend, error) {
	c, ok := cfg.(*Config)
	if !ok {
		return nil, fmt.Errorf("s3: config is %T, want *s3.Config", cfg)
	}
	b := &Backend{name: backend, cfg: c, srv: c.server(), apiOptions: d.APIOptions, clients: map[string]*s3.Client{}}
	if _, err := b.client(c.Endpoint); err != nil {
		return nil, err
	}
	if err := b.openAdmin(); err != nil {
		return nil, err
	}
	is, err := b.newIssuer()
	if err != nil {
		return nil, err
	}
	b.scoping.issuer = is
	return b, nil
}

// newClient builds an S3 client for one endpoint ("" = the SDK's AWS
// resolution).
func (b *Backend) newClient(endpoint string) (*s3.Client, error) {
	hc, err := b.cfg.httpClient()
	if err != nil {
		return nil, err
	}
	opts := s3.Options{
		Region:                     b.cfg.signingRegion(),
		Credentials:                credentials.NewStaticCredentialsProvider(b.cfg.AccessKeyID, b.cfg.SecretAccessKey, ""),
		UsePathStyle:               b.cfg.ForcePathStyle,
		HTTPClient:                 hc,
		RetryMaxAttempts:           3,
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
		APIOptions:                 append([]func(*middleware.Stack) error{b.boundEachOperation}, b.apiOptions...),
	}
	if endpoint != "" {
		opts.BaseEndpoint = aws.String(endpoint)
	}
	return s3.New(opts), nil
}

// boundEachOperation gives every S3 operation, its retries included, the
// backend's requestTimeout of its own. A call that makes several requests
// (Ensure's reads and writes, a Delete pass) is bounded by its caller and
// by how many requests it makes, never by one requestTimeout for all of
// them: a loaded server that answers each request in time must not fail
// the call because the requests before took most of a shared deadline.
func (b *Backend) boundEachOperation(stack *middleware.Stack) error {
	timeout := b.cfg.timeout()
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("bucketyRequestTimeout",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
}
