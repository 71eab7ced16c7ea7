package s3

import (
	"strings"
	"testing"

	"github.com/Yolean/buckety-controller/drivers"
)

func baseData(endpoint, region string) map[string][]byte {
	d := map[string][]byte{
		SecretEndpoint:        []byte(endpoint),
		SecretBucket:          []byte("team-media"),
		SecretAccessKeyID:     []byte("bky0123abcd-1"),
		SecretSecretAccessKey: []byte("s3cr3tS3cr3tS3cr3tS3cr3tS3cr3tS3cr3tS3cr"),
	}
	if region != "" {
		d[SecretRegion] = []byte(region)
	}
	return d
}

// TestFormats: each format's keys hold the Secret's own values, the region
// defaults to the signing region, and path style follows the backend.
func TestFormats(t *testing.T) {
	all := drivers.FormatNames(New())
	for _, c := range []struct {
		name, endpoint, region, impl string
		pathStyle                    bool
		host, port, wantRegion       string
		provider                     string
	}{
		{"minio", "http://127.0.0.1:9000", "", ImplMinIO, true, "127.0.0.1", "9000", "us-east-1", "Minio"},
		{"aws", "https://s3.eu-north-1.amazonaws.com", "eu-north-1", ImplAWS, false, "s3.eu-north-1.amazonaws.com", "443", "eu-north-1", "AWS"},
		{"http default port", "http://s3.blobs.svc", "", ImplVersityGW, true, "s3.blobs.svc", "80", "us-east-1", "Other"},
		{"r2", "https://acct.r2.cloudflarestorage.com", "auto", ImplR2, false, "acct.r2.cloudflarestorage.com", "443", "auto", "Cloudflare"},
		{"generic", "http://s3.local:8333", "", "", true, "s3.local", "8333", "us-east-1", "Other"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := &Config{Implementation: c.impl, ForcePathStyle: c.pathStyle}
			data := baseData(c.endpoint, c.region)
			if err := cfg.renderFormats(all, data); err != nil {
				t.Fatal(err)
			}
			if err := drivers.CheckSecretData(drivers.AllSecretKeys(New()), data); err != nil {
				t.Fatal(err)
			}
			want := map[string]string{
				SecretAWSAccessKeyID: "bky0123abcd-1", SecretAWSSecretAccessKey: "s3cr3tS3cr3tS3cr3tS3cr3tS3cr3tS3cr3tS3cr",
				SecretAWSEndpointURLS3: c.endpoint, SecretAWSRegion: c.wantRegion, SecretAWSDefaultRegion: c.wantRegion,
				SecretBucketHost: c.host, SecretBucketPort: c.port, SecretBucketName: "team-media", SecretBucketRegion: c.wantRegion,
			}
			for k, v := range want {
				if string(data[k]) != v {
					t.Errorf("%s = %q, want %q", k, data[k], v)
				}
			}
			conf := string(data[SecretAWSConfigFile])
			if !strings.Contains(conf, "endpoint_url = "+c.endpoint+"\n") || !strings.Contains(conf, "region = "+c.wantRegion+"\n") {
				t.Errorf("config:\n%s", conf)
			}
			if got := strings.Contains(conf, "addressing_style = path"); got != c.pathStyle {
				t.Errorf("config path style %v, want %v:\n%s", got, c.pathStyle, conf)
			}
			if !strings.Contains(string(data[SecretAWSCredentialsFile]), "aws_secret_access_key = s3cr3t") {
				t.Errorf("credentials:\n%s", data[SecretAWSCredentialsFile])
			}
			rc := string(data[SecretRcloneConf])
			for _, l := range []string{"[s3]", "type = s3", "provider = " + c.provider, "endpoint = " + c.endpoint, "no_check_bucket = true", "[bucket]", "type = alias", "remote = s3:team-media"} {
				if !strings.Contains(rc, l+"\n") {
					t.Errorf("rclone.conf lacks %q:\n%s", l, rc)
				}
			}
			if strings.Contains(rc, "force_path_style = true") != c.pathStyle {
				t.Errorf("rclone.conf path style, want %v:\n%s", c.pathStyle, rc)
			}
		})
	}
}

// TestFormatsRefuse: an unknown format, and a value that would read as
// another line of a file.
func TestFormatsRefuse(t *testing.T) {
	cfg := &Config{}
	if err := cfg.renderFormats([]string{"s3cmd"}, baseData("http://h:1", "")); err == nil || !strings.Contains(err.Error(), "aws-env, aws-files, obc, rclone") {
		t.Errorf("unknown format: %v", err)
	}
	d := baseData("http://h:1", "")
	d[SecretSecretAccessKey] = []byte("x\n[other]")
	if err := cfg.renderFormats([]string{FormatRclone}, d); err == nil {
		t.Error("a secret with a line break was rendered")
	}
	if err := cfg.renderFormats([]string{FormatOBC}, baseData("not a url", "")); err == nil {
		t.Error("obc of an endpoint without a host was rendered")
	}
}
