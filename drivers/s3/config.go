package s3

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/Yolean/buckety-controller/drivers"
)

// DefaultRequestTimeout bounds each S3 operation when requestTimeout is not
// set. It is a connection setting, not a resource default.
const DefaultRequestTimeout = 30 * time.Second

// DefaultDeleteSlice is how many object versions one deletion pass removes.
const DefaultDeleteSlice = 1000

// Config is the `config:` block of an s3 backend in buckety-controller.yaml.
type Config struct {
	// Implementation names the S3 implementation behind the endpoint (aws,
	// r2, minio, versitygw, seaweedfs). It enables capability-gated
	// parameters, such as R2's jurisdiction. Omitted: no capability gating.
	Implementation string `json:"implementation,omitempty" jsonschema:"enum=aws,enum=r2,enum=minio,enum=versitygw,enum=seaweedfs"`
	// Endpoint is the S3 API URL the controller uses, as
	// http://y-s3-api.blobs.svc.cluster.local:9000. Required unless
	// implementation is aws.
	Endpoint string `json:"endpoint,omitempty" envsubst:"true"`
	// JurisdictionEndpoints overrides, per R2 jurisdiction (eu, fedramp),
	// the endpoint of buckets with that jurisdiction parameter, which is
	// otherwise derived from endpoint as
	// https://ACCOUNT.JURISDICTION.r2.cloudflarestorage.com. Every call on
	// such a bucket (the adoption check, provisioning, deletion) goes there,
	// and access Secrets name it. Only with implementation: r2.
	JurisdictionEndpoints map[string]string `json:"jurisdictionEndpoints,omitempty" envsubst:"true"`
	// ConsumerEndpoint is the endpoint written to access Secrets, when
	// workloads must use another URL than the controller. Defaults to
	// endpoint.
	ConsumerEndpoint string `json:"consumerEndpoint,omitempty" envsubst:"true"`
	// Region is the signing region, and the region written to Secrets.
	// Omitted: requests are signed for us-east-1 and Secrets have no region
	// key.
	Region string `json:"region,omitempty"`
	// ForcePathStyle addresses buckets as endpoint/bucket instead of
	// bucket.endpoint; most self-hosted servers need it.
	ForcePathStyle bool `json:"forcePathStyle,omitempty"`
	// AccessKeyID is the access key, typically ${VAR} from a Secret-backed
	// env var. In v1alpha1 it is also handed to every access.
	AccessKeyID string `json:"accessKeyID" envsubst:"true" credential:"true"`
	// SecretAccessKey is the secret key for AccessKeyID.
	SecretAccessKey string `json:"secretAccessKey" envsubst:"true" credential:"true"`
	// RequestTimeout bounds each S3 operation. Defaults to 30s.
	RequestTimeout drivers.Duration `json:"requestTimeout,omitzero"`
	// CAFile is a PEM file of CA certificates to trust for an https
	// endpoint, instead of the system roots. Relative to the config
	// directory.
	CAFile string `json:"caFile,omitempty" file:"true"`
	// CA is PEM text of CA certificates to trust, as an alternative to
	// caFile.
	CA string `json:"ca,omitempty" envsubst:"true"`
	// DeleteSlice is how many object versions one deletion pass removes
	// before it reports progress. Defaults to 1000 (one DeleteObjects call).
	DeleteSlice int `json:"deleteSlice,omitempty"`
	// Credentials with mode PerAccess issues a key per access, on
	// implementation minio (a
	// user per access, with a policy of its own that denies every admin
	// action; MinIO RELEASE.2025-10-15T17-29-55Z or newer), versitygw (a
	// user per access, granted by buckety's statements in the bucket
	// policy), and aws and seaweedfs (an IAM user per access, under path
	// /buckety/, with an inline policy of its own and an access key IAM
	// issues). Each access's key may do what its role allows on its
	// bucket, and nothing else. With mode Shared every access gets the
	// backend's own keys, and reports ScopingNotImplemented. Mode not
	// set: PerAccess when the block is present, Shared when it is
	// omitted, as before the mode existed (and the controller says so at
	// startup).
	Credentials *Credentials `json:"credentials,omitempty"`
	// AllowAnonymousRead lets Bucketies on this backend ask for
	// anonymousRead: "true", a bucket policy statement letting anyone read
	// (s3:GetObject, no listing) the bucket's objects. Only with
	// implementation minio, versitygw or seaweedfs. Omitted or false:
	// anonymousRead is refused at admission, and a statement buckety wrote
	// before is removed at the bucket's next reconcile.
	AllowAnonymousRead bool `json:"allowAnonymousRead,omitempty"`

	dir string
}

// Credentials configures the keys of accesses.
type Credentials struct {
	// Mode is PerAccess (a key per access, on an implementation that
	// issues keys) or Shared (every access gets the backend's own keys and
	// reports ScopingNotImplemented; the issuer settings below are then
	// refused). Not set: PerAccess, as before.
	Mode drivers.CredentialsMode `json:"mode,omitempty" jsonschema:"enum=PerAccess,enum=Shared"`
	// ParentUser (minio) is the parent of the service accounts that
	// buckety issued before keys were users of their own: as each is
	// asserted again it is replaced by a user with the same key and
	// secret, and a service account of any other parent under buckety's
	// name is never touched. Omitted: buckety-tenants. Never the root
	// user.
	ParentUser string `json:"parentUser,omitempty"`
	// AdminEndpoint (versitygw) is the URL of the gateway's admin API (its
	// --admin-port). Omitted: endpoint. The gateway must run with an IAM
	// store (--iam-dir or another), or users cannot be created.
	AdminEndpoint string `json:"adminEndpoint,omitempty" envsubst:"true"`
	// IAMEndpoint (aws, seaweedfs) is the URL of the AWS IAM API that
	// users per access are made through. Omitted: https://iam.amazonaws.com
	// on aws (requests signed for us-east-1), endpoint on seaweedfs (which
	// serves IAM on its S3 port).
	IAMEndpoint string `json:"iamEndpoint,omitempty" envsubst:"true"`
	// SweepUsers (aws, seaweedfs) is how many users one credential sweep
	// reads in full (their keys and policies: three IAM requests each),
	// taking the users in turn from where the last sweep stopped, so that
	// a sweep costs 3 x sweepUsers requests, beside one ListUsers a
	// thousand users, whatever the number of accesses (AWS IAM throttles
	// an account's calls as a whole, and SeaweedFS answers each under one
	// lock); each shard of the controller sweeps its own accesses. Every
	// sweep still finds a deleted user, from its list of users. Omitted:
	// 100; with more users than that, each is read in full once every
	// users/sweepUsers sweeps.
	SweepUsers int `json:"sweepUsers,omitempty"`
}

// DefaultSweepUsers is credentials.sweepUsers when not set.
const DefaultSweepUsers = 100

// sweepUsers is how many users one IAM credential sweep reads in full.
func (c *Config) sweepUsers() int {
	if c.Credentials != nil && c.Credentials.SweepUsers > 0 {
		return c.Credentials.SweepUsers
	}
	return DefaultSweepUsers
}

// DefaultParentUser is credentials.parentUser when not set.
const DefaultParentUser = "buckety-tenants"

// parentUser is the MinIO parent of issued service accounts.
func (c *Config) parentUser() string {
	if c.Credentials != nil && c.Credentials.ParentUser != "" {
		return c.Credentials.ParentUser
	}
	return DefaultParentUser
}

// adminEndpoint is the VersityGW admin API URL.
func (c *Config) adminEndpoint() string {
	if c.Credentials != nil && c.Credentials.AdminEndpoint != "" {
		return c.Credentials.AdminEndpoint
	}
	return c.Endpoint
}

// The credentials block's issuer settings, as named in the config.
const (
	credParentUser    = "parentUser"
	credAdminEndpoint = "adminEndpoint"
	credIAMEndpoint   = "iamEndpoint"
	credSweepUsers    = "sweepUsers"
)

// credentialFieldUse says what each issuer setting is, for the message
// refusing it on a server whose issuer does not read it.
var credentialFieldUse = map[string]string{
	credParentUser:    "the parent of keys issued as service accounts",
	credAdminEndpoint: "the admin API of a gateway whose admin port is its own",
	credIAMEndpoint:   "the IAM API that users per access are made through",
	credSweepUsers:    "how many IAM users one credential sweep reads in full",
}

// mode is the backend's credentials mode: credentials.mode when set,
// otherwise as before the mode existed (PerAccess with a credentials
// block, Shared without).
func (c *Config) mode() drivers.CredentialsMode {
	switch {
	case c.Credentials == nil:
		return drivers.Shared
	case c.Credentials.Mode != "":
		return c.Credentials.Mode
	}
	return drivers.PerAccess
}

// perAccess reports whether the backend issues a key per access.
func (c *Config) perAccess() bool { return c.mode() == drivers.PerAccess }

// Notices implements drivers.Noticer: the mode inferred when
// credentials.mode is not set.
func (c *Config) Notices() []string {
	switch {
	case c.Credentials == nil:
		return []string{drivers.ModeNotice(drivers.Shared, "no credentials block")}
	case c.Credentials.Mode == "":
		return []string{drivers.ModeNotice(drivers.PerAccess, "a credentials block")}
	}
	return nil
}

// validateCredentials checks the credentials block against the server's
// entry: whether it issues keys, and which settings its issuer reads.
func (c *Config) validateCredentials(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	cr := c.Credentials
	if cr == nil {
		return nil
	}
	cp := p.Child("credentials")
	if err := drivers.ValidateCredentialsMode(cp.Child("mode"), cr.Mode); err != nil {
		return field.ErrorList{err}
	}
	srv := c.server()
	if c.perAccess() && !srv.issuesKeys() {
		at, v := cp, any("{...}")
		if cr.Mode != "" {
			at, v = cp.Child("mode"), cr.Mode
		}
		errs = append(errs, field.Invalid(at, v, fmt.Sprintf("keys per access are issued on implementation %s, not on %q: set credentials.mode: Shared, or remove credentials (every access then gets the backend's own keys)", strings.Join(serving((*server).issuesKeys), ", "), c.Implementation)))
	}
	set := map[string]string{credParentUser: cr.ParentUser, credAdminEndpoint: cr.AdminEndpoint, credIAMEndpoint: cr.IAMEndpoint}
	if cr.SweepUsers != 0 {
		set[credSweepUsers] = strconv.Itoa(cr.SweepUsers)
	}
	for _, f := range []string{credIAMEndpoint, credSweepUsers, credParentUser, credAdminEndpoint} {
		v := set[f]
		switch {
		case v == "":
		case !c.perAccess():
			errs = append(errs, field.Forbidden(cp.Child(f), "credentials.mode is Shared: no keys are issued, so the issuer settings are not read: remove it"))
		case !contains(srv.credentialFields, f):
			readers := serving(func(s *server) bool { return contains(s.credentialFields, f) })
			errs = append(errs, field.Forbidden(cp.Child(f), fmt.Sprintf("only implementation %s reads it (%s): remove it", strings.Join(readers, ", "), credentialFieldUse[f])))
		case f == credSweepUsers:
			if cr.SweepUsers < 0 {
				errs = append(errs, field.Invalid(cp.Child(f), cr.SweepUsers, "want a positive number of users, or omit it for 100"))
			}
		case f == credParentUser && v == c.AccessKeyID:
			errs = append(errs, field.Invalid(cp.Child(f), v, "the parent of every access's key must not be the root user: a service account of root without its inline policy would hold root's rights"))
		case f != credParentUser:
			if err := validURL(v); err != nil {
				errs = append(errs, field.Invalid(cp.Child(f), v, err.Error()))
			}
		}
	}
	return errs
}

// SetDir resolves caFile against the config directory.
func (c *Config) SetDir(abs string) { c.dir = abs }

// Validate implements drivers.Config.
func (c *Config) Validate(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.Implementation != "" && !contains(Implementations, c.Implementation) {
		errs = append(errs, field.NotSupported(p.Child("implementation"), c.Implementation, Implementations))
	}
	switch {
	case c.Endpoint == "" && !c.server().endpointOptional:
		errs = append(errs, field.Required(p.Child("endpoint"), fmt.Sprintf("the S3 API URL, as http://host:port (may be omitted only with implementation: %s)", strings.Join(serving(func(s *server) bool { return s.endpointOptional }), ", "))))
	case c.Endpoint != "":
		if err := validURL(c.Endpoint); err != nil {
			errs = append(errs, field.Invalid(p.Child("endpoint"), c.Endpoint, err.Error()))
		}
	}
	if c.ConsumerEndpoint != "" {
		if err := validURL(c.ConsumerEndpoint); err != nil {
			errs = append(errs, field.Invalid(p.Child("consumerEndpoint"), c.ConsumerEndpoint, err.Error()))
		}
	}
	errs = append(errs, c.validateJurisdictionEndpoints(p.Child("jurisdictionEndpoints"))...)
	errs = append(errs, c.validateCredentials(p)...)
	if c.AllowAnonymousRead && !c.server().has(ParamAnonymousRead) {
		errs = append(errs, field.Forbidden(p.Child("allowAnonymousRead"), fmt.Sprintf("anonymous reads are served through a bucket policy on implementation %s only, not on %s: remove allowAnonymousRead", strings.Join(capabilityGated[ParamAnonymousRead], ", "), orUnset(c.Implementation))))
	}
	if c.Region != "" && !validRegion(c.Region) {
		errs = append(errs, field.Invalid(p.Child("region"), c.Region, "a region is lowercase letters, digits and '-', as eu-north-1 or auto"))
	}
	if c.AccessKeyID == "" {
		errs = append(errs, field.Required(p.Child("accessKeyID"), "set it from a Secret-backed env var, as ${S3_ACCESS_KEY_ID}"))
	}
	if c.SecretAccessKey == "" {
		errs = append(errs, field.Required(p.Child("secretAccessKey"), "set it from a Secret-backed env var, as ${S3_SECRET_ACCESS_KEY}"))
	}
	if c.RequestTimeout.Duration < 0 {
		errs = append(errs, field.Invalid(p.Child("requestTimeout"), c.RequestTimeout.String(), "must be positive"))
	}
	if c.DeleteSlice < 0 || c.DeleteSlice > 1000 {
		errs = append(errs, field.Invalid(p.Child("deleteSlice"), c.DeleteSlice, "must be 1 to 1000 (S3's DeleteObjects limit)"))
	}
	if c.CA != "" && c.CAFile != "" {
		errs = append(errs, field.Forbidden(p.Child("ca"), "set caFile or ca, not both"))
	} else if _, err := c.rootCAs(); err != nil {
		errs = append(errs, field.Invalid(p.Child("caFile"), field.OmitValueType{}, err.Error()))
	}
	return errs
}

func (c *Config) validateJurisdictionEndpoints(p *field.Path) field.ErrorList {
	if len(c.JurisdictionEndpoints) == 0 {
		return nil
	}
	if !c.server().has(ParamJurisdiction) {
		return field.ErrorList{field.Forbidden(p, fmt.Sprintf("jurisdictions are Cloudflare R2's: set implementation: %s, or remove jurisdictionEndpoints (implementation is %s)", strings.Join(capabilityGated[ParamJurisdiction], ", "), orUnset(c.Implementation)))}
	}
	keys := make([]string, 0, len(c.JurisdictionEndpoints))
	for k := range c.JurisdictionEndpoints {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs field.ErrorList
	for _, k := range keys {
		if !contains(jurisdictions, k) {
			errs = append(errs, field.NotSupported(p.Key(k), k, jurisdictions))
			continue
		}
		if err := validURL(c.JurisdictionEndpoints[k]); err != nil {
			errs = append(errs, field.Invalid(p.Key(k), c.JurisdictionEndpoints[k], err.Error()))
		}
	}
	return errs
}

// jurisdictionEndpoint is the controller's endpoint for buckets in a
// jurisdiction: the configured override, or the one derived from endpoint.
func (c *Config) jurisdictionEndpoint(jurisdiction string) (string, error) {
	if ep, ok := c.JurisdictionEndpoints[jurisdiction]; ok {
		return strings.TrimSuffix(ep, "/"), nil
	}
	return jurisdictionEndpoint(c.endpoint(), jurisdiction)
}

// consumerJurisdictionEndpoint is the endpoint access Secrets name for a
// bucket in a jurisdiction: the configured override (the same URL serves
// controller and consumers), or the one derived from consumerEndpoint.
func (c *Config) consumerJurisdictionEndpoint(jurisdiction string) (string, error) {
	if ep, ok := c.JurisdictionEndpoints[jurisdiction]; ok {
		return strings.TrimSuffix(ep, "/"), nil
	}
	return jurisdictionEndpoint(c.consumerEndpoint(), jurisdiction)
}

func validURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("not a URL: %v", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("want an http:// or https:// URL")
	}
	if u.Host == "" {
		return fmt.Errorf("the URL has no host")
	}
	if u.Path != "" && u.Path != "/" {
		return fmt.Errorf("want the endpoint without a path (buckets are addressed by the driver)")
	}
	return nil
}

func validRegion(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

func (c *Config) timeout() time.Duration {
	if c.RequestTimeout.Duration > 0 {
		return c.RequestTimeout.Duration
	}
	return DefaultRequestTimeout
}

func (c *Config) deleteSlice() int32 {
	if c.DeleteSlice > 0 {
		return int32(c.DeleteSlice)
	}
	return DefaultDeleteSlice
}

func (c *Config) signingRegion() string {
	if c.Region != "" {
		return c.Region
	}
	return "us-east-1"
}

// endpoint returns the controller's endpoint; for aws without an explicit
// endpoint, the regional AWS one.
func (c *Config) endpoint() string {
	if c.Endpoint != "" {
		return strings.TrimSuffix(c.Endpoint, "/")
	}
	return "https://s3." + c.signingRegion() + ".amazonaws.com"
}

func (c *Config) consumerEndpoint() string {
	if c.ConsumerEndpoint != "" {
		return strings.TrimSuffix(c.ConsumerEndpoint, "/")
	}
	return c.endpoint()
}

func (c *Config) rootCAs() (*x509.CertPool, error) {
	pem := []byte(c.CA)
	if c.CAFile != "" {
		path := c.CAFile
		if !filepath.IsAbs(path) && c.dir != "" {
			path = filepath.Join(c.dir, path)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("caFile: %v", err)
		}
		pem = b
	}
	if len(pem) == 0 {
		return nil, nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no PEM certificate found")
	}
	return pool, nil
}

func (c *Config) httpClient() (*http.Client, error) {
	pool, err := c.rootCAs()
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: c.timeout(), KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool},
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   c.timeout(),
		ResponseHeaderTimeout: c.timeout(),
		// The SDK asks "Expect: 100-continue" for bodies of 2 MB and more;
		// waiting for the answer (as net/http's default transport does)
		// lets a server refuse such a PUT before its body is sent, and
		// the refusal arrive as its error, not as a broken pipe.
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{Transport: tr}, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
