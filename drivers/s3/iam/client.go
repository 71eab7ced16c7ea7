package iam

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/Yolean/buckety-controller/drivers/s3/adminhttp"
)

// AWS's IAM endpoint (global, partition aws) and the region its requests
// are signed for.
const (
	AWSEndpoint      = "https://iam.amazonaws.com"
	AWSSigningRegion = "us-east-1"
)

// AWSInlineUserPolicyMaxBytes is AWS's quota on a user's inline policies,
// all of them together, counted without whitespace (IAM and STS quotas:
// "User policy size").
const AWSInlineUserPolicyMaxBytes = 2048

// APIVersion is the IAM Query API version every request names.
const APIVersion = "2010-05-08"

// DefaultTimeout bounds one request, answer included, when the client is
// given an http.Client without a timeout of its own.
const DefaultTimeout = adminhttp.DefaultTimeout

// maxResponse caps how much of an answer is read.
const maxResponse = 1 << 20

// Client calls one IAM endpoint with one set of keys. It is safe for
// concurrent use.
type Client struct{ s *adminhttp.Signer }

// New returns a client of endpoint (AWSEndpoint on AWS; a SeaweedFS S3
// endpoint serves IAM too) signing for region (AWSSigningRegion on AWS)
// with the given keys. hc nil means a plain transport; whatever client is
// given, the copy used has adminhttp's defaults: it follows no redirect
// and has DefaultTimeout unless it has a timeout of its own.
func New(endpoint, region, accessKey, secretKey string, hc *http.Client) *Client {
	return &Client{adminhttp.New(endpoint, region, "iam", accessKey, secretKey, adminhttp.Client(hc, DefaultTimeout))}
}

// Tag is a user's tag.
type Tag struct {
	Key   string `xml:"Key"`
	Value string `xml:"Value"`
}

// User is an IAM user as the server reports it.
type User struct {
	UserName string `xml:"UserName"`
	UserID   string `xml:"UserId"`
	Arn      string `xml:"Arn"`
	Path     string `xml:"Path"`
	// Tags are what the server returned with the user: AWS returns them
	// from CreateUser and GetUser (never from ListUsers); SeaweedFS from
	// none of them (ListUserTags has them).
	Tags []Tag `xml:"Tags>member"`
}

// AccessKey is a key as CreateAccessKey returns it, secret included (the
// only time the server hands the secret out).
type AccessKey struct {
	UserName        string `xml:"UserName"`
	AccessKeyID     string `xml:"AccessKeyId"`
	SecretAccessKey string `xml:"SecretAccessKey"`
	Status          string `xml:"Status"`
}

// AccessKeyMetadata is a key as ListAccessKeys reports it.
type AccessKeyMetadata struct {
	UserName    string `xml:"UserName"`
	AccessKeyID string `xml:"AccessKeyId"`
	// Status is Active or Inactive.
	Status string `xml:"Status"`
}

// CreateUser creates a user under path ("" is "/") with tags. AWS keeps
// both; SeaweedFS keeps neither (its users all have path "/"; TagUser sets
// tags there), so callers must not rely on them to find their users.
func (c *Client) CreateUser(ctx context.Context, name, path string, tags []Tag) (User, error) {
	form := url.Values{"UserName": {name}}
	if path != "" {
		form.Set("Path", path)
	}
	addTags(form, tags)
	var out struct {
		User User `xml:"CreateUserResult>User"`
	}
	err := c.call(ctx, "CreateUser", form, &out)
	return out.User, err
}

// GetUser reads a user.
func (c *Client) GetUser(ctx context.Context, name string) (User, error) {
	var out struct {
		User User `xml:"GetUserResult>User"`
	}
	err := c.call(ctx, "GetUser", url.Values{"UserName": {name}}, &out)
	return out.User, err
}

// ListUsers lists the users whose path starts with pathPrefix ("" is
// all), following the server's markers, listUsersPage users a request.
// SeaweedFS ignores the prefix (and paths): it lists every user.
func (c *Client) ListUsers(ctx context.Context, pathPrefix string) ([]User, error) {
	var users []User
	err := pages("ListUsers", func(marker string) (string, bool, error) {
		form := url.Values{"MaxItems": {strconv.Itoa(listUsersPage)}}
		if pathPrefix != "" {
			form.Set("PathPrefix", pathPrefix)
		}
		if marker != "" {
			form.Set("Marker", marker)
		}
		var out struct {
			Users       []User `xml:"ListUsersResult>Users>member"`
			IsTruncated bool   `xml:"ListUsersResult>IsTruncated"`
			Marker      string `xml:"ListUsersResult>Marker"`
		}
		if err := c.call(ctx, "ListUsers", form, &out); err != nil {
			return "", false, err
		}
		users = append(users, out.Users...)
		return out.Marker, out.IsTruncated, nil
	})
	return users, err
}

// listUsersPage is the most users AWS IAM lists a request (MaxItems; its
// default is 100): a sweep of a thousand users lists them in one.
const listUsersPage = 1000

// pages calls page with each marker the server hands back, "" first,
// until a page is not truncated (or names no marker, or the one it was
// asked with, as SeaweedFS's last page may). A marker the server handed
// back before, or more than maxPages pages, is an error: a server whose
// pages loop must not keep a sweep listing, and growing the list, forever.
func pages(action string, page func(marker string) (next string, truncated bool, err error)) error {
	seen := map[string]bool{}
	marker := ""
	for n := 1; ; n++ {
		next, truncated, err := page(marker)
		switch {
		case err != nil:
			return err
		case !truncated || next == "" || next == marker:
			return nil
		case seen[next]:
			return &Error{Action: action, Code: "PagesLoop", Message: fmt.Sprintf("the server handed back marker %q a second time", next)}
		case n >= maxPages:
			return &Error{Action: action, Code: "TooManyPages", Message: fmt.Sprintf("more than %d pages", maxPages)}
		}
		seen[next] = true
		marker = next
	}
}

// maxPages bounds one listing: 10,000 pages of IAM's default 100 items
// is a million users, far past what a backend issues.
const maxPages = 10000

// TagUser adds tags to a user (replacing the values of keys it has).
func (c *Client) TagUser(ctx context.Context, name string, tags []Tag) error {
	form := url.Values{"UserName": {name}}
	addTags(form, tags)
	return c.call(ctx, "TagUser", form, nil)
}

// ListUserTags lists a user's tags.
func (c *Client) ListUserTags(ctx context.Context, name string) ([]Tag, error) {
	var out struct {
		Tags []Tag `xml:"ListUserTagsResult>Tags>member"`
	}
	err := c.call(ctx, "ListUserTags", url.Values{"UserName": {name}}, &out)
	return out.Tags, err
}

// DeleteUser deletes a user that has no keys (and, on AWS, no inline
// policies) left; otherwise the server answers DeleteConflict.
func (c *Client) DeleteUser(ctx context.Context, name string) error {
	return c.call(ctx, "DeleteUser", url.Values{"UserName": {name}}, nil)
}

// CreateAccessKey creates a key for a user. AWS allows two per user and
// answers LimitExceeded to a third; SeaweedFS has no limit.
func (c *Client) CreateAccessKey(ctx context.Context, user string) (AccessKey, error) {
	return c.CreateGivenAccessKey(ctx, user, "", "")
}

// CreateGivenAccessKey creates the key id with secret for a user (both
// empty: the server makes them, as CreateAccessKey). Caller-supplied keys
// are a SeaweedFS extension (id: 4 to 128 letters and digits; secret: 8
// to 128 characters; an id in use answers EntityAlreadyExists); a server
// without it ignores them and makes its own: callers compare the key
// returned.
func (c *Client) CreateGivenAccessKey(ctx context.Context, user, id, secret string) (AccessKey, error) {
	form := url.Values{"UserName": {user}}
	if id != "" || secret != "" {
		form.Set("AccessKeyId", id)
		form.Set("SecretAccessKey", secret)
	}
	var out struct {
		Key AccessKey `xml:"CreateAccessKeyResult>AccessKey"`
	}
	err := c.call(ctx, "CreateAccessKey", form, &out)
	return out.Key, err
}

// ListAccessKeys lists a user's keys.
func (c *Client) ListAccessKeys(ctx context.Context, user string) ([]AccessKeyMetadata, error) {
	var keys []AccessKeyMetadata
	err := pages("ListAccessKeys", func(marker string) (string, bool, error) {
		form := url.Values{"UserName": {user}}
		if marker != "" {
			form.Set("Marker", marker)
		}
		var out struct {
			Keys        []AccessKeyMetadata `xml:"ListAccessKeysResult>AccessKeyMetadata>member"`
			IsTruncated bool                `xml:"ListAccessKeysResult>IsTruncated"`
			Marker      string              `xml:"ListAccessKeysResult>Marker"`
		}
		if err := c.call(ctx, "ListAccessKeys", form, &out); err != nil {
			return "", false, err
		}
		keys = append(keys, out.Keys...)
		return out.Marker, out.IsTruncated, nil
	})
	return keys, err
}

// DeleteAccessKey deletes a user's key. AWS answers NoSuchEntity for a key
// or user it does not know; SeaweedFS answers success.
func (c *Client) DeleteAccessKey(ctx context.Context, user, keyID string) error {
	return c.call(ctx, "DeleteAccessKey", url.Values{"UserName": {user}, "AccessKeyId": {keyID}}, nil)
}

// PutUserPolicy sets a user's inline policy name to document (JSON),
// replacing one of that name.
func (c *Client) PutUserPolicy(ctx context.Context, user, name string, document []byte) error {
	return c.call(ctx, "PutUserPolicy", url.Values{"UserName": {user}, "PolicyName": {name}, "PolicyDocument": {string(document)}}, nil)
}

// GetUserPolicy reads a user's inline policy as JSON.
func (c *Client) GetUserPolicy(ctx context.Context, user, name string) ([]byte, error) {
	var out struct {
		Document string `xml:"GetUserPolicyResult>PolicyDocument"`
	}
	if err := c.call(ctx, "GetUserPolicy", url.Values{"UserName": {user}, "PolicyName": {name}}, &out); err != nil {
		return nil, err
	}
	doc := strings.TrimSpace(out.Document)
	// AWS URL-encodes the document (RFC 3986); SeaweedFS does not. A JSON
	// document starts with "{" either way once decoded.
	if !strings.HasPrefix(doc, "{") {
		if d, err := url.QueryUnescape(doc); err == nil {
			doc = d
		}
	}
	return []byte(doc), nil
}

// ListUserPolicies lists the names of a user's inline policies.
func (c *Client) ListUserPolicies(ctx context.Context, user string) ([]string, error) {
	var names []string
	err := pages("ListUserPolicies", func(marker string) (string, bool, error) {
		form := url.Values{"UserName": {user}}
		if marker != "" {
			form.Set("Marker", marker)
		}
		var out struct {
			Names       []string `xml:"ListUserPoliciesResult>PolicyNames>member"`
			IsTruncated bool     `xml:"ListUserPoliciesResult>IsTruncated"`
			Marker      string   `xml:"ListUserPoliciesResult>Marker"`
		}
		if err := c.call(ctx, "ListUserPolicies", form, &out); err != nil {
			return "", false, err
		}
		names = append(names, out.Names...)
		return out.Marker, out.IsTruncated, nil
	})
	return names, err
}

// DeleteUserPolicy deletes a user's inline policy.
func (c *Client) DeleteUserPolicy(ctx context.Context, user, name string) error {
	return c.call(ctx, "DeleteUserPolicy", url.Values{"UserName": {user}, "PolicyName": {name}}, nil)
}

// DeleteUserAndKeys deletes a user with everything that would make
// DeleteUser answer DeleteConflict: its keys, then its inline policies.
// A user already gone is not an error, on DeleteUser's word alone: an
// eventually consistent IAM (AWS; SeaweedFS with several filers) may
// answer a read just after CreateUser with NoSuchEntity although the user
// exists, and a revocation that took that for done would leave the user
// and its key live with nothing naming them. So the deletes are still
// made after a NoSuchEntity list: keys it did not show make DeleteUser
// answer DeleteConflict, an error, and the caller tries again.
func (c *Client) DeleteUserAndKeys(ctx context.Context, user string) error {
	keys, err := c.ListAccessKeys(ctx, user)
	if err != nil && !IsNoSuchEntity(err) {
		return err
	}
	for _, k := range keys {
		if err := c.DeleteAccessKey(ctx, user, k.AccessKeyID); err != nil && !IsNoSuchEntity(err) {
			return err
		}
	}
	names, err := c.ListUserPolicies(ctx, user)
	if err != nil && !IsNoSuchEntity(err) {
		return err
	}
	for _, n := range names {
		if err := c.DeleteUserPolicy(ctx, user, n); err != nil && !IsNoSuchEntity(err) {
			return err
		}
	}
	if err := c.DeleteUser(ctx, user); err != nil && !IsNoSuchEntity(err) {
		return err
	}
	return nil
}

func addTags(form url.Values, tags []Tag) {
	for i, t := range tags {
		n := strconv.Itoa(i + 1)
		form.Set("Tags.member."+n+".Key", t.Key)
		form.Set("Tags.member."+n+".Value", t.Value)
	}
}

// call POSTs action with form to the endpoint and decodes a successful
// answer into out (nil: discarded).
func (c *Client) call(ctx context.Context, action string, form url.Values, out any) error {
	f := url.Values{}
	for k, v := range form {
		f[k] = v
	}
	f.Set("Action", action)
	f.Set("Version", APIVersion)
	resp, err := c.s.Send(ctx, http.MethodPost, "/", nil, []byte(f.Encode()), "application/x-www-form-urlencoded; charset=utf-8")
	if err != nil {
		return fmt.Errorf("iam %s: %w", action, err)
	}
	defer resp.Body.Close()
	b, err := adminhttp.ReadAll(resp.Body, maxResponse)
	if err != nil {
		return fmt.Errorf("iam %s: read the answer: %w", action, err)
	}
	if resp.StatusCode/100 != 2 {
		return parseError(action, resp.StatusCode, b)
	}
	if out == nil {
		return nil
	}
	if err := xml.Unmarshal(b, out); err != nil {
		return fmt.Errorf("iam %s: decode the answer: %w", action, err)
	}
	return nil
}

// IAM error codes callers act on (the same on AWS and SeaweedFS).
const (
	CodeNoSuchEntity          = "NoSuchEntity"
	CodeEntityAlreadyExists   = "EntityAlreadyExists"
	CodeLimitExceeded         = "LimitExceeded"
	CodeDeleteConflict        = "DeleteConflict"
	CodeMalformedPolicy       = "MalformedPolicyDocument"
	CodeAccessDenied          = "AccessDenied"
	CodeInvalidClientTokenID  = "InvalidClientTokenId"
	CodeSignatureDoesNotMatch = "SignatureDoesNotMatch"
	CodeThrottling            = "Throttling"
	CodeServiceFailure        = "ServiceFailure"
)

// Error is an IAM error answer.
type Error struct {
	// Action is the call that failed.
	Action string
	// Status is the HTTP status.
	Status int
	// Code is the IAM error code (CodeNoSuchEntity, ...); empty when the
	// answer was not an IAM error document.
	Code      string
	Message   string
	RequestID string
}

func (e *Error) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("iam %s: HTTP %d: %s", e.Action, e.Status, e.Message)
	}
	return fmt.Sprintf("iam %s: %s: %s (HTTP %d)", e.Action, e.Code, e.Message, e.Status)
}

func parseError(action string, status int, b []byte) error {
	// AWS and SeaweedFS answer <ErrorResponse><Error>...; S3-style servers
	// refusing the request before IAM sees it answer <Error>.
	var doc struct {
		XMLName   xml.Name
		Code      string `xml:"Error>Code"`
		Message   string `xml:"Error>Message"`
		RequestID string `xml:"RequestId"`
		// The bare <Error> shape.
		BareCode    string `xml:"Code"`
		BareMessage string `xml:"Message"`
	}
	e := &Error{Action: action, Status: status}
	if xml.Unmarshal(b, &doc) == nil {
		e.Code, e.Message, e.RequestID = doc.Code, doc.Message, doc.RequestID
		if e.Code == "" {
			e.Code, e.Message = doc.BareCode, doc.BareMessage
		}
	}
	if e.Code == "" && e.Message == "" {
		msg := strings.TrimSpace(string(b))
		if len(msg) > 512 {
			msg = msg[:512] + "..."
		}
		e.Message = msg
	}
	return e
}

// CodeOf is the IAM error code of err ("" when err is not an *Error).
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// IsNoSuchEntity reports that the user, key or policy does not exist.
func IsNoSuchEntity(err error) bool { return CodeOf(err) == CodeNoSuchEntity }

// IsEntityAlreadyExists reports that the user (or key id) already exists.
func IsEntityAlreadyExists(err error) bool { return CodeOf(err) == CodeEntityAlreadyExists }

// IsLimitExceeded reports a limit reached, such as a third key on AWS.
func IsLimitExceeded(err error) bool { return CodeOf(err) == CodeLimitExceeded }

// IsDeleteConflict reports a user that still has keys or policies.
func IsDeleteConflict(err error) bool { return CodeOf(err) == CodeDeleteConflict }

// IsAccessDenied reports keys that may not make the call, or that the
// server does not know (or whose signature it rejects).
func IsAccessDenied(err error) bool {
	switch CodeOf(err) {
	case CodeAccessDenied, CodeInvalidClientTokenID, CodeSignatureDoesNotMatch:
		return true
	}
	return false
}
