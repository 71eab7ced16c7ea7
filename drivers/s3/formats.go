package s3

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/Yolean/buckety-controller/drivers"
)

// Secret formats of an s3 access (spec.secretFormats): the same endpoint,
// bucket and keys as the default keys, shaped as the AWS SDKs and CLI,
// ObjectBucketClaim apps and rclone read them. They are rendered from the
// default keys of the grant and the backend's addressing style
// (renderFormats), so every shape holds what they hold.
const (
	FormatAWSEnv   = "aws-env"
	FormatAWSFiles = "aws-files"
	FormatOBC      = "obc"
	FormatRclone   = "rclone"

	SecretAWSAccessKeyID     = "AWS_ACCESS_KEY_ID"
	SecretAWSSecretAccessKey = "AWS_SECRET_ACCESS_KEY"
	SecretAWSEndpointURLS3   = "AWS_ENDPOINT_URL_S3"
	SecretAWSRegion          = "AWS_REGION"
	SecretAWSDefaultRegion   = "AWS_DEFAULT_REGION"
	SecretAWSCredentialsFile = "credentials"
	SecretAWSConfigFile      = "config"
	SecretBucketHost         = "BUCKET_HOST"
	SecretBucketPort         = "BUCKET_PORT"
	SecretBucketName         = "BUCKET_NAME"
	SecretBucketRegion       = "BUCKET_REGION"
	SecretRcloneConf         = "rclone.conf"

	// defaultRegion is what the format keys say when neither the bucket
	// nor the backend names a region: the region requests are signed for
	// (signingRegion), and the SDKs refuse to start without one.
	defaultRegion = "us-east-1"
)

var (
	keyAWSAccessKeyID = drivers.SecretKey{Name: SecretAWSAccessKeyID, Description: "The access key ID: accessKeyID."}
	keyAWSSecret      = drivers.SecretKey{Name: SecretAWSSecretAccessKey, Description: "The secret access key: secretAccessKey."}
)

var secretFormats = []drivers.SecretFormat{
	{
		Name:        FormatAWSEnv,
		Description: "The AWS SDKs and CLI configured from the environment: envFrom the Secret. AWS_ENDPOINT_URL_S3 is read by AWS CLI 2.13, boto3 1.28, aws-sdk-go-v2 (2023) and later; older ones take it as --endpoint-url or endpoint_url=. The SDKs address buckets virtual-hosted by default: with a backend that sets forcePathStyle, set the client's path-style option (boto3 reads it from the aws-files config).",
		Keys: []drivers.SecretKey{
			keyAWSAccessKeyID,
			keyAWSSecret,
			{Name: SecretAWSEndpointURLS3, Description: "The S3 endpoint URL: endpoint."},
			{Name: SecretAWSRegion, Description: "The region: region, or us-east-1 when the Secret has none (the region requests are signed for)."},
			{Name: SecretAWSDefaultRegion, Description: "The same region, for clients that read only AWS_DEFAULT_REGION (boto3 before 1.28, AWS CLI v1)."},
		},
		Several: "Unchanged: the keys, endpoint and region (the first bucket's) reach every bucket; the buckets are named by the default keys buckets and bucket.<key>.",
	},
	{
		Name:        FormatAWSFiles,
		Description: "An AWS shared credentials and config file pair, profile default: mount the Secret and set AWS_SHARED_CREDENTIALS_FILE=<mount>/credentials and AWS_CONFIG_FILE=<mount>/config. endpoint_url in the config file is read by AWS CLI 2.13, boto3 1.28, aws-sdk-go-v2 (2023) and later.",
		Keys: []drivers.SecretKey{
			{Name: SecretAWSCredentialsFile, Description: "The shared credentials file: [default] with aws_access_key_id and aws_secret_access_key."},
			{Name: SecretAWSConfigFile, Description: "The shared config file: [default] with region, endpoint_url, s3 signature_version = s3v4 (older SDKs presign with SigV2 otherwise) and, where the backend sets forcePathStyle, s3 addressing_style = path."},
		},
		Several: "Unchanged: profile default's keys, endpoint and region (the first bucket's) reach every bucket; the buckets are named by the default keys buckets and bucket.<key>.",
	},
	{
		Name:        FormatOBC,
		Description: "The keys an app written for Rook or lib-bucket-provisioner ObjectBucketClaims reads (their ConfigMap and Secret in one): envFrom the Secret.",
		Keys: []drivers.SecretKey{
			{Name: SecretBucketHost, Description: "The endpoint's host name, without scheme or port."},
			{Name: SecretBucketPort, Description: "The endpoint's port: its explicit port, else 443 for https and 80 for http."},
			{Name: SecretBucketName, Description: "The bucket name: bucket."},
			{Name: SecretBucketRegion, Description: "The region: region, or us-east-1 when the Secret has none."},
			keyAWSAccessKeyID,
			keyAWSSecret,
		},
		Several:     "BUCKET_NAME holds one bucket, and ObjectBucketClaim apps read no other",
		OneResource: true,
	},
	{
		Name:        FormatRclone,
		Description: "rclone: mount the Secret and run rclone --config <mount>/rclone.conf; the remote bucket: is the bucket itself (rclone ls bucket:, rclone copy ./dir bucket:dir).",
		Keys: []drivers.SecretKey{
			{Name: SecretRcloneConf, Description: "An rclone config with a remote s3 (type s3, the provider of the backend's implementation, the keys, endpoint, region, force_path_style as the backend addresses buckets, no_check_bucket = true) and a remote bucket (type alias, remote s3:<bucket>)."},
		},
		Several: "The remote s3, and instead of the remote bucket one alias remote per bucket, named by its key (bucket.<key>'s): rclone ls <key>:. A bucket whose region is not the first's is reached as s3,region=<region>:<bucket>. A Buckety keyed s3 is refused: its alias would be the remote s3.",
	},
}

// SecretFormats implements drivers.SecretFormatter.
func (*Driver) SecretFormats() []drivers.SecretFormat { return slices.Clone(secretFormats) }

// renderFormats adds the keys of formats to data, from data's default keys
// and the backend's addressing style and implementation.
func (c *Config) renderFormats(formats []string, data map[string][]byte) error {
	endpoint := string(data[SecretEndpoint])
	id, secret := data[SecretAccessKeyID], data[SecretSecretAccessKey]
	region := string(data[SecretRegion])
	if region == "" {
		region = defaultRegion
	}
	if err := oneLine(data); err != nil {
		return err
	}
	for _, f := range formats {
		switch f {
		case FormatAWSEnv:
			data[SecretAWSAccessKeyID] = id
			data[SecretAWSSecretAccessKey] = secret
			data[SecretAWSEndpointURLS3] = []byte(endpoint)
			data[SecretAWSRegion] = []byte(region)
			data[SecretAWSDefaultRegion] = []byte(region)
		case FormatAWSFiles:
			data[SecretAWSCredentialsFile] = fmt.Appendf(nil, "[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n", id, secret)
			// SigV4 everywhere: older SDKs presign with SigV2 by
			// default, which VersityGW and newer regions refuse.
			conf := fmt.Sprintf("[default]\nregion = %s\nendpoint_url = %s\ns3 =\n    signature_version = s3v4\n", region, endpoint)
			if c.ForcePathStyle {
				conf += "    addressing_style = path\n"
			}
			data[SecretAWSConfigFile] = []byte(conf)
		case FormatOBC:
			if len(data[SecretBucket]) == 0 {
				return fmt.Errorf("secret format %s holds one bucket: an access naming several Bucketies (spec.bucketyRefs) cannot use it", FormatOBC)
			}
			host, port, err := hostPort(endpoint)
			if err != nil {
				return err
			}
			data[SecretBucketHost] = []byte(host)
			data[SecretBucketPort] = []byte(port)
			data[SecretBucketName] = data[SecretBucket]
			data[SecretBucketRegion] = []byte(region)
			data[SecretAWSAccessKeyID] = id
			data[SecretAWSSecretAccessKey] = secret
		case FormatRclone:
			conf, err := c.rcloneConf(data, string(id), string(secret), endpoint, region)
			if err != nil {
				return err
			}
			data[SecretRcloneConf] = conf
		default:
			return fmt.Errorf("secret format %q: the s3 driver offers %s", f, strings.Join(drivers.FormatNames(New()), ", "))
		}
	}
	return nil
}

// oneLine refuses a Secret value holding a line break. Every format is
// line-oriented: a line break in a value would read as another setting.
// None is expected (keys are issued from a safe alphabet; the endpoint is
// a parsed URL, bucket names and regions are checked).
func oneLine(data map[string][]byte) error {
	for _, v := range data {
		if strings.ContainsAny(string(v), "\r\n") {
			return fmt.Errorf("secret formats: a value of the Secret holds a line break, which no format can hold")
		}
	}
	return nil
}

// rcloneConf is the rclone format's config: the remote s3, then the
// remote bucket, or for several buckets one alias remote per bucket named
// by its key.
func (c *Config) rcloneConf(data map[string][]byte, id, secret, endpoint, region string) ([]byte, error) {
	conf := fmt.Appendf(nil, "[s3]\ntype = s3\nprovider = %s\naccess_key_id = %s\nsecret_access_key = %s\nendpoint = %s\nregion = %s\nforce_path_style = %t\nno_check_bucket = true\n",
		c.server().rclone, id, secret, endpoint, region, c.ForcePathStyle)
	if b := data[SecretBucket]; len(b) > 0 {
		return fmt.Appendf(conf, "\n[bucket]\ntype = alias\nremote = s3:%s\n", b), nil
	}
	for _, key := range severalKeys(data) {
		if key == "s3" {
			return nil, fmt.Errorf("secret format %s: the Buckety keyed s3 in spec.bucketyRefs would name its alias remote as the remote s3: name it otherwise, or leave out the format", FormatRclone)
		}
		remote := "s3"
		if r := data[drivers.SeveralKey(SecretRegion, key)]; len(r) > 0 {
			remote = "s3,region=" + string(r)
		}
		conf = fmt.Appendf(conf, "\n[%s]\ntype = alias\nremote = %s:%s\n", key, remote, data[drivers.SeveralKey(SecretBucket, key)])
	}
	return conf, nil
}

// severalKeys are the keys of the buckets of a several-resource Secret
// (bucket.<key>), sorted.
func severalKeys(data map[string][]byte) []string {
	var out []string
	for k := range data {
		if key, ok := strings.CutPrefix(k, SecretBucket+"."); ok {
			out = append(out, key)
		}
	}
	slices.Sort(out)
	return out
}

// hostPort splits an endpoint URL into its host and port, the port
// defaulting by scheme.
func hostPort(endpoint string) (string, string, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return "", "", fmt.Errorf("secret format %s: endpoint %q is not a URL with a host", FormatOBC, endpoint)
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		return "", "", fmt.Errorf("secret format %s: endpoint %q has no host", FormatOBC, endpoint)
	}
	if port == "" {
		port = "443"
		if u.Scheme == "http" {
			port = "80"
		}
	}
	return host, port, nil
}
