// Package minioadmin is a small client for MinIO's admin API v3: the
// users, canned policies and service accounts the s3 driver gives every
// access a key of its own with, the server's release, bucket quotas and
// the data usage report.
//
// Why not madmin-go: its module pulls in prometheus/prometheus, gopsutil
// and some 25 other modules for the six routes used here. The wire format
// below is madmin-go v3.0.109's (api.go, user-commands.go,
// policy-commands.go, encrypt.go, quota-commands.go, info-commands.go); the server pinned by test/tools is a
// 2026 build that speaks admin API v3 and refuses v4 with 426.
//
// Requests are SigV4-signed with service "s3", and X-Amz-Content-Sha256
// is the hex SHA-256 of the body (MinIO refuses UNSIGNED-PAYLOAD here).
// Bodies carrying secrets, and some responses, are encrypted with the root
// secret key in madmin's EncryptData format:
//
//	salt (32) | AEAD id (1) | nonce (8) | sio stream
//
// What we send uses id 0x02 (PBKDF2-SHA256, 8192 rounds, AES-256-GCM): the
// server's DecryptData accepts every id, and PBKDF2 avoids argon2id's
// 64 MiB per call in the controller. What the server sends uses argon2id
// (0x00 AES-256-GCM or 0x01 ChaCha20-Poly1305, chosen by its CPU), so
// reading an encrypted response costs us one argon2id derivation.
package minioadmin

import (
	"bytes"
	"context"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/secure-io/sio-go"

	"github.com/Yolean/buckety-controller/drivers/s3/adminhttp"
	"golang.org/x/crypto/argon2"
)

// Admin API routes, relative to the endpoint.
const (
	adminPrefix            = "/minio/admin/v3"
	routeUserInfo          = "/user-info"
	routeAddUser           = "/add-user"
	routeInfoCannedPolicy  = "/info-canned-policy"
	routeAddCannedPolicy   = "/add-canned-policy"
	routeAddServiceAcct    = "/add-service-account"
	routeUpdateServiceAcct = "/update-service-account"
	routeInfoServiceAcct   = "/info-service-account"
	routeDeleteServiceAcct = "/delete-service-account"
	routeListServiceAccts  = "/list-service-accounts"
	routeRemoveUser        = "/remove-user"
	routeListUsers         = "/list-users"
	routeSetUserPolicy     = "/set-user-or-group-policy"
	routeListCannedPolicy  = "/list-canned-policies"
	routeRemoveCannedPol   = "/remove-canned-policy"
	routeServerInfo        = "/info"
	routeGetBucketQuota    = "/get-bucket-quota"
	routeSetBucketQuota    = "/set-bucket-quota"
	routeDataUsageInfo     = "/datausageinfo"
)

// Limits: the server's (policy, name, description) and the client's own
// (response sizes).
const (
	maxInlinePolicy   = 4096
	maxNameLen        = 32
	maxDescriptionLen = 256
	maxResponse       = 16 << 20
	maxErrorBody      = 64 << 10
)

// MinIO error codes this client acts on.
const (
	// CodeNoSuchServiceAccount answers info, update and delete of a
	// service account that does not exist (HTTP 404).
	CodeNoSuchServiceAccount = "XMinioInvalidIAMCredentials"
	// CodeNoSuchUser answers user-info of a missing user (HTTP 404).
	CodeNoSuchUser = "XMinioAdminNoSuchUser"
	// CodeNoSuchPolicy answers info-canned-policy of a missing policy (404).
	CodeNoSuchPolicy = "XMinioAdminNoSuchPolicy"
	// CodeIAMActionNotAllowed answers user-info and remove-user of a key
	// that is a service account or a temporary key, not a user (403).
	CodeIAMActionNotAllowed = "XMinioIAMActionNotAllowed"
	// CodeInvalidIAMCredentials answers add-user of a key that is a
	// service account or a temporary key (403).
	CodeInvalidIAMCredentials = "XMinioInvalidIAMCredentials"
	// CodeServiceAccountNotAllowed answers, among other refusals, adding an
	// access key that is taken (400); the message then says "taken".
	CodeServiceAccountNotAllowed = "XMinioIAMServiceAccountNotAllowed"
)

var (
	// ErrServiceAccountExists: add was refused because the access key is
	// already in use (a service account, of this parent or another, or a
	// user).
	ErrServiceAccountExists = errors.New("the access key is already taken")
	// ErrServiceAccountNotFound: update of a service account that does
	// not exist.
	ErrServiceAccountNotFound = errors.New("no such service account")
)

// Error is a refusal from the admin API.
type Error struct {
	// Route is the admin route, e.g. /add-service-account.
	Route string
	// Status is the HTTP status.
	Status int
	// Code and Message are MinIO's error code and message.
	Code, Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("minio admin %s: HTTP %d %s: %s", e.Route, e.Status, e.Code, e.Message)
}

// Is maps the refusals callers branch on to sentinels.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrServiceAccountExists:
		// The same code also refuses a parent that is itself a service
		// account; only the "taken" messages mean the key is in use.
		return e.Code == CodeServiceAccountNotAllowed && strings.Contains(e.Message, "taken")
	case ErrServiceAccountNotFound:
		return e.Status == http.StatusNotFound && e.Code == CodeNoSuchServiceAccount
	}
	return false
}

// IsCode reports whether err is a refusal with this code and status.
func IsCode(err error, status int, code string) bool {
	var ae *Error
	return errors.As(err, &ae) && ae.Status == status && ae.Code == code
}

// Client calls MinIO's admin API as the root user.
type Client struct {
	s *adminhttp.Signer
	// seal is the key bodies are sealed with (sealKey).
	seal sealKey
}

// New returns a client for the admin API at endpoint (the S3 endpoint:
// MinIO serves both), signing as accessKey (the root user); hc as
// adminhttp.Client takes it.
func New(endpoint, region, accessKey, secretKey string, hc *http.Client) *Client {
	return &Client{s: adminhttp.New(endpoint, region, "s3", accessKey, secretKey, hc)}
}

// ServiceAccount is a service account as info and list report it.
type ServiceAccount struct {
	AccessKey, ParentUser, Name, Description string
	// Status is "on" or "off".
	Status string
	// ImpliedPolicy: the account has no inline policy and holds all its
	// parent's rights.
	ImpliedPolicy bool
	// Policy is the inline policy as the server stores it (info only; on
	// an implied policy, the parent's). The server re-marshals what it was
	// given: compare with policy.Equal, not ==.
	Policy string
}

// call sends one signed request and returns the body of a response with
// one of the wanted statuses; any other status is a *Error.
func (m *Client) call(ctx context.Context, method, route string, query url.Values, body []byte, want ...int) ([]byte, error) {
	contentType := ""
	if len(body) > 0 {
		// Required by /idp/builtin/policy/attach (400 BadRequest without
		// it), harmless elsewhere.
		contentType = "application/octet-stream"
	}
	resp, err := m.s.Send(ctx, method, adminPrefix+route, query, body, contentType)
	if err != nil {
		return nil, fmt.Errorf("minio admin %s: %w", route, err)
	}
	defer resp.Body.Close()
	if !slices.Contains(want, resp.StatusCode) {
		return nil, adminError(route, resp)
	}
	data, err := adminhttp.ReadAll(resp.Body, maxResponse)
	if err != nil {
		return nil, fmt.Errorf("minio admin %s: read response: %w", route, err)
	}
	return data, nil
}

// adminError reads MinIO's error body: JSON from admin handlers, XML from
// the generic ones (signature, upgrade required).
func adminError(route string, resp *http.Response) error {
	e := &Error{Route: route, Status: resp.StatusCode}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if err != nil {
		e.Code, e.Message = resp.Status, "read error body: "+err.Error()
		return e
	}
	var body struct {
		Code    string `json:"Code" xml:"Code"`
		Message string `json:"Message" xml:"Message"`
	}
	if json.Unmarshal(data, &body) == nil || xml.Unmarshal(data, &body) == nil {
		e.Code, e.Message = body.Code, body.Message
	}
	if e.Code == "" {
		e.Code, e.Message = resp.Status, strings.TrimSpace(string(data))
	}
	return e
}

// Info returns a service account; found is false if it does not exist.
// A key that belongs to a regular user is not reported as missing: the
// server answers it with 403 AccessDenied, returned as an error.
func (m *Client) Info(ctx context.Context, access string) (ServiceAccount, bool, error) {
	data, err := m.call(ctx, http.MethodGet, routeInfoServiceAcct, url.Values{"accessKey": {access}}, nil, http.StatusOK)
	if errors.Is(err, ErrServiceAccountNotFound) {
		return ServiceAccount{}, false, nil
	}
	if err != nil {
		return ServiceAccount{}, false, err
	}
	if data, err = openBody(m.s.SecretKey(), data); err != nil {
		return ServiceAccount{}, false, fmt.Errorf("minio admin %s: %w", routeInfoServiceAcct, err)
	}
	var r struct {
		ParentUser    string `json:"parentUser"`
		AccountStatus string `json:"accountStatus"`
		ImpliedPolicy bool   `json:"impliedPolicy"`
		Policy        string `json:"policy"`
		Name          string `json:"name"`
		Description   string `json:"description"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return ServiceAccount{}, false, fmt.Errorf("minio admin %s: decode: %w", routeInfoServiceAcct, err)
	}
	return ServiceAccount{AccessKey: access, ParentUser: r.ParentUser, Status: r.AccountStatus, Name: r.Name,
		Description: r.Description, ImpliedPolicy: r.ImpliedPolicy, Policy: r.Policy}, true, nil
}

// Add creates a service account of parent with this key and inline
// policy. A taken access key is an error matching ErrServiceAccountExists;
// the existing account is left as it was.
func (m *Client) Add(ctx context.Context, parent, access, secret string, policy []byte, name, description string) error {
	if err := ValidKey(access); err != nil {
		return err
	}
	if err := ValidSecret(secret); err != nil {
		return err
	}
	if err := ValidInlinePolicy(policy); err != nil {
		return err
	}
	// The server answers a bad name or description with a generic
	// XMinioInvalidResource; say what is wrong instead.
	if name != "" && !nameRE.MatchString(name) {
		return fmt.Errorf("service account name %q: want at most %d ASCII letters, digits, '_' or '-', starting with a letter", name, maxNameLen)
	}
	if len(description) > maxDescriptionLen {
		return fmt.Errorf("service account description: want at most %d bytes, got %d", maxDescriptionLen, len(description))
	}
	body, err := m.sealJSON(struct {
		Policy      json.RawMessage `json:"policy"`
		TargetUser  string          `json:"targetUser"`
		AccessKey   string          `json:"accessKey"`
		SecretKey   string          `json:"secretKey"`
		Name        string          `json:"name,omitempty"`
		Description string          `json:"description,omitempty"`
	}{policy, parent, access, secret, name, description})
	if err != nil {
		return fmt.Errorf("minio admin %s: %w", routeAddServiceAcct, err)
	}
	// The answer is the credentials we sent, encrypted with argon2id:
	// not worth 64 MiB to read.
	_, err = m.call(ctx, http.MethodPut, routeAddServiceAcct, nil, body, http.StatusOK)
	return err
}

// Update sets a service account's inline policy and, if secret is not
// empty, its secret. The policy is always sent: an update without
// newPolicy silently drops the inline policy, leaving the account with all
// its parent's rights. Name and description are kept. A missing account
// is an error matching ErrServiceAccountNotFound.
func (m *Client) Update(ctx context.Context, access, secret string, policy []byte) error {
	if secret != "" {
		if err := ValidSecret(secret); err != nil {
			return err
		}
	}
	if err := ValidInlinePolicy(policy); err != nil {
		return err
	}
	body, err := m.sealJSON(struct {
		NewPolicy    json.RawMessage `json:"newPolicy"`
		NewSecretKey string          `json:"newSecretKey,omitempty"`
	}{policy, secret})
	if err != nil {
		return fmt.Errorf("minio admin %s: %w", routeUpdateServiceAcct, err)
	}
	_, err = m.call(ctx, http.MethodPost, routeUpdateServiceAcct, url.Values{"accessKey": {access}}, body, http.StatusNoContent)
	return err
}

// Delete removes a service account; a missing one is success.
func (m *Client) Delete(ctx context.Context, access string) error {
	_, err := m.call(ctx, http.MethodDelete, routeDeleteServiceAcct, url.Values{"accessKey": {access}}, nil, http.StatusNoContent)
	if errors.Is(err, ErrServiceAccountNotFound) {
		return nil
	}
	return err
}

// List returns parent's service accounts, without their policies.
func (m *Client) List(ctx context.Context, parent string) ([]ServiceAccount, error) {
	data, err := m.call(ctx, http.MethodGet, routeListServiceAccts, url.Values{"user": {parent}}, nil, http.StatusOK)
	if err != nil {
		return nil, err
	}
	if data, err = openBody(m.s.SecretKey(), data); err != nil {
		return nil, fmt.Errorf("minio admin %s: %w", routeListServiceAccts, err)
	}
	var r struct {
		Accounts []struct {
			AccessKey     string `json:"accessKey"`
			ParentUser    string `json:"parentUser"`
			AccountStatus string `json:"accountStatus"`
			ImpliedPolicy bool   `json:"impliedPolicy"`
			Name          string `json:"name"`
			Description   string `json:"description"`
		} `json:"accounts"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("minio admin %s: decode: %w", routeListServiceAccts, err)
	}
	out := make([]ServiceAccount, 0, len(r.Accounts))
	for _, a := range r.Accounts {
		out = append(out, ServiceAccount{AccessKey: a.AccessKey, ParentUser: a.ParentUser, Status: a.AccountStatus,
			Name: a.Name, Description: a.Description, ImpliedPolicy: a.ImpliedPolicy})
	}
	return out, nil
}

// sealJSON marshals v and encrypts it for the server.
func (m *Client) sealJSON(v any) ([]byte, error) {
	plain, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	salt, key, err := m.seal.get(m.s.SecretKey())
	if err != nil {
		return nil, err
	}
	return sealWith(salt, key, plain)
}

// MaxCannedPolicy is the largest canned policy the server takes (its
// maxBucketPolicySize, checked against the request's length): a user's
// policy, unlike a service account's inline one, may reach it.
const MaxCannedPolicy = 20 << 10

// ValidInlinePolicy checks MinIO's limit on a service account's policy.
// The server measures its own re-marshalled form, which for buckety's
// compact policies is no longer than what is sent.
func ValidInlinePolicy(p []byte) error {
	if len(p) == 0 {
		// An empty policy would give the account all its parent's rights.
		return errors.New("service account policy: empty (it would hold all its parent's rights)")
	}
	if len(p) > maxInlinePolicy {
		return fmt.Errorf("service account policy: want at most %d bytes, got %d", maxInlinePolicy, len(p))
	}
	return nil
}

// Keys.

var (
	keyRE  = regexp.MustCompile(`^[a-z0-9-]{3,20}$`)
	nameRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_-]{0,31}$`)
)

// ValidKey checks an access key buckety derives: MinIO takes 3–20
// characters without '=' or ','; buckety keeps to [a-z0-9-] so keys are
// safe in URLs, policies and Secrets alike.
func ValidKey(access string) error {
	if !keyRE.MatchString(access) {
		return fmt.Errorf("service account access key %q: want 3-20 characters of [a-z0-9-]", access)
	}
	return nil
}

// userKeyRE is ValidUserKey's rule.
var userKeyRE = regexp.MustCompile(`^[a-z0-9-]{3,64}$`)

// ValidUserKey checks the access key of a user buckety makes: MinIO
// takes a user's key of 3 characters or more without '=' or ','
// (auth.IsAccessKeyValid, ContainsReservedChars; the 20-character limit
// of ValidKey is its service accounts'); buckety keeps to 3-64 characters
// of [a-z0-9-], which an IAM user name would also take.
func ValidUserKey(access string) error {
	if !userKeyRE.MatchString(access) {
		return fmt.Errorf("user access key %q: want 3-64 characters of [a-z0-9-]", access)
	}
	return nil
}

// ValidSecret checks a secret key buckety derives: MinIO takes 8–40
// characters; buckety keeps to printable ASCII without spaces, so a secret
// survives environment variables and config files unquoted.
func ValidSecret(s string) error {
	if len(s) < 8 || len(s) > 40 {
		return fmt.Errorf("service account secret key: want 8-40 characters, got %d", len(s))
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return fmt.Errorf("service account secret key: character %d is not printable ASCII", i)
		}
	}
	return nil
}

// madmin's encrypted bodies.

// AEAD ids of madmin's EncryptData, and its key-derivation parameters.
const (
	madminArgon2idAESGCM   = 0x00
	madminArgon2idChaCha20 = 0x01
	madminPBKDF2AESGCM     = 0x02

	madminSaltLen        = 32
	madminNonceLen       = 8
	madminHeaderLen      = madminSaltLen + 1 + madminNonceLen
	madminArgon2idTime   = 1
	madminArgon2idMemory = 64 * 1024 // KiB
	madminArgon2idThread = 4
	madminPBKDF2Cost     = 8192
	madminKeyLen         = 32
)

// argon2Mu serialises argon2id derivations (as madmin does): each takes
// 64 MiB, and concurrent reconciles must not multiply that.
var argon2Mu sync.Mutex

// argon2Count counts the argon2id derivations of the process.
var argon2Count atomic.Uint64

// Argon2idDerivations is how many argon2id derivations the process has
// made to open the server's encrypted answers, 64 MiB of memory each:
// what the credential sweep, which runs every interval, must not add to
// (its tests bound it).
func Argon2idDerivations() uint64 { return argon2Count.Load() }

// madminStream derives the key for an AEAD id and returns its sio stream.
func madminStream(password string, id byte, salt []byte) (*sio.Stream, error) {
	switch id {
	case madminArgon2idAESGCM, madminArgon2idChaCha20:
		argon2Mu.Lock()
		argon2Count.Add(1)
		key := argon2.IDKey([]byte(password), salt, madminArgon2idTime, madminArgon2idMemory, madminArgon2idThread, madminKeyLen)
		argon2Mu.Unlock()
		if id == madminArgon2idAESGCM {
			return sio.AES_256_GCM.Stream(key)
		}
		return sio.ChaCha20Poly1305.Stream(key)
	case madminPBKDF2AESGCM:
		key, err := pbkdf2Key(password, salt)
		if err != nil {
			return nil, err
		}
		return sio.AES_256_GCM.Stream(key)
	}
	return nil, fmt.Errorf("unknown madmin encryption id 0x%02x", id)
}

// pbkdf2Key is madmin's PBKDF2 key for password and salt.
func pbkdf2Key(password string, salt []byte) ([]byte, error) {
	return pbkdf2.Key(sha256.New, password, salt, madminPBKDF2Cost, madminKeyLen)
}

// sealKeyUses is how many bodies one derived key seals before sealKey
// derives another from a new salt.
const sealKeyUses = 1024

// sealKey is the PBKDF2 key a client seals its bodies with, derived from
// the root secret and a random salt and kept for sealKeyUses bodies. The
// server derives the key from the salt in each body's header, so a salt
// may serve many bodies; what must not repeat under one key is the
// nonce, 8 random bytes per body (with 1024 bodies a key, a repeat is
// about 1024²/2⁶⁵ ≈ 3·10⁻¹⁴ likely). The derivation is 8192 rounds of
// HMAC-SHA256, about 1.6 ms of CPU, and add-user sends one body per
// per-access key: derived per body, it was most of the controller's CPU
// that a MinIO key costs beyond a shared one. A recorded body reveals
// the root secret to an offline guess no sooner than before: one salt
// and its body suffice for that with a salt per body too.
type sealKey struct {
	mu       sync.Mutex
	password string
	salt     []byte
	key      []byte
	uses     int
}

// get returns the salt and key to seal the next body with, deriving them
// afresh when password is not the one they were derived from or when
// they sealed sealKeyUses bodies.
func (k *sealKey) get(password string) (salt, key []byte, err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.key == nil || k.password != password || k.uses >= sealKeyUses {
		salt := make([]byte, madminSaltLen)
		if _, err := rand.Read(salt); err != nil {
			return nil, nil, err
		}
		key, err := pbkdf2Key(password, salt)
		if err != nil {
			return nil, nil, err
		}
		k.password, k.salt, k.key, k.uses = password, salt, key, 0
	}
	k.uses++
	return k.salt, k.key, nil
}

// sealWith encrypts plaintext in madmin's EncryptData format with id
// madminPBKDF2AESGCM and the key derived from salt.
func sealWith(salt, key, plaintext []byte) ([]byte, error) {
	stream, err := sio.AES_256_GCM.Stream(key)
	if err != nil {
		return nil, err
	}
	return sealStream(salt, madminPBKDF2AESGCM, stream, plaintext)
}

// sealStream writes the header (salt, id and a random nonce) and the
// plaintext encrypted with stream.
func sealStream(salt []byte, id byte, stream *sio.Stream, plaintext []byte) ([]byte, error) {
	if len(salt) != madminSaltLen {
		return nil, fmt.Errorf("salt of %d bytes, want %d", len(salt), madminSaltLen)
	}
	hdr := make([]byte, madminHeaderLen)
	copy(hdr, salt)
	hdr[madminSaltLen] = id
	if _, err := rand.Read(hdr[madminSaltLen+1:]); err != nil {
		return nil, err
	}
	nonce := hdr[madminSaltLen+1:]
	if len(nonce) != stream.NonceSize() {
		return nil, fmt.Errorf("nonce size %d, stream wants %d", len(nonce), stream.NonceSize())
	}
	out := bytes.NewBuffer(make([]byte, 0, int64(len(hdr)+len(plaintext))+stream.Overhead(int64(len(plaintext)))))
	out.Write(hdr)
	w := stream.EncryptWriter(out, nonce, nil)
	if _, err := w.Write(plaintext); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// openBody decrypts a body in madmin's EncryptData format, whichever
// AEAD id the server chose.
func openBody(password string, data []byte) ([]byte, error) {
	if len(data) < madminHeaderLen {
		return nil, fmt.Errorf("encrypted body: %d bytes, shorter than its %d-byte header", len(data), madminHeaderLen)
	}
	salt, id, nonce := data[:madminSaltLen], data[madminSaltLen], data[madminSaltLen+1:madminHeaderLen]
	stream, err := madminStream(password, id, salt)
	if err != nil {
		return nil, err
	}
	plain, err := io.ReadAll(stream.DecryptReader(bytes.NewReader(data[madminHeaderLen:]), nonce, nil))
	if err != nil {
		return nil, fmt.Errorf("decrypt body: %w", err)
	}
	return plain, nil
}

// openIfEncrypted returns JSON bodies as they are and decrypts others (a
// random salt is valid JSON practically never).
func openIfEncrypted(password string, data []byte) ([]byte, error) {
	if json.Valid(data) {
		return data, nil
	}
	return openBody(password, data)
}

// Users: what the s3 driver issues per access (its credentials_minio.go). A MinIO user owns no
// other key, and a service account of one user cannot reach another
// user's keys; the policy buckety attaches also denies every admin action,
// so an issued key cannot list, inspect, create or delete any key, its own
// included, nor change its own secret.

// User is a user as user-info and list-users report it.
type User struct {
	// Status is "enabled" or "disabled".
	Status string `json:"status"`
	// PolicyName is the user's attached policies, comma-separated.
	PolicyName string `json:"policyName"`
}

// policies is the user's attached policies, in the server's order.
func (u User) Policies() []string {
	var out []string
	for p := range strings.SplitSeq(u.PolicyName, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// KeyTaken reports whether an access key is in use on the server, as a
// user (user-info answers it) or as a service account or temporary key
// (user-info refuses it with XMinioIAMActionNotAllowed). One request,
// whose answer is plain JSON: no argon2id.
func (m *Client) KeyTaken(ctx context.Context, access string) (bool, error) {
	_, err := m.call(ctx, http.MethodGet, routeUserInfo, url.Values{"accessKey": {access}}, nil, http.StatusOK)
	switch {
	case err == nil:
		return true, nil
	case IsCode(err, http.StatusNotFound, CodeNoSuchUser):
		return false, nil
	case IsCode(err, http.StatusForbidden, CodeIAMActionNotAllowed):
		return true, nil
	}
	return false, err
}

// ErrNotAUser: add-user or remove-user of a key that is a service account
// or a temporary key.
var ErrNotAUser = errors.New("the access key is a service account or a temporary key, not a user")

// SetUser creates an enabled user with this secret, or sets an existing
// user's secret and enables it (add-user is an upsert). A key that is a
// service account is an error matching ErrNotAUser.
func (m *Client) SetUser(ctx context.Context, user, secret string) error {
	if err := ValidUserKey(user); err != nil {
		return err
	}
	if err := ValidSecret(secret); err != nil {
		return err
	}
	body, err := m.sealJSON(map[string]string{"secretKey": secret, "status": "enabled"})
	if err != nil {
		return fmt.Errorf("minio admin %s: %w", routeAddUser, err)
	}
	_, err = m.call(ctx, http.MethodPut, routeAddUser, url.Values{"accessKey": {user}}, body, http.StatusOK)
	if IsCode(err, http.StatusForbidden, CodeInvalidIAMCredentials) {
		return fmt.Errorf("%w: %w", ErrNotAUser, err)
	}
	return err
}

// PutCannedPolicy writes a canned policy (created or replaced).
func (m *Client) PutCannedPolicy(ctx context.Context, name string, policy []byte) error {
	_, err := m.call(ctx, http.MethodPut, routeAddCannedPolicy, url.Values{"name": {name}}, policy, http.StatusOK)
	return err
}

// SetUserPolicy makes policyName the user's only policy: set-user-or-
// group-policy replaces what is attached (attach would keep a policy an
// operator added beside it).
func (m *Client) SetUserPolicy(ctx context.Context, user, policyName string) error {
	_, err := m.call(ctx, http.MethodPut, routeSetUserPolicy,
		url.Values{"policyName": {policyName}, "userOrGroup": {user}, "isGroup": {"false"}}, nil, http.StatusOK, http.StatusNoContent)
	return err
}

// RemoveUser deletes a user (and with it any key the user made for
// itself); a missing user is success, a key that is a service account an
// error matching ErrNotAUser.
func (m *Client) RemoveUser(ctx context.Context, user string) error {
	_, err := m.call(ctx, http.MethodDelete, routeRemoveUser, url.Values{"accessKey": {user}}, nil, http.StatusOK, http.StatusNoContent)
	switch {
	case IsCode(err, http.StatusNotFound, CodeNoSuchUser):
		return nil
	case IsCode(err, http.StatusForbidden, CodeIAMActionNotAllowed):
		return fmt.Errorf("%w: %w", ErrNotAUser, err)
	}
	return err
}

// RemoveCannedPolicy deletes a canned policy; a missing one is success.
// The server refuses to delete a policy still attached to a user.
func (m *Client) RemoveCannedPolicy(ctx context.Context, name string) error {
	_, err := m.call(ctx, http.MethodDelete, routeRemoveCannedPol, url.Values{"name": {name}}, nil, http.StatusOK, http.StatusNoContent)
	if IsCode(err, http.StatusNotFound, CodeNoSuchPolicy) {
		return nil
	}
	return err
}

// ListUsers returns every user of the server by access key. The answer is
// encrypted (one argon2id derivation of 64 MiB per call): the credential
// sweep reads UserInfo of each key instead, and only a listing of every
// issued key (IssuedCredentials) calls this.
func (m *Client) ListUsers(ctx context.Context) (map[string]User, error) {
	data, err := m.call(ctx, http.MethodGet, routeListUsers, nil, nil, http.StatusOK)
	if err != nil {
		return nil, err
	}
	if data, err = openIfEncrypted(m.s.SecretKey(), data); err != nil {
		return nil, fmt.Errorf("minio admin %s: %w", routeListUsers, err)
	}
	out := map[string]User{}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("minio admin %s: decode: %w", routeListUsers, err)
	}
	return out, nil
}

// ListCannedPolicies returns every canned policy of the server by name,
// as the server formats it (compare with policy.Equal).
func (m *Client) ListCannedPolicies(ctx context.Context) (map[string]string, error) {
	data, err := m.call(ctx, http.MethodGet, routeListCannedPolicy, nil, nil, http.StatusOK)
	if err != nil {
		return nil, err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("minio admin %s: decode: %w", routeListCannedPolicy, err)
	}
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		out[k] = string(v)
	}
	return out, nil
}

// CannedPolicy returns one canned policy; found is false if it is missing.
func (m *Client) CannedPolicy(ctx context.Context, name string) (string, bool, error) {
	data, err := m.call(ctx, http.MethodGet, routeInfoCannedPolicy, url.Values{"name": {name}}, nil, http.StatusOK)
	switch {
	case IsCode(err, http.StatusNotFound, CodeNoSuchPolicy):
		return "", false, nil
	case err != nil:
		return "", false, err
	}
	return string(data), true, nil
}

// UserInfo returns a user; found is false if no key has this name, and a
// key that is a service account or a temporary key is an error matching
// ErrNotAUser. The server answers in plain JSON: no argon2id.
func (m *Client) UserInfo(ctx context.Context, user string) (User, bool, error) {
	data, err := m.call(ctx, http.MethodGet, routeUserInfo, url.Values{"accessKey": {user}}, nil, http.StatusOK)
	switch {
	case IsCode(err, http.StatusNotFound, CodeNoSuchUser):
		return User{}, false, nil
	case IsCode(err, http.StatusForbidden, CodeIAMActionNotAllowed):
		return User{}, false, fmt.Errorf("%w: %w", ErrNotAUser, err)
	case err != nil:
		return User{}, false, err
	}
	if data, err = openIfEncrypted(m.s.SecretKey(), data); err != nil {
		return User{}, false, fmt.Errorf("minio admin %s: %w", routeUserInfo, err)
	}
	var u User
	if err := json.Unmarshal(data, &u); err != nil {
		return User{}, false, fmt.Errorf("minio admin %s: decode: %w", routeUserInfo, err)
	}
	return u, true, nil
}

// MinRelease is the oldest MinIO release buckety issues keys on:
// RELEASE.2025-10-15T17-29-55Z fixed GHSA-jjjj-jwhf-8rgr, through which a
// key with a restricted policy could make itself a service account
// without that restriction. On an older server (or one whose release
// cannot be told), a backend with credentials issues nothing, and no access
// is handed the root keys instead (drivers.Issuing.Required).
var MinRelease = time.Date(2025, 10, 15, 17, 29, 55, 0, time.UTC)

// ServerRelease returns the release of every server of the deployment, as
// the admin info reports it (an RFC 3339 time; "DEVELOPMENT.GOGET" for a
// build without release stamps).
func (m *Client) ServerRelease(ctx context.Context) ([]string, error) {
	data, err := m.call(ctx, http.MethodGet, routeServerInfo, nil, nil, http.StatusOK)
	if err != nil {
		return nil, err
	}
	return serverReleases(data)
}

// serverReleases reads the releases of a server-info answer. A server the
// deployment cannot reach now is listed with state "offline" (or
// "initializing") and no release: its release is not known, which is an
// outage (a 503, asked again soon), not a server too old or built
// without release stamps (which would be held for the issuing probe's
// whole TTL).
func serverReleases(data []byte) ([]string, error) {
	var info struct {
		Servers []struct {
			State    string `json:"state"`
			Endpoint string `json:"endpoint"`
			Version  string `json:"version"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(data, &info); err != nil {
		return nil, fmt.Errorf("minio admin %s: decode: %w", routeServerInfo, err)
	}
	var out []string
	for _, s := range info.Servers {
		if s.State != "" && s.State != "online" {
			return nil, &Error{Route: routeServerInfo, Status: http.StatusServiceUnavailable, Code: "ServerNotOnline",
				Message: fmt.Sprintf("server %s is %s: its release cannot be told until it is back", s.Endpoint, s.State)}
		}
		out = append(out, s.Version)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("minio admin %s: the answer names no server", routeServerInfo)
	}
	return out, nil
}

// ReleaseProblem says why a deployment's releases are not supported, ""
// when every server is MinRelease or newer.
func ReleaseProblem(versions []string) string {
	for _, v := range versions {
		t, err := time.Parse(time.RFC3339, v)
		switch {
		case err != nil:
			return fmt.Sprintf("a server reports release %q, which does not say when it was built; buckety issues keys only on MinIO RELEASE.%s or newer (build MinIO with its release stamps, as its own releases are)",
				v, MinRelease.Format("2006-01-02T15-04-05Z"))
		case t.Before(MinRelease):
			return fmt.Sprintf("a server runs MinIO RELEASE.%s, older than RELEASE.%s, the oldest buckety issues keys on (GHSA-jjjj-jwhf-8rgr: a restricted key can make itself an unrestricted one); upgrade MinIO",
				t.UTC().Format("2006-01-02T15-04-05Z"), MinRelease.Format("2006-01-02T15-04-05Z"))
		}
	}
	return ""
}

// Bucket quotas and usage: what the s3 driver's quota parameter and its
// usage report read and write (its quota.go and usage.go).

// QuotaHard is the one quota type MinIO enforces: a PUT that would take
// the bucket past the quota is refused (XMinioAdminBucketQuotaExceeded).
const QuotaHard = "hard"

// BucketQuota is a bucket's quota as get-bucket-quota reports it and
// set-bucket-quota takes it (madmin-go's BucketQuota). A bucket without a
// quota reports zeros.
type BucketQuota struct {
	// Quota is the limit in bytes as releases before August 2023 wrote it;
	// newer ones read Size first, and Quota when Size is 0.
	Quota uint64 `json:"quota"`
	// Size is the limit in bytes.
	Size uint64 `json:"size"`
	// Rate and Requests are stored by the server; buckety keeps them as
	// they are.
	Rate     uint64 `json:"rate"`
	Requests uint64 `json:"requests"`
	// Type is QuotaHard, or empty for none.
	Type string `json:"quotatype,omitempty"`
}

// Bytes is the hard limit the server enforces, 0 for none.
func (q BucketQuota) Bytes() uint64 {
	if q.Type != QuotaHard {
		return 0
	}
	if q.Size > 0 {
		return q.Size
	}
	return q.Quota
}

// WithBytes is q with its hard limit set to n (0: no quota), in both
// fields, so that a server of either generation enforces it.
func (q BucketQuota) WithBytes(n uint64) BucketQuota {
	q.Quota, q.Size, q.Type = n, n, QuotaHard
	if n == 0 {
		q.Type = ""
	}
	return q
}

// BucketQuota returns a bucket's quota.
func (m *Client) BucketQuota(ctx context.Context, bucket string) (BucketQuota, error) {
	data, err := m.call(ctx, http.MethodGet, routeGetBucketQuota, url.Values{"bucket": {bucket}}, nil, http.StatusOK)
	if err != nil {
		return BucketQuota{}, err
	}
	var q BucketQuota
	if err := json.Unmarshal(data, &q); err != nil {
		return BucketQuota{}, fmt.Errorf("minio admin %s: decode: %w", routeGetBucketQuota, err)
	}
	return q, nil
}

// SetBucketQuota writes a bucket's quota; q.Bytes() 0 removes the limit.
func (m *Client) SetBucketQuota(ctx context.Context, bucket string, q BucketQuota) error {
	body, err := json.Marshal(q)
	if err != nil {
		return fmt.Errorf("minio admin %s: %w", routeSetBucketQuota, err)
	}
	_, err = m.call(ctx, http.MethodPut, routeSetBucketQuota, url.Values{"bucket": {bucket}}, body, http.StatusOK)
	return err
}

// DataUsage is MinIO's data usage report: what its scanner last counted,
// per bucket. The scanner runs on its own schedule (a cycle a minute at
// the default speed, MINIO_SCANNER_SPEED), so the report lags writes.
type DataUsage struct {
	// LastUpdate is when the scanner last updated the report; zero before
	// its first pass.
	LastUpdate time.Time `json:"lastUpdate"`
	// Buckets are the buckets the scanner has counted, by name.
	Buckets map[string]BucketUsage `json:"bucketsUsageInfo"`
}

// BucketUsage is one bucket in the data usage report.
type BucketUsage struct {
	// Size is the bytes of every version of every object.
	Size uint64 `json:"size"`
	// Objects counts objects (not their versions).
	Objects uint64 `json:"objectsCount"`
	// Versions counts object versions (0 in an unversioned bucket).
	Versions uint64 `json:"versionsCount"`
}

// DataUsage returns the data usage report: one request for every bucket.
func (m *Client) DataUsage(ctx context.Context) (DataUsage, error) {
	data, err := m.call(ctx, http.MethodGet, routeDataUsageInfo, nil, nil, http.StatusOK)
	if err != nil {
		return DataUsage{}, err
	}
	var u DataUsage
	if err := json.Unmarshal(data, &u); err != nil {
		return DataUsage{}, fmt.Errorf("minio admin %s: decode: %w", routeDataUsageInfo, err)
	}
	return u, nil
}
