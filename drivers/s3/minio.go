package s3

// A small client for MinIO's admin API v3, enough to give every access a
// service account of its own under one dedicated parent user.
//
// Why not madmin-go: its module pulls in prometheus/prometheus, gopsutil
// and some 25 other modules for the six routes used here. The wire format
// below is madmin-go v3.0.109's (api.go, user-commands.go,
// policy-commands.go, encrypt.go); the server pinned by test/tools is a
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

import (
	"github.com/Yolean/buckety-controller/drivers"

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
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/secure-io/sio-go"
	"golang.org/x/crypto/argon2"
)

// Admin API routes, relative to the endpoint.
const (
	minioAdminPrefix       = "/minio/admin/v3"
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
)

// Limits: the server's (policy, name, description) and the client's own
// (response sizes).
const (
	minioMaxInlinePolicy   = 4096
	minioMaxNameLen        = 32
	minioMaxDescriptionLen = 256
	minioMaxResponse       = 16 << 20
	minioMaxErrorBody      = 64 << 10
)

// MinIO error codes this client acts on.
const (
	// codeNoSuchServiceAccount answers info, update and delete of a
	// service account that does not exist (HTTP 404).
	codeNoSuchServiceAccount = "XMinioInvalidIAMCredentials"
	// codeNoSuchUser answers user-info of a missing user (HTTP 404).
	codeNoSuchUser = "XMinioAdminNoSuchUser"
	// codeNoSuchPolicy answers info-canned-policy of a missing policy (404).
	codeNoSuchPolicy = "XMinioAdminNoSuchPolicy"
	// codeIAMActionNotAllowed answers user-info and remove-user of a key
	// that is a service account or a temporary key, not a user (403).
	codeIAMActionNotAllowed = "XMinioIAMActionNotAllowed"
	// codeInvalidIAMCredentials answers add-user of a key that is a
	// service account or a temporary key (403).
	codeInvalidIAMCredentials = "XMinioInvalidIAMCredentials"
	// codeServiceAccountNotAllowed answers, among other refusals, adding an
	// access key that is taken (400); the message then says "taken".
	codeServiceAccountNotAllowed = "XMinioIAMServiceAccountNotAllowed"
)

var (
	// errServiceAccountExists: add was refused because the access key is
	// already in use (a service account, of this parent or another, or a
	// user).
	errServiceAccountExists = errors.New("the access key is already taken")
	// errServiceAccountNotFound: update of a service account that does
	// not exist.
	errServiceAccountNotFound = errors.New("no such service account")
)

// minioAdminError is a refusal from the admin API.
type minioAdminError struct {
	// Route is the admin route, e.g. /add-service-account.
	Route string
	// Status is the HTTP status.
	Status int
	// Code and Message are MinIO's error code and message.
	Code, Message string
}

func (e *minioAdminError) Error() string {
	return fmt.Sprintf("minio admin %s: HTTP %d %s: %s", e.Route, e.Status, e.Code, e.Message)
}

// Is maps the refusals callers branch on to sentinels.
func (e *minioAdminError) Is(target error) bool {
	switch target {
	case errServiceAccountExists:
		// The same code also refuses a parent that is itself a service
		// account; only the "taken" messages mean the key is in use.
		return e.Code == codeServiceAccountNotAllowed && strings.Contains(e.Message, "taken")
	case errServiceAccountNotFound:
		return e.Status == http.StatusNotFound && e.Code == codeNoSuchServiceAccount
	}
	return false
}

// isAdminCode reports whether err is a refusal with this code and status.
func isAdminCode(err error, status int, code string) bool {
	var ae *minioAdminError
	return errors.As(err, &ae) && ae.Status == status && ae.Code == code
}

// minioAdmin calls MinIO's admin API as the root user.
type minioAdmin struct{ adminHTTP }

// newMinioAdmin returns a client for the admin API at endpoint (the S3
// endpoint: MinIO serves both); hc as newAdminHTTP takes it.
func newMinioAdmin(endpoint, region, accessKey, secretKey string, hc *http.Client) *minioAdmin {
	return &minioAdmin{newAdminHTTP(endpoint, region, accessKey, secretKey, hc)}
}

// minioServiceAccount is a service account as info and list report it.
type minioServiceAccount struct {
	AccessKey, ParentUser, Name, Description string
	// Status is "on" or "off".
	Status string
	// ImpliedPolicy: the account has no inline policy and holds all its
	// parent's rights.
	ImpliedPolicy bool
	// Policy is the inline policy as the server stores it (info only; on
	// an implied policy, the parent's). The server re-marshals what it was
	// given: compare with samePolicy, not ==.
	Policy string
}

// call sends one signed request and returns the body of a response with
// one of the wanted statuses; any other status is a *minioAdminError.
func (m *minioAdmin) call(ctx context.Context, method, route string, query url.Values, body []byte, want ...int) ([]byte, error) {
	contentType := ""
	if len(body) > 0 {
		// Required by /idp/builtin/policy/attach (400 BadRequest without
		// it), harmless elsewhere.
		contentType = "application/octet-stream"
	}
	resp, err := m.send(ctx, method, minioAdminPrefix+route, query, body, contentType)
	if err != nil {
		return nil, fmt.Errorf("minio admin %s: %w", route, err)
	}
	defer resp.Body.Close()
	if !slices.Contains(want, resp.StatusCode) {
		return nil, adminError(route, resp)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, minioMaxResponse+1))
	if err != nil {
		return nil, fmt.Errorf("minio admin %s: read response: %w", route, err)
	}
	if len(data) > minioMaxResponse {
		return nil, fmt.Errorf("minio admin %s: response larger than %d bytes", route, minioMaxResponse)
	}
	return data, nil
}

// adminError reads MinIO's error body: JSON from admin handlers, XML from
// the generic ones (signature, upgrade required).
func adminError(route string, resp *http.Response) error {
	e := &minioAdminError{Route: route, Status: resp.StatusCode}
	data, err := io.ReadAll(io.LimitReader(resp.Body, minioMaxErrorBody))
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

// info returns a service account; found is false if it does not exist.
// A key that belongs to a regular user is not reported as missing: the
// server answers it with 403 AccessDenied, returned as an error.
func (m *minioAdmin) info(ctx context.Context, access string) (minioServiceAccount, bool, error) {
	data, err := m.call(ctx, http.MethodGet, routeInfoServiceAcct, url.Values{"accessKey": {access}}, nil, http.StatusOK)
	if errors.Is(err, errServiceAccountNotFound) {
		return minioServiceAccount{}, false, nil
	}
	if err != nil {
		return minioServiceAccount{}, false, err
	}
	if data, err = openAdminBody(m.creds.SecretAccessKey, data); err != nil {
		return minioServiceAccount{}, false, fmt.Errorf("minio admin %s: %w", routeInfoServiceAcct, err)
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
		return minioServiceAccount{}, false, fmt.Errorf("minio admin %s: decode: %w", routeInfoServiceAcct, err)
	}
	return minioServiceAccount{AccessKey: access, ParentUser: r.ParentUser, Status: r.AccountStatus, Name: r.Name,
		Description: r.Description, ImpliedPolicy: r.ImpliedPolicy, Policy: r.Policy}, true, nil
}

// add creates a service account of parent with this key and inline
// policy. A taken access key is an error matching errServiceAccountExists;
// the existing account is left as it was.
func (m *minioAdmin) add(ctx context.Context, parent, access, secret string, policy []byte, name, description string) error {
	if err := validMinIOKey(access); err != nil {
		return err
	}
	if err := validMinIOSecret(secret); err != nil {
		return err
	}
	if err := validInlinePolicy(policy); err != nil {
		return err
	}
	// The server answers a bad name or description with a generic
	// XMinioInvalidResource; say what is wrong instead.
	if name != "" && !minioNameRE.MatchString(name) {
		return fmt.Errorf("service account name %q: want at most %d ASCII letters, digits, '_' or '-', starting with a letter", name, minioMaxNameLen)
	}
	if len(description) > minioMaxDescriptionLen {
		return fmt.Errorf("service account description: want at most %d bytes, got %d", minioMaxDescriptionLen, len(description))
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

// update sets a service account's inline policy and, if secret is not
// empty, its secret. The policy is always sent: an update without
// newPolicy silently drops the inline policy, leaving the account with all
// its parent's rights. Name and description are kept. A missing account
// is an error matching errServiceAccountNotFound.
func (m *minioAdmin) update(ctx context.Context, access, secret string, policy []byte) error {
	if secret != "" {
		if err := validMinIOSecret(secret); err != nil {
			return err
		}
	}
	if err := validInlinePolicy(policy); err != nil {
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

// delete removes a service account; a missing one is success.
func (m *minioAdmin) delete(ctx context.Context, access string) error {
	_, err := m.call(ctx, http.MethodDelete, routeDeleteServiceAcct, url.Values{"accessKey": {access}}, nil, http.StatusNoContent)
	if errors.Is(err, errServiceAccountNotFound) {
		return nil
	}
	return err
}

// list returns parent's service accounts, without their policies.
func (m *minioAdmin) list(ctx context.Context, parent string) ([]minioServiceAccount, error) {
	data, err := m.call(ctx, http.MethodGet, routeListServiceAccts, url.Values{"user": {parent}}, nil, http.StatusOK)
	if err != nil {
		return nil, err
	}
	if data, err = openAdminBody(m.creds.SecretAccessKey, data); err != nil {
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
	out := make([]minioServiceAccount, 0, len(r.Accounts))
	for _, a := range r.Accounts {
		out = append(out, minioServiceAccount{AccessKey: a.AccessKey, ParentUser: a.ParentUser, Status: a.AccountStatus,
			Name: a.Name, Description: a.Description, ImpliedPolicy: a.ImpliedPolicy})
	}
	return out, nil
}

// sealJSON marshals v and encrypts it for the server.
func (m *minioAdmin) sealJSON(v any) ([]byte, error) {
	plain, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return sealAdminBody(m.creds.SecretAccessKey, madminPBKDF2AESGCM, plain)
}

// Policies.

// iamPolicy is the policy document buckety writes.
type iamPolicy struct {
	Version   string         `json:"Version"`
	Statement []iamStatement `json:"Statement"`
}

type iamStatement struct {
	Effect   string   `json:"Effect"`
	Action   []string `json:"Action"`
	Resource []string `json:"Resource,omitempty"`
}

// denyAdmin is the statement every minted key's policy ends with: no
// admin action at all, its own keys included. MinIO lets a user manage
// its own account (change its secret, make service accounts of itself)
// unless a policy denies it explicitly.
var denyAdmin = iamStatement{Effect: "Deny", Action: []string{"admin:*"}}

// roleNames is actionsOf's roles in a stable order.
func roleNames() []string {
	names := make([]string, 0, len(actionsOf))
	for r := range actionsOf {
		names = append(names, string(r))
	}
	sort.Strings(names)
	return names
}

// minioBucketRE is the characters of an S3 bucket name. Anything else,
// notably '*' and '?', would make the policy's ARNs match other buckets.
var minioBucketRE = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

// minioAccessPolicy is the policy of an access's user: exactly the
// role's actions on that bucket, and every admin action denied. Role ""
// is ReadWrite.
func minioAccessPolicy(bucket string, role drivers.Role) ([]byte, error) {
	a, ok := actionsOf[role.OrDefault()]
	if !ok {
		return nil, fmt.Errorf("unknown role %q (known: %s)", role, strings.Join(roleNames(), ", "))
	}
	if !minioBucketRE.MatchString(bucket) {
		return nil, fmt.Errorf("bucket %q is not a plain S3 bucket name", bucket)
	}
	var st []iamStatement
	if len(a.Bucket) > 0 {
		st = append(st, iamStatement{Effect: "Allow", Action: sortedSet(a.Bucket), Resource: []string{bucketARN(bucket)}})
	}
	if len(a.Object) > 0 {
		st = append(st, iamStatement{Effect: "Allow", Action: sortedSet(a.Object), Resource: []string{objectsARN(bucket)}})
	}
	st = append(st, denyAdmin)
	b, err := json.Marshal(iamPolicy{Version: "2012-10-17", Statement: st})
	if err != nil {
		return nil, err
	}
	if err := validInlinePolicy(b); err != nil {
		return nil, err
	}
	return b, nil
}

// validInlinePolicy checks MinIO's limit on a service account's policy.
// The server measures its own re-marshalled form, which for buckety's
// compact policies is no longer than what is sent.
func validInlinePolicy(p []byte) error {
	if len(p) == 0 {
		// An empty policy would give the account all its parent's rights.
		return errors.New("service account policy: empty (it would hold all its parent's rights)")
	}
	if len(p) > minioMaxInlinePolicy {
		return fmt.Errorf("service account policy: want at most %d bytes, got %d", minioMaxInlinePolicy, len(p))
	}
	return nil
}

func sortedSet(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

// samePolicy reports whether two policy documents mean the same: equal
// after JSON normalisation, with a single string and a one-element list
// alike, and the order of actions, resources and statements (and
// duplicates among them) ignored. MinIO stores what it parsed and answers
// with its own formatting and order, so byte comparison would see drift
// that is not there. Documents that do not parse are compared as bytes.
func samePolicy(a, b string) bool {
	na, errA := normalisePolicy(a)
	nb, errB := normalisePolicy(b)
	if errA != nil || errB != nil {
		return a == b
	}
	return na == nb
}

// setKeys are the statement fields whose values are sets of strings.
var setKeys = []string{"Action", "NotAction", "Resource", "NotResource"}

func normalisePolicy(s string) (string, error) {
	var doc map[string]any
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	if err := d.Decode(&doc); err != nil {
		return "", err
	}
	var stmts []any
	switch st := doc["Statement"].(type) {
	case []any:
		stmts = st
	case map[string]any:
		stmts = []any{st}
	case nil:
	default:
		return "", fmt.Errorf("the statement list is a %T", st)
	}
	canon := make([]string, 0, len(stmts))
	for _, x := range stmts {
		st, ok := x.(map[string]any)
		if !ok {
			return "", fmt.Errorf("statement is a %T", x)
		}
		for _, k := range setKeys {
			if v, ok := st[k]; ok {
				set, err := stringSet(v)
				if err != nil {
					return "", fmt.Errorf("%s: %w", k, err)
				}
				if len(set) == 0 {
					delete(st, k)
				} else {
					st[k] = set
				}
			}
		}
		// Empty Sid and Condition mean the same as absent ones.
		if sid, ok := st["Sid"].(string); ok && sid == "" {
			delete(st, "Sid")
		}
		if c, ok := st["Condition"].(map[string]any); ok && len(c) == 0 {
			delete(st, "Condition")
		}
		b, err := json.Marshal(st) // maps marshal with sorted keys
		if err != nil {
			return "", err
		}
		canon = append(canon, string(b))
	}
	doc["Statement"] = sortedSet(canon)
	if id, ok := doc["ID"].(string); ok && id == "" {
		delete(doc, "ID")
	}
	b, err := json.Marshal(doc)
	return string(b), err
}

func stringSet(v any) ([]string, error) {
	switch v := v.(type) {
	case string:
		return []string{v}, nil
	case []any:
		out := make([]string, 0, len(v))
		for _, x := range v {
			s, ok := x.(string)
			if !ok {
				return nil, fmt.Errorf("element is a %T", x)
			}
			out = append(out, s)
		}
		return sortedSet(out), nil
	case nil:
		return nil, nil
	}
	return nil, fmt.Errorf("is a %T", v)
}

// Keys.

var (
	minioKeyRE  = regexp.MustCompile(`^[a-z0-9-]{3,20}$`)
	minioNameRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_-]{0,31}$`)
)

// validMinIOKey checks an access key buckety derives: MinIO takes 3–20
// characters without '=' or ','; buckety keeps to [a-z0-9-] so keys are
// safe in URLs, policies and Secrets alike.
func validMinIOKey(access string) error {
	if !minioKeyRE.MatchString(access) {
		return fmt.Errorf("service account access key %q: want 3-20 characters of [a-z0-9-]", access)
	}
	return nil
}

// validMinIOSecret checks a secret key buckety derives: MinIO takes 8–40
// characters; buckety keeps to printable ASCII without spaces, so a secret
// survives environment variables and config files unquoted.
func validMinIOSecret(s string) error {
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

// madminStream derives the key for an AEAD id and returns its sio stream.
func madminStream(password string, id byte, salt []byte) (*sio.Stream, error) {
	switch id {
	case madminArgon2idAESGCM, madminArgon2idChaCha20:
		argon2Mu.Lock()
		key := argon2.IDKey([]byte(password), salt, madminArgon2idTime, madminArgon2idMemory, madminArgon2idThread, madminKeyLen)
		argon2Mu.Unlock()
		if id == madminArgon2idAESGCM {
			return sio.AES_256_GCM.Stream(key)
		}
		return sio.ChaCha20Poly1305.Stream(key)
	case madminPBKDF2AESGCM:
		key, err := pbkdf2.Key(sha256.New, password, salt, madminPBKDF2Cost, madminKeyLen)
		if err != nil {
			return nil, err
		}
		return sio.AES_256_GCM.Stream(key)
	}
	return nil, fmt.Errorf("unknown madmin encryption id 0x%02x", id)
}

// sealAdminBody encrypts plaintext in madmin's EncryptData format with the
// given AEAD id (buckety sends madminPBKDF2AESGCM).
func sealAdminBody(password string, id byte, plaintext []byte) ([]byte, error) {
	hdr := make([]byte, madminHeaderLen)
	if _, err := rand.Read(hdr[:madminSaltLen]); err != nil {
		return nil, err
	}
	hdr[madminSaltLen] = id
	if _, err := rand.Read(hdr[madminSaltLen+1:]); err != nil {
		return nil, err
	}
	stream, err := madminStream(password, id, hdr[:madminSaltLen])
	if err != nil {
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

// openAdminBody decrypts a body in madmin's EncryptData format, whichever
// AEAD id the server chose.
func openAdminBody(password string, data []byte) ([]byte, error) {
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
	return openAdminBody(password, data)
}

// Users: what buckety mints per access (scoped.go). A MinIO user owns no
// other key, and a service account of one user cannot reach another
// user's keys; the policy buckety attaches also denies every admin action,
// so a minted key cannot list, inspect, create or delete any key, its own
// included, nor change its own secret.

// minioUser is a user as user-info and list-users report it.
type minioUser struct {
	// Status is "enabled" or "disabled".
	Status string `json:"status"`
	// PolicyName is the user's attached policies, comma-separated.
	PolicyName string `json:"policyName"`
}

// policies is the user's attached policies, in the server's order.
func (u minioUser) policies() []string {
	var out []string
	for p := range strings.SplitSeq(u.PolicyName, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// keyTaken reports whether an access key is in use on the server, as a
// user (user-info answers it) or as a service account or temporary key
// (user-info refuses it with XMinioIAMActionNotAllowed). One request,
// whose answer is plain JSON: no argon2id.
func (m *minioAdmin) keyTaken(ctx context.Context, access string) (bool, error) {
	_, err := m.call(ctx, http.MethodGet, routeUserInfo, url.Values{"accessKey": {access}}, nil, http.StatusOK)
	switch {
	case err == nil:
		return true, nil
	case isAdminCode(err, http.StatusNotFound, codeNoSuchUser):
		return false, nil
	case isAdminCode(err, http.StatusForbidden, codeIAMActionNotAllowed):
		return true, nil
	}
	return false, err
}

// errNotAUser: add-user or remove-user of a key that is a service account
// or a temporary key.
var errNotAUser = errors.New("the access key is a service account or a temporary key, not a user")

// setUser creates an enabled user with this secret, or sets an existing
// user's secret and enables it (add-user is an upsert). A key that is a
// service account is an error matching errNotAUser.
func (m *minioAdmin) setUser(ctx context.Context, user, secret string) error {
	if err := validMinIOKey(user); err != nil {
		return err
	}
	if err := validMinIOSecret(secret); err != nil {
		return err
	}
	body, err := m.sealJSON(map[string]string{"secretKey": secret, "status": "enabled"})
	if err != nil {
		return fmt.Errorf("minio admin %s: %w", routeAddUser, err)
	}
	_, err = m.call(ctx, http.MethodPut, routeAddUser, url.Values{"accessKey": {user}}, body, http.StatusOK)
	if isAdminCode(err, http.StatusForbidden, codeInvalidIAMCredentials) {
		return fmt.Errorf("%w: %w", errNotAUser, err)
	}
	return err
}

// putCannedPolicy writes a canned policy (created or replaced).
func (m *minioAdmin) putCannedPolicy(ctx context.Context, name string, policy []byte) error {
	_, err := m.call(ctx, http.MethodPut, routeAddCannedPolicy, url.Values{"name": {name}}, policy, http.StatusOK)
	return err
}

// setUserPolicy makes policyName the user's only policy: set-user-or-
// group-policy replaces what is attached (attach would keep a policy an
// operator added beside it).
func (m *minioAdmin) setUserPolicy(ctx context.Context, user, policyName string) error {
	_, err := m.call(ctx, http.MethodPut, routeSetUserPolicy,
		url.Values{"policyName": {policyName}, "userOrGroup": {user}, "isGroup": {"false"}}, nil, http.StatusOK, http.StatusNoContent)
	return err
}

// removeUser deletes a user (and with it any key the user made for
// itself); a missing user is success, a key that is a service account an
// error matching errNotAUser.
func (m *minioAdmin) removeUser(ctx context.Context, user string) error {
	_, err := m.call(ctx, http.MethodDelete, routeRemoveUser, url.Values{"accessKey": {user}}, nil, http.StatusOK, http.StatusNoContent)
	switch {
	case isAdminCode(err, http.StatusNotFound, codeNoSuchUser):
		return nil
	case isAdminCode(err, http.StatusForbidden, codeIAMActionNotAllowed):
		return fmt.Errorf("%w: %w", errNotAUser, err)
	}
	return err
}

// removeCannedPolicy deletes a canned policy; a missing one is success.
// The server refuses to delete a policy still attached to a user.
func (m *minioAdmin) removeCannedPolicy(ctx context.Context, name string) error {
	_, err := m.call(ctx, http.MethodDelete, routeRemoveCannedPol, url.Values{"name": {name}}, nil, http.StatusOK, http.StatusNoContent)
	if isAdminCode(err, http.StatusNotFound, codeNoSuchPolicy) {
		return nil
	}
	return err
}

// listUsers returns every user of the server by access key. The answer is
// encrypted (one argon2id derivation per call): the credential sweep makes
// one per pass.
func (m *minioAdmin) listUsers(ctx context.Context) (map[string]minioUser, error) {
	data, err := m.call(ctx, http.MethodGet, routeListUsers, nil, nil, http.StatusOK)
	if err != nil {
		return nil, err
	}
	if data, err = openIfEncrypted(m.creds.SecretAccessKey, data); err != nil {
		return nil, fmt.Errorf("minio admin %s: %w", routeListUsers, err)
	}
	out := map[string]minioUser{}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("minio admin %s: decode: %w", routeListUsers, err)
	}
	return out, nil
}

// listCannedPolicies returns every canned policy of the server by name,
// as the server formats it (compare with samePolicy).
func (m *minioAdmin) listCannedPolicies(ctx context.Context) (map[string]string, error) {
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

// cannedPolicy returns one canned policy; found is false if it is missing.
func (m *minioAdmin) cannedPolicy(ctx context.Context, name string) (string, bool, error) {
	data, err := m.call(ctx, http.MethodGet, routeInfoCannedPolicy, url.Values{"name": {name}}, nil, http.StatusOK)
	switch {
	case isAdminCode(err, http.StatusNotFound, codeNoSuchPolicy):
		return "", false, nil
	case err != nil:
		return "", false, err
	}
	return string(data), true, nil
}

// userInfo returns a user; found is false if no user has this key.
func (m *minioAdmin) userInfo(ctx context.Context, user string) (minioUser, bool, error) {
	data, err := m.call(ctx, http.MethodGet, routeUserInfo, url.Values{"accessKey": {user}}, nil, http.StatusOK)
	switch {
	case isAdminCode(err, http.StatusNotFound, codeNoSuchUser):
		return minioUser{}, false, nil
	case err != nil:
		return minioUser{}, false, err
	}
	if data, err = openIfEncrypted(m.creds.SecretAccessKey, data); err != nil {
		return minioUser{}, false, fmt.Errorf("minio admin %s: %w", routeUserInfo, err)
	}
	var u minioUser
	if err := json.Unmarshal(data, &u); err != nil {
		return minioUser{}, false, fmt.Errorf("minio admin %s: decode: %w", routeUserInfo, err)
	}
	return u, true, nil
}

// MinMinIORelease is the oldest MinIO release buckety mints keys on:
// RELEASE.2025-10-15T17-29-55Z fixed GHSA-jjjj-jwhf-8rgr, through which a
// key with a restricted policy could make itself a service account
// without that restriction. On an older server (or one whose release
// cannot be told), a backend with credentials mints nothing, and no access
// is handed the root keys instead (drivers.Scoping.Required).
var MinMinIORelease = time.Date(2025, 10, 15, 17, 29, 55, 0, time.UTC)

// serverRelease returns the release of every server of the deployment, as
// the admin info reports it (an RFC 3339 time; "DEVELOPMENT.GOGET" for a
// build without release stamps).
func (m *minioAdmin) serverRelease(ctx context.Context) ([]string, error) {
	data, err := m.call(ctx, http.MethodGet, routeServerInfo, nil, nil, http.StatusOK)
	if err != nil {
		return nil, err
	}
	var info struct {
		Servers []struct {
			Endpoint string `json:"endpoint"`
			Version  string `json:"version"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(data, &info); err != nil {
		return nil, fmt.Errorf("minio admin %s: decode: %w", routeServerInfo, err)
	}
	var out []string
	for _, s := range info.Servers {
		out = append(out, s.Version)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("minio admin %s: the answer names no server", routeServerInfo)
	}
	return out, nil
}

// releaseProblem says why a deployment's releases are not supported, ""
// when every server is MinMinIORelease or newer.
func releaseProblem(versions []string) string {
	for _, v := range versions {
		t, err := time.Parse(time.RFC3339, v)
		switch {
		case err != nil:
			return fmt.Sprintf("a server reports release %q, which does not say when it was built; buckety mints keys only on MinIO RELEASE.%s or newer (build MinIO with its release stamps, as its own releases are)",
				v, MinMinIORelease.Format("2006-01-02T15-04-05Z"))
		case t.Before(MinMinIORelease):
			return fmt.Sprintf("a server runs MinIO RELEASE.%s, older than RELEASE.%s, the oldest buckety mints keys on (GHSA-jjjj-jwhf-8rgr: a restricted key can make itself an unrestricted one); upgrade MinIO",
				t.UTC().Format("2006-01-02T15-04-05Z"), MinMinIORelease.Format("2006-01-02T15-04-05Z"))
		}
	}
	return ""
}
