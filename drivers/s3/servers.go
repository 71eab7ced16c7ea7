package s3

import (
	"net/http"

	"github.com/Yolean/buckety-controller/drivers/s3/adminhttp"
	"github.com/Yolean/buckety-controller/drivers/s3/iam"
	"github.com/Yolean/buckety-controller/drivers/s3/minioadmin"
	"github.com/Yolean/buckety-controller/drivers/s3/versityadmin"
)

// Known values of the implementation discriminator.
const (
	ImplAWS       = "aws"
	ImplR2        = "r2"
	ImplMinIO     = "minio"
	ImplVersityGW = "versitygw"
	ImplSeaweedFS = "seaweedfs"
)

// Implementations lists the allowed implementation values, in the order
// the config schema and its messages list them.
var Implementations = []string{ImplAWS, ImplR2, ImplMinIO, ImplVersityGW, ImplSeaweedFS}

// server describes one S3 server type, the backend's implementation:
// everything the driver does differently on it. A Backend holds the entry
// of its implementation (Config.server), and no code compares the
// implementation's name: adding a server type is one entry here, plus its
// test server. The entry for no implementation (generic) has the zero
// value of every field: plain S3, nothing gated allowed.
type server struct {
	// impl is the implementation value; "" for generic.
	impl string
	// capabilities are the capability-gated parameters the server honours
	// (capabilityGated is derived from them).
	capabilities []string
	// lacks says, where it is known, why the server does not honour a
	// gated parameter, for the refusal's message.
	lacks map[string]string
	// issuer makes the issuer of keys per access (credentials set); nil
	// where buckety issues none. hc is the admin HTTP client.
	issuer func(b *Backend, hc *http.Client) issuer
	// iamKeys: the keys per access are IAM users, with a key and secret
	// the server issues (IssuedSecrets), not the secret buckety makes.
	iamKeys bool
	// callerKeys: the IAM server's CreateAccessKey takes the key id and
	// secret buckety makes (AccessKeyId and SecretAccessKey, a SeaweedFS
	// extension), so a new principal's secret is made before its record,
	// as on the servers that take a password (drivers.SecretMaker).
	callerKeys bool
	// credentialFields are the fields of the credentials block the issuer
	// reads; the config refuses the others.
	credentialFields []string
	// admin opens the clients of what the server keeps outside the S3
	// API: hard quotas, usage, the issuer's admin API. It does not
	// contact the endpoint. nil: none.
	admin func(b *Backend, hc *http.Client)
	// endpointOptional: the SDK resolves the endpoint when the config
	// sets none, and globalAddress names the service then (drivers
	// ServiceAddresser).
	endpointOptional bool
	globalAddress    string
	// iamEndpoint and iamRegion are the IAM API's URL and signing region
	// when credentials.iamEndpoint is not set; "": the S3 endpoint and
	// the signing region (a server serving IAM on its S3 port).
	iamEndpoint, iamRegion string
	// blocksPublicACLs: every bucket blocks and ignores public ACLs
	// (publicacls.go), and only then may its keys send ACL headers.
	blocksPublicACLs bool
	// policyMaxBytes bounds the bucket policies buckety writes; 0: none.
	policyMaxBytes int
	// userPolicyMaxBytes bounds the policy of a key per access (a MinIO
	// user's canned policy, an IAM user's inline policy), which names
	// every bucket of an access naming several Bucketies; 0: none known.
	userPolicyMaxBytes int
	// rclone is rclone's s3 provider for the server.
	rclone string
	// createsOnlyNew: CreateBucket on a bucket that exists is refused
	// (BucketAlreadyOwnedByYou, BucketAlreadyExists) whoever asks, so a
	// create that succeeds made a bucket with no tags, and the owner
	// record written right after it (drivers.Resource.JustCreated) skips
	// the read that keeps other tags. Not AWS: in us-east-1 a re-create by
	// the bucket's owner answers 200. Not set where no test server shows
	// it (owners_test.go checks each server that sets it).
	createsOnlyNew bool
	// keepsTags: the server keeps bucket tags on every store it runs on,
	// so OwnerRecords answers yes without asking (a request per backend
	// and process saved); an error of a later read or write still shows.
	// Not VersityGW: whether it keeps tags depends on its backend.
	keepsTags bool
}

// servers are the known server types. Their order is the order the
// capability lists of the parameter schema name them in.
var servers = []server{
	{
		impl: ImplAWS, capabilities: []string{ParamLifecycle, ParamVersioning},
		lacks: map[string]string{
			ParamQuota:         "S3 has no bucket quota",
			ParamAnonymousRead: "S3 Block Public Access, on for every new bucket and usually for the account, refuses public bucket policies, and buckety does not turn it off",
		},
		issuer: newIAMIssuer, iamKeys: true, credentialFields: []string{credIAMEndpoint, credSweepUsers},
		endpointOptional: true, globalAddress: "aws",
		iamEndpoint: iam.AWSEndpoint, iamRegion: iam.AWSSigningRegion,
		userPolicyMaxBytes: iam.AWSInlineUserPolicyMaxBytes,
		rclone:             "AWS",
	},
	{
		impl: ImplMinIO, capabilities: []string{ParamLifecycle, ParamVersioning, ParamQuota, ParamAnonymousRead},
		issuer: newMinIOIssuer, credentialFields: []string{credParentUser},
		userPolicyMaxBytes: minioadmin.MaxCannedPolicy,
		admin: func(b *Backend, hc *http.Client) {
			b.minio = minioadmin.New(b.cfg.Endpoint, b.cfg.signingRegion(), b.cfg.AccessKeyID, b.cfg.SecretAccessKey, hc)
			b.quotas = minioQuotas{b.minio}
		},
		rclone: "Minio", createsOnlyNew: true, keepsTags: true,
	},
	{
		impl: ImplR2, capabilities: []string{ParamJurisdiction, ParamLifecycle},
		lacks: map[string]string{
			ParamQuota:         "R2 has no bucket quota",
			ParamAnonymousRead: "R2 has no bucket policies: a public R2 bucket is an r2.dev or custom domain setting, outside the S3 API",
		},
		rclone: "Cloudflare",
	},
	{
		impl: ImplVersityGW, capabilities: []string{ParamVersioning, ParamAnonymousRead},
		lacks: map[string]string{
			ParamQuota: "VersityGW has no bucket quota; a quota of the filesystem under it is the operator's",
		},
		issuer: newVersityIssuer, credentialFields: []string{credAdminEndpoint},
		policyMaxBytes: versityPolicyMaxBytes,
		rclone:         "Other", createsOnlyNew: true,
	},
	{
		impl: ImplSeaweedFS, capabilities: []string{ParamVersioning, ParamQuota, ParamAnonymousRead},
		issuer: newIAMIssuer, iamKeys: true, callerKeys: true, credentialFields: []string{credIAMEndpoint, credSweepUsers},
		admin: func(b *Backend, hc *http.Client) {
			b.quotas = seaweedQuotas{adminhttp.New(b.cfg.Endpoint, b.cfg.signingRegion(), "s3", b.cfg.AccessKeyID, b.cfg.SecretAccessKey, hc)}
		},
		blocksPublicACLs: true,
		rclone:           "Other", createsOnlyNew: true,
	},
}

// generic is the server of a backend that declares no implementation.
var generic = server{rclone: "Other"}

// serverOf is the entry of an implementation; generic for "" (and for an
// unknown one, which the config refuses).
func serverOf(impl string) *server {
	for i := range servers {
		if servers[i].impl == impl {
			return &servers[i]
		}
	}
	return &generic
}

// server is the entry of the config's implementation.
func (c *Config) server() *server { return serverOf(c.Implementation) }

// has reports whether the server honours gated parameter k.
func (s *server) has(k string) bool { return contains(s.capabilities, k) }

// issuesKeys reports whether buckety issues keys per access on the server.
func (s *server) issuesKeys() bool { return s.issuer != nil }

// serving lists the implementations whose entry satisfies ok, in the
// servers' order, for capability lists and messages.
func serving(ok func(*server) bool) []string {
	var out []string
	for i := range servers {
		if ok(&servers[i]) {
			out = append(out, servers[i].impl)
		}
	}
	return out
}

// gatedBy derives capabilityGated from the servers: each gated parameter
// and the implementations honouring it.
func gatedBy() map[string][]string {
	out := map[string][]string{}
	for _, k := range gatedParams {
		out[k] = serving(func(s *server) bool { return s.has(k) })
	}
	return out
}

// The issuers, by server type (credentials_*.go).
func newMinIOIssuer(b *Backend, _ *http.Client) issuer {
	return &minioIssuer{b: b, admin: b.minio}
}

func newVersityIssuer(b *Backend, hc *http.Client) issuer {
	return &versityIssuer{b: b, hc: hc, admin: versityadmin.New(b.cfg.adminEndpoint(), b.cfg.signingRegion(), b.cfg.AccessKeyID, b.cfg.SecretAccessKey, hc)}
}

func newIAMIssuer(b *Backend, hc *http.Client) issuer {
	return &iamIssuer{b: b, iam: iam.New(b.iamEndpoint(), b.iamRegion(), b.cfg.AccessKeyID, b.cfg.SecretAccessKey, hc)}
}
