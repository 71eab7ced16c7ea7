package s3

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// adminHTTP is what the MinIO and VersityGW admin clients share: requests
// to a server's admin API, signed with SigV4 (service s3) and the root
// keys, as the servers' own CLIs sign them.
type adminHTTP struct {
	endpoint string
	region   string
	creds    aws.Credentials
	signer   *v4.Signer
	hc       *http.Client
}

// newAdminHTTP returns the shared part of an admin client. Whatever client
// it is given, it never follows a redirect (a signed request carrying a
// secret must not be resent to another host: a 3xx is answered as the
// error it is), and a client without a timeout of its own gets
// adminTimeout; hc nil means a plain transport with those bounds.
func newAdminHTTP(endpoint, region, accessKey, secretKey string, hc *http.Client) adminHTTP {
	return adminHTTP{
		endpoint: strings.TrimRight(endpoint, "/"),
		region:   region,
		creds:    aws.Credentials{AccessKeyID: accessKey, SecretAccessKey: secretKey},
		signer:   v4.NewSigner(),
		hc:       boundedAdminClient(hc, adminTimeout),
	}
}

// adminTimeout bounds one admin request, answer included, when the client
// has no timeout of its own (openAdmin gives the backend's requestTimeout).
const adminTimeout = DefaultRequestTimeout

// boundedAdminClient is a copy of hc (nil: a plain transport) that does
// not follow redirects, with timeout when hc has none.
func boundedAdminClient(hc *http.Client, timeout time.Duration) *http.Client {
	c := &http.Client{}
	if hc != nil {
		*c = *hc
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if c.Timeout <= 0 {
		c.Timeout = timeout
	}
	return c
}

// send signs and sends method on endpoint+path?query with body (and the
// Content-Type contentType, when not ""); the caller closes the response's
// body. The payload's hash goes in X-Amz-Content-Sha256, which both
// servers verify as S3 does.
func (a adminHTTP) send(ctx context.Context, method, path string, query url.Values, body []byte, contentType string) (*http.Response, error) {
	u := a.endpoint + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	req.Header.Set("X-Amz-Content-Sha256", hash)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if err := a.signer.SignHTTP(ctx, a.creds, req, hash, "s3", a.region, time.Now()); err != nil {
		return nil, err
	}
	return a.hc.Do(req)
}
