// Package versityadmin is a client of VersityGW's admin API: SigV4-signed
// (service s3) PATCH requests with XML bodies, on the gateway's
// --admin-port. It has no Go client upstream; this mirrors its CLI
// (cmd/internal/gwcli).
package versityadmin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/Yolean/buckety-controller/drivers/s3/adminhttp"
)

// ErrUserExists is what CreateUser returns, wrapped, when the access key
// already belongs to a user (or is the root key): the gateway answers 409
// XAdminUserExists and leaves that user as it was. Callers must never turn
// this into an update, or they would take over a user they did not create.
var ErrUserExists = errors.New("versitygw user already exists")

// Client is a client of VersityGW's admin API: SigV4-signed (service
// s3) PATCH requests with XML bodies, on the gateway's --admin-port. It has
// no Go client upstream; this mirrors its CLI (cmd/internal/gwcli).
type Client struct{ s *adminhttp.Signer }

// New returns an admin client signing as accessKey (the root
// or an admin-role user) at the gateway's admin endpoint; hc as
// adminhttp.Client takes it.
func New(endpoint, region, accessKey, secretKey string, hc *http.Client) *Client {
	return &Client{adminhttp.New(endpoint, region, "s3", accessKey, secretKey, hc)}
}

// RoleUser is the only role buckety gives: it allows nothing beyond
// what bucket policies grant ("userplus" may create buckets, "admin"
// bypasses policies).
const RoleUser = "user"

// account is the body of /create-user: the gateway's auth.Account
// with the fields it reads.
type account struct {
	XMLName   xml.Name `xml:"Account"`
	Access    string   `xml:"Access"`
	Secret    string   `xml:"Secret"`
	Role      string   `xml:"Role"`
	UserID    int      `xml:"UserID"`
	GroupID   int      `xml:"GroupID"`
	ProjectID int      `xml:"ProjectID"`
}

// props is the body of /update-user (the gateway's
// auth.MutableProps); absent elements are left unchanged.
type props struct {
	XMLName xml.Name `xml:"MutableProps"`
	Secret  *string  `xml:"Secret,omitempty"`
}

// userList is the answer of /list-users. It carries every user's
// secret in clear: it is decoded into access and role only, and never
// logged or wrapped into errors.
type userList struct {
	Accounts []struct {
		Access string `xml:"Access"`
		Role   string `xml:"Role"`
	} `xml:"Accounts"`
}

// Error is an error answer of the admin API.
type Error struct {
	Route   string
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("versitygw admin %s: HTTP %d %s: %s", e.Route, e.Status, e.Code, e.Message)
}

// Is makes errors.Is(err, ErrUserExists) true for XAdminUserExists.
func (e *Error) Is(target error) bool {
	return target == ErrUserExists && e.Code == "XAdminUserExists"
}

// CreateUser creates a user with role "user". An existing access key
// (including the root's) answers an error that errors.Is ErrUserExists,
// and that user's secret is not changed.
func (a *Client) CreateUser(ctx context.Context, access, secret string) error {
	if err := ValidKey(access); err != nil {
		return fmt.Errorf("access key: %w", err)
	}
	if err := ValidKey(secret); err != nil {
		// Not the secret itself in the message: it is a credential.
		return fmt.Errorf("secret key for %s: %w", access, err)
	}
	body, err := xml.Marshal(account{Access: access, Secret: secret, Role: RoleUser})
	if err != nil {
		return fmt.Errorf("encode /create-user: %w", err)
	}
	_, err = a.do(ctx, "/create-user", nil, body)
	return err
}

// UpdateSecret replaces a user's secret. The issuer does not use it:
// v1.8.0 keeps the request's access string as its IAM cache's key for a
// cached user, which later requests overwrite (credentials_versitygw.go). A missing user answers
// XAdminUserNotFound (404).
func (a *Client) UpdateSecret(ctx context.Context, access, secret string) error {
	if err := ValidKey(access); err != nil {
		return fmt.Errorf("access key: %w", err)
	}
	if err := ValidKey(secret); err != nil {
		return fmt.Errorf("secret key for %s: %w", access, err)
	}
	body, err := xml.Marshal(props{Secret: &secret})
	if err != nil {
		return fmt.Errorf("encode /update-user: %w", err)
	}
	_, err = a.do(ctx, "/update-user", url.Values{"access": {access}}, body)
	return err
}

// DeleteUser deletes a user; a missing user is success (the gateway
// answers 200 for it). Remove the user's policy statements first: a policy
// naming a missing principal blocks every later write of that policy.
func (a *Client) DeleteUser(ctx context.Context, access string) error {
	if err := ValidKey(access); err != nil {
		return fmt.Errorf("access key: %w", err)
	}
	_, err := a.do(ctx, "/delete-user", url.Values{"access": {access}}, nil)
	return err
}

// ListUsers returns every user's role by access key; the root is not
// listed. The gateway has no get-user, so this is how existence is read.
func (a *Client) ListUsers(ctx context.Context) (map[string]string, error) {
	body, err := a.do(ctx, "/list-users", nil, nil)
	if err != nil {
		return nil, err
	}
	var l userList
	if err := xml.Unmarshal(body, &l); err != nil {
		// Not the body: it holds every user's secret.
		return nil, fmt.Errorf("versitygw admin /list-users: decode answer: %w", err)
	}
	users := make(map[string]string, len(l.Accounts))
	for _, acc := range l.Accounts {
		users[acc.Access] = acc.Role
	}
	return users, nil
}

// maxAnswer bounds what is read of an admin answer; a list of users
// is about 250 bytes per user.
const maxAnswer = 64 << 20

// do sends one signed PATCH and returns the answer's body, or a
// *Error for an error status.
func (a *Client) do(ctx context.Context, route string, query url.Values, body []byte) ([]byte, error) {
	resp, err := a.s.Send(ctx, http.MethodPatch, route, query, body, "")
	if err != nil {
		return nil, fmt.Errorf("versitygw admin %s: %w", route, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, fmt.Errorf("versitygw admin %s: read answer: %w", route, err)
	}
	if resp.StatusCode >= 300 {
		e := &Error{Route: route, Status: resp.StatusCode}
		var xe struct {
			Code    string `xml:"Code"`
			Message string `xml:"Message"`
		}
		if xml.Unmarshal(answer, &xe) == nil && xe.Code != "" {
			e.Code, e.Message = xe.Code, xe.Message
		} else {
			// Not the gateway's XML error (a proxy, or the S3 port by
			// mistake): show the start of what came back.
			e.Code, e.Message = http.StatusText(resp.StatusCode), truncateAnswer(string(answer), 200)
		}
		return nil, e
	}
	return answer, nil
}

func truncateAnswer(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// ValidKey checks an access key or secret that buckety derives for
// a VersityGW user. The gateway validates neither, yet the access key ends
// up in a SigV4 Credential scope (split on '/'), an Authorization header
// (split on ',' and '='), a URL query, users.json and bucket-policy
// principals (where "*" means everyone); so allow only what is inert in all
// of them: 16 to 128 ASCII letters, digits, '_' or '-' (AWS's access key
// ID rule, plus '-').
func ValidKey(s string) error {
	if len(s) < 16 || len(s) > 128 {
		return fmt.Errorf("must be 16 to 128 characters, is %d", len(s))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("may contain only ASCII letters, digits, '_' and '-'; found %q at %d", rune(c), i)
		}
	}
	return nil
}

// KeyKnown reports whether the gateway knows an access key, from one S3
// request signed with that key and a secret nobody has: the gateway
// answers an unknown key InvalidAccessKeyId and a known one (a user's, or
// the root's) SignatureDoesNotMatch. Listing users instead would cost a
// request whose answer grows with every user, secrets included.
func KeyKnown(ctx context.Context, endpoint, region, access string, hc *http.Client) (bool, error) {
	b := make([]byte, 20)
	if _, err := rand.Read(b); err != nil {
		return false, err
	}
	st, err := ProbeKey(ctx, endpoint, region, access, hex.EncodeToString(b), hc)
	return st != KeyUnknown, err
}

// KeyState is what the gateway says of an access key and a secret.
type KeyState int

const (
	// KeyUnknown: no user has the access key.
	KeyUnknown KeyState = iota
	// KeyOtherSecret: a user has the key, with another secret.
	KeyOtherSecret
	// KeyMatches: a user has the key and the secret.
	KeyMatches
)

// ProbeKey asks the gateway, with one S3 request (ListBuckets) signed
// with access and secret, whether a user has that key and that secret:
// InvalidAccessKeyId is KeyUnknown, SignatureDoesNotMatch KeyOtherSecret,
// and an answer past authentication (the list, or AccessDenied)
// KeyMatches.
func ProbeKey(ctx context.Context, endpoint, region, access, secret string, hc *http.Client) (KeyState, error) {
	resp, err := adminhttp.New(endpoint, region, "s3", access, secret, hc).Send(ctx, http.MethodGet, "/", nil, nil, "")
	if err != nil {
		return KeyUnknown, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return KeyUnknown, err
	}
	var xe struct {
		Code string `xml:"Code"`
	}
	if xml.Unmarshal(answer, &xe) != nil {
		xe.Code = ""
	}
	switch {
	case xe.Code == "InvalidAccessKeyId":
		return KeyUnknown, nil
	case xe.Code == "SignatureDoesNotMatch":
		return KeyOtherSecret, nil
	case resp.StatusCode/100 == 2, xe.Code == "AccessDenied":
		return KeyMatches, nil
	}
	return KeyUnknown, fmt.Errorf("versitygw: probing access key %s: HTTP %d %s, neither InvalidAccessKeyId nor SignatureDoesNotMatch", access, resp.StatusCode, xe.Code)
}
