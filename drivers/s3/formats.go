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
	},
	{
		Name:        FormatAWSFiles,
		Description: "An AWS shared credentials and config file pair, profile default: mount the Secret and set AWS_SHARED_CREDENTIALS_FILE=<mount>/credentials and AWS_CONFIG_FILE=<mount>/config. endpoint_url in the config file is read by AWS CLI 2.13, boto3 1.28, aws-sdk-go-v2 (2023) and later.",
		Keys: []drivers.SecretKey{
			{Name: SecretAWSCredentialsFile, Description: "The shared credentials file: [default] with aws_access_key_id and aws_secret_access_key."},
			{Name: SecretAWSConfigFile, Description: "The shared config file: [default] with region, endpoint_url, s3 signature_version = s3v4 (older SDKs presign with SigV2 otherwise) and, where the backend sets forcePathStyle, s3 addressing_style = path."},
		},
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
	},
	{
		Name:        FormatRclone,
		Description: "rclone: mount the Secret and run rclone --config <mount>/rclone.conf; the remote bucket: is the bucket itself (rclone ls bucket:, rclone copy ./dir bucket:dir).",
		Keys: []drivers.SecretKey{
			{Name: SecretRcloneConf, Description: "An rclone config with a remote s3 (type s3, the provider of the backend's implementation, the keys, endpoint, region, force_path_style as the backend addresses buckets, no_check_bucket = true) and a remote bucket (type alias, remote s3:<bucket>)."},
		},
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
	for _, v := range [][]byte{[]byte(endpoint), id, secret, []byte(region), data[SecretBucket]} {
		// Every format is line-oriented: a line break in a value would
		// read as another setting. None is expected (keys are issued
		// from a safe alphabet; the endpoint is a parsed URL).
		if strings.ContainsAny(string(v), "\r\n") {
			return fmt.Errorf("secret formats: a value of the Secret holds a line break, which no format can hold")
		}
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
			data[SecretRcloneConf] = fmt.Appendf(nil, "[s3]\ntype = s3\nprovider = %s\naccess_key_id = %s\nsecret_access_key = %s\nendpoint = %s\nregion = %s\nforce_path_style = %t\nno_check_bucket = true\n\n[bucket]\ntype = alias\nremote = s3:%s\n",
				c.server().rclone, id, secret, endpoint, region, c.ForcePathStyle, data[SecretBucket])
		default:
			return fmt.Errorf("secret format %q: the s3 driver offers %s", f, strings.Join(drivers.FormatNames(New()), ", "))
		}
	}
	return nil
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
