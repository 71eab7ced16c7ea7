// Package adminhttp is what every admin client of the s3 driver shares
// (MinIO's admin API, VersityGW's admin API, the AWS IAM Query API): one
// set of HTTP defaults and SigV4 signing with the backend's own keys, as
// the servers' own CLIs sign.
//
// The defaults: a client never follows a redirect (a signed request
// carrying a secret must not be resent to another host: a 3xx is answered
// as the error it is), and a client without a timeout of its own gets one,
// so a server that never answers is given up on.
package adminhttp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// DefaultTimeout bounds one request, answer included, when the client has
// no timeout of its own (the s3 driver passes the backend's
// requestTimeout).
const DefaultTimeout = 30 * time.Second

// Client is a copy of hc (nil: a plain transport) that does not follow
// redirects, with timeout (DefaultTimeout when 0) when hc has none.
func Client(hc *http.Client, timeout time.Duration) *http.Client {
	c := &http.Client{}
	if hc != nil {
		*c = *hc
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if c.Timeout <= 0 {
		c.Timeout = timeout
	}
	return c
}

// Signer sends requests to one endpoint, signed with SigV4 for one service
// and region with one set of keys. It is safe for concurrent use.
type Signer struct {
	endpoint string
	region   string
	service  string
	creds    aws.Credentials
	signer   *v4.Signer
	hc       *http.Client
}

// New returns a Signer for endpoint; hc as Client takes it.
func New(endpoint, region, service, accessKey, secretKey string, hc *http.Client) *Signer {
	return &Signer{
		endpoint: strings.TrimRight(endpoint, "/"),
		region:   region,
		service:  service,
		creds:    aws.Credentials{AccessKeyID: accessKey, SecretAccessKey: secretKey},
		signer:   v4.NewSigner(),
		hc:       Client(hc, 0),
	}
}

// SecretKey is the secret the requests are signed with (MinIO encrypts
// admin bodies with it too).
func (s *Signer) SecretKey() string { return s.creds.SecretAccessKey }

// Send signs and sends method on endpoint+path?query with body (and the
// Content-Type contentType, when not ""); the caller closes the response's
// body. For service s3 the payload's hash also goes in
// X-Amz-Content-Sha256, which MinIO and VersityGW verify as S3 does (MinIO
// refuses UNSIGNED-PAYLOAD there); IAM takes the hash in the signature only.
func (s *Signer) Send(ctx context.Context, method, path string, query url.Values, body []byte, contentType string) (*http.Response, error) {
	u := s.endpoint + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	if s.service == "s3" {
		req.Header.Set("X-Amz-Content-Sha256", hash)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if err := s.signer.SignHTTP(ctx, s.creds, req, hash, s.service, s.region, time.Now()); err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	return s.hc.Do(req)
}

// ReadAll reads at most max bytes of r; more is an error, not a silently
// cut answer.
func ReadAll(r io.Reader, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("answer larger than %d bytes", max)
	}
	return b, nil
}
