package s3

// Per-access keys on VersityGW (measured against the pinned v1.8.0).
//
// VersityGW has no IAM policies of its own for users: a user with role
// "user" can do nothing until a bucket policy names its access key as a
// principal (ACL grants are refused on BucketOwnerEnforced buckets, the
// default). So buckety mints one gateway user per access through the admin
// API and grants it rights in the bucket's policy, beside whatever
// statements someone else wrote there.
//
// Ordering rules the gateway imposes:
//   - a policy naming a principal that does not exist is refused
//     (MalformedPolicy "Invalid principal in policy"), for every statement
//     in the document, not only buckety's: create the user before granting
//     it, remove its statements before deleting it, and expect a foreign
//     statement naming a deleted user to block every later policy write;
//   - deleting a user takes effect at once in the process that served the
//     delete (its IAM cache drops the entry), but other gateway processes
//     sharing the IAM directory may keep it for --iam-cache-ttl (120 s);
//   - the posix backend stores the policy in an extended attribute that
//     shares one filesystem block with the bucket's other attributes: on
//     ext4 a policy above about 3.9 KB fails with InternalError (the log
//     says ENOSPC), which the SDK retries. Hence one statement per role and
//     resource level, listing every principal, rather than one per access.

import (
	"github.com/Yolean/buckety-controller/drivers"

	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
)

// errUserExists is what createUser returns, wrapped, when the access key
// already belongs to a user (or is the root key): the gateway answers 409
// XAdminUserExists and leaves that user as it was. Callers must never turn
// this into an update, or they would take over a user they did not create.
var errUserExists = errors.New("versitygw user already exists")

// errPolicyDrift marks buckety statements in a bucket policy that are not
// what buckety writes (edited actions, principals, resources or fields,
// duplicated, or a principal granted two roles): the caller rewrites them.
var errPolicyDrift = errors.New("buckety's bucket-policy statements differ from what buckety writes")

// errPolicyTooLarge marks a merged policy that the gateway's posix backend
// could not store.
var errPolicyTooLarge = errors.New("bucket policy too large for versitygw")

// versityPolicyMaxBytes is the largest policy buckety writes. Measured on
// ext4: 3912 bytes fit beside a new bucket's ownership and ACL attributes,
// 3924 did not; other attributes (versioning, tags, CORS) take from the same
// block, so keep a margin rather than meet a retried InternalError.
const versityPolicyMaxBytes = 3800

// versityAdmin is a client of VersityGW's admin API: SigV4-signed (service
// s3) PATCH requests with XML bodies, on the gateway's --admin-port. It has
// no Go client upstream; this mirrors its CLI (cmd/internal/gwcli).
type versityAdmin struct{ adminHTTP }

// newVersityAdmin returns an admin client signing as accessKey (the root
// or an admin-role user); hc as newAdminHTTP takes it.
func newVersityAdmin(endpoint, region, accessKey, secretKey string, hc *http.Client) *versityAdmin {
	return &versityAdmin{newAdminHTTP(endpoint, region, accessKey, secretKey, hc)}
}

// versityRoleUser is the only role buckety gives: it allows nothing beyond
// what bucket policies grant ("userplus" may create buckets, "admin"
// bypasses policies).
const versityRoleUser = "user"

// versityAccount is the body of /create-user: the gateway's auth.Account
// with the fields it reads.
type versityAccount struct {
	XMLName   xml.Name `xml:"Account"`
	Access    string   `xml:"Access"`
	Secret    string   `xml:"Secret"`
	Role      string   `xml:"Role"`
	UserID    int      `xml:"UserID"`
	GroupID   int      `xml:"GroupID"`
	ProjectID int      `xml:"ProjectID"`
}

// versityProps is the body of /update-user (the gateway's
// auth.MutableProps); absent elements are left unchanged.
type versityProps struct {
	XMLName xml.Name `xml:"MutableProps"`
	Secret  *string  `xml:"Secret,omitempty"`
}

// versityUserList is the answer of /list-users. It carries every user's
// secret in clear: it is decoded into access and role only, and never
// logged or wrapped into errors.
type versityUserList struct {
	Accounts []struct {
		Access string `xml:"Access"`
		Role   string `xml:"Role"`
	} `xml:"Accounts"`
}

// versityAdminError is an error answer of the admin API.
type versityAdminError struct {
	Route   string
	Status  int
	Code    string
	Message string
}

func (e *versityAdminError) Error() string {
	return fmt.Sprintf("versitygw admin %s: HTTP %d %s: %s", e.Route, e.Status, e.Code, e.Message)
}

// Is makes errors.Is(err, errUserExists) true for XAdminUserExists.
func (e *versityAdminError) Is(target error) bool {
	return target == errUserExists && e.Code == "XAdminUserExists"
}

// createUser creates a user with role "user". An existing access key
// (including the root's) answers an error that errors.Is errUserExists,
// and that user's secret is not changed.
func (a *versityAdmin) createUser(ctx context.Context, access, secret string) error {
	if err := validVersityKey(access); err != nil {
		return fmt.Errorf("access key: %w", err)
	}
	if err := validVersityKey(secret); err != nil {
		// Not the secret itself in the message: it is a credential.
		return fmt.Errorf("secret key for %s: %w", access, err)
	}
	body, err := xml.Marshal(versityAccount{Access: access, Secret: secret, Role: versityRoleUser})
	if err != nil {
		return fmt.Errorf("encode /create-user: %w", err)
	}
	_, err = a.do(ctx, "/create-user", nil, body)
	return err
}

// updateSecret replaces a user's secret. A missing user answers
// XAdminUserNotFound (404).
func (a *versityAdmin) updateSecret(ctx context.Context, access, secret string) error {
	if err := validVersityKey(access); err != nil {
		return fmt.Errorf("access key: %w", err)
	}
	if err := validVersityKey(secret); err != nil {
		return fmt.Errorf("secret key for %s: %w", access, err)
	}
	body, err := xml.Marshal(versityProps{Secret: &secret})
	if err != nil {
		return fmt.Errorf("encode /update-user: %w", err)
	}
	_, err = a.do(ctx, "/update-user", url.Values{"access": {access}}, body)
	return err
}

// deleteUser deletes a user; a missing user is success (the gateway
// answers 200 for it). Remove the user's policy statements first: a policy
// naming a missing principal blocks every later write of that policy.
func (a *versityAdmin) deleteUser(ctx context.Context, access string) error {
	if err := validVersityKey(access); err != nil {
		return fmt.Errorf("access key: %w", err)
	}
	_, err := a.do(ctx, "/delete-user", url.Values{"access": {access}}, nil)
	return err
}

// listUsers returns every user's role by access key; the root is not
// listed. The gateway has no get-user, so this is how existence is read.
func (a *versityAdmin) listUsers(ctx context.Context) (map[string]string, error) {
	body, err := a.do(ctx, "/list-users", nil, nil)
	if err != nil {
		return nil, err
	}
	var l versityUserList
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

// maxAdminAnswer bounds what is read of an admin answer; a list of users
// is about 250 bytes per user.
const maxAdminAnswer = 64 << 20

// do sends one signed PATCH and returns the answer's body, or a
// *versityAdminError for an error status.
func (a *versityAdmin) do(ctx context.Context, route string, query url.Values, body []byte) ([]byte, error) {
	resp, err := a.send(ctx, http.MethodPatch, route, query, body, "")
	if err != nil {
		return nil, fmt.Errorf("versitygw admin %s: %w", route, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAdminAnswer))
	if err != nil {
		return nil, fmt.Errorf("versitygw admin %s: read answer: %w", route, err)
	}
	if resp.StatusCode >= 300 {
		e := &versityAdminError{Route: route, Status: resp.StatusCode}
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

// validVersityKey checks an access key or secret that buckety derives for
// a VersityGW user. The gateway validates neither, yet the access key ends
// up in a SigV4 Credential scope (split on '/'), an Authorization header
// (split on ',' and '='), a URL query, users.json and bucket-policy
// principals (where "*" means everyone); so allow only what is inert in all
// of them: 16 to 128 ASCII letters, digits, '_' or '-' (AWS's access key
// ID rule, plus '-').
func validVersityKey(s string) error {
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

// Bucket policies. buckety owns the statements whose Sid starts with
// bucketySidPrefix, one per role and resource level:
//
//	buckety-ReadWrite-bucket  actions on arn:aws:s3:::BUCKET
//	buckety-ReadWrite-objects actions on arn:aws:s3:::BUCKET/*
//
// each naming every access key with that role on the bucket. Every other
// statement is someone else's and is copied byte for byte (GetBucketPolicy
// returns the stored bytes unchanged, so the Sid is a reliable marker).

// bucketySidPrefix marks buckety's statements.
const bucketySidPrefix = "buckety-"

// The resource levels, as they appear in Sids.
const (
	policyLevelBucket  = "bucket"
	policyLevelObjects = "objects"
)

// bucketyStatement is the one shape buckety writes. Field order is the
// output order.
type bucketyStatement struct {
	Sid       string           `json:"Sid"`
	Effect    string           `json:"Effect"`
	Principal bucketyPrincipal `json:"Principal"`
	Action    []string         `json:"Action"`
	Resource  string           `json:"Resource"`
}

type bucketyPrincipal struct {
	AWS []string `json:"AWS"`
}

// bucketPolicyVersion is the version of a policy buckety creates.
const bucketPolicyVersion = "2012-10-17"

// parsedPolicy is a bucket policy split into its owners' parts.
type parsedPolicy struct {
	// top holds the members other than Statement, as written.
	top map[string]json.RawMessage
	// foreign are the statements buckety did not write, as written.
	foreign []json.RawMessage
	// buckety are buckety's statements that have exactly buckety's shape;
	// malformed are the Sids of those that do not.
	buckety   []bucketyStatement
	malformed []string
}

// parsePolicy splits a policy; an empty one has no parts.
func parsePolicy(policy []byte) (*parsedPolicy, error) {
	p := &parsedPolicy{top: map[string]json.RawMessage{}}
	if len(bytes.TrimSpace(policy)) == 0 {
		return p, nil
	}
	if err := json.Unmarshal(policy, &p.top); err != nil {
		return nil, fmt.Errorf("bucket policy is not a JSON object: %w", err)
	}
	raw, ok := p.top["Statement"]
	delete(p.top, "Statement")
	if !ok {
		return p, nil
	}
	var stmts []json.RawMessage
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '{' {
		// AWS's grammar allows a single statement object.
		stmts = []json.RawMessage{raw}
	} else if err := json.Unmarshal(raw, &stmts); err != nil {
		return nil, fmt.Errorf("bucket policy Statement is neither a list nor an object: %w", err)
	}
	for i, s := range stmts {
		var head struct {
			Sid json.RawMessage `json:"Sid"`
		}
		if err := json.Unmarshal(s, &head); err != nil {
			return nil, fmt.Errorf("bucket policy statement %d is not an object: %w", i, err)
		}
		// A Sid that is absent or not a string is not buckety's: the
		// decode error is the answer, not a failure.
		var sid string
		if json.Unmarshal(head.Sid, &sid) != nil || !strings.HasPrefix(sid, bucketySidPrefix) {
			p.foreign = append(p.foreign, s)
			continue
		}
		var st bucketyStatement
		dec := json.NewDecoder(bytes.NewReader(s))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&st); err != nil {
			p.malformed = append(p.malformed, sid)
			continue
		}
		p.buckety = append(p.buckety, st)
	}
	return p, nil
}

// parseBucketySid splits buckety-ROLE-LEVEL.
func parseBucketySid(sid string) (role, level string, ok bool) {
	rest := strings.TrimPrefix(sid, bucketySidPrefix)
	i := strings.LastIndexByte(rest, '-')
	if i < 0 {
		return "", "", false
	}
	role, level = rest[:i], rest[i+1:]
	if _, known := actionsOf[drivers.Role(role)]; !known || (level != policyLevelBucket && level != policyLevelObjects) {
		return "", "", false
	}
	return role, level, true
}

// actionsFor is a role's actions at one level, sorted.
func actionsFor(role, level string) []string {
	a := actionsOf[drivers.Role(role)].Bucket
	if level == policyLevelObjects {
		a = actionsOf[drivers.Role(role)].Object
	}
	return slices.Sorted(slices.Values(a))
}

// resourceFor is the resource of one level's statement.
func resourceFor(bucket, level string) string {
	if level == policyLevelObjects {
		return objectsARN(bucket)
	}
	return bucketARN(bucket)
}

// wellFormed reports why a buckety statement is not what buckety writes
// for its Sid ("" when it is); bucket "" accepts any bucket.
func (st bucketyStatement) wellFormed(bucket string) string {
	role, level, ok := parseBucketySid(st.Sid)
	switch {
	case !ok:
		return "unknown role or level in Sid"
	case st.Effect != "Allow":
		return "Effect is not Allow"
	case len(st.Principal.AWS) == 0:
		return "no principals"
	case !slices.Equal(slices.Sorted(slices.Values(st.Action)), actionsFor(role, level)):
		return fmt.Sprintf("actions are not the %s role's", role)
	}
	want := resourceFor(bucket, level)
	if bucket == "" {
		// Shape only: arn:aws:s3:::NAME for the bucket, NAME/* for objects.
		name := strings.TrimPrefix(st.Resource, "arn:aws:s3:::")
		if level == policyLevelObjects {
			name = strings.TrimSuffix(name, "/*")
		}
		if name == "" || strings.ContainsAny(name, "/*") {
			return "resource is not a bucket's"
		}
		want = resourceFor(name, level)
	}
	if st.Resource != want {
		return "resource is not the bucket's"
	}
	for _, k := range st.Principal.AWS {
		if validVersityKey(k) != nil {
			return "a principal is not an access key buckety derives"
		}
	}
	return ""
}

// bucketyGrants reads back the grants (access key → role) that buckety's
// statements in a policy make. A principal counts when it is in both of its
// role's statements. The error wraps errPolicyDrift, with the grants still
// readable, when a buckety statement is malformed, repeated, names
// different buckets, or grants a principal at one level only or two roles:
// such principals are left out, and the caller rewrites the policy.
func bucketyGrants(policy []byte) (map[string]string, error) {
	p, err := parsePolicy(policy)
	if err != nil {
		return nil, err
	}
	return p.grants("")
}

// grants reads buckety's statements; bucket "" accepts any one bucket.
func (p *parsedPolicy) grants(bucket string) (map[string]string, error) {
	var problems []string
	for _, sid := range p.malformed {
		problems = append(problems, sid+": not the shape buckety writes")
	}
	// levels[key][role] counts the levels a key is granted per role.
	levels := map[string]map[string]int{}
	seen := map[string]bool{}
	for _, st := range p.buckety {
		if why := st.wellFormed(bucket); why != "" {
			problems = append(problems, st.Sid+": "+why)
			continue
		}
		if seen[st.Sid] {
			problems = append(problems, st.Sid+": repeated")
			continue
		}
		seen[st.Sid] = true
		if bucket == "" {
			bucket = strings.TrimSuffix(strings.TrimPrefix(st.Resource, "arn:aws:s3:::"), "/*")
		}
		role, _, _ := parseBucketySid(st.Sid)
		for _, k := range st.Principal.AWS {
			if levels[k] == nil {
				levels[k] = map[string]int{}
			}
			levels[k][role]++
		}
	}
	grants := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(levels)) {
		roles := levels[k]
		if len(roles) > 1 {
			problems = append(problems, fmt.Sprintf("%s: granted %d roles", k, len(roles)))
			continue
		}
		for role, n := range roles {
			if n != 2 {
				problems = append(problems, fmt.Sprintf("%s: granted %s at one resource level only", k, role))
				continue
			}
			grants[k] = role
		}
	}
	if len(problems) > 0 {
		return grants, fmt.Errorf("%w: %s", errPolicyDrift, strings.Join(problems, "; "))
	}
	return grants, nil
}

// desiredStatements are buckety's statements for grants on a bucket, in
// Sid order.
func desiredStatements(bucket string, grants map[string]string) ([]bucketyStatement, error) {
	byRole := map[string][]string{}
	for k, role := range grants {
		if role == "" {
			role = string(drivers.RoleReadWrite)
		}
		if _, ok := actionsOf[drivers.Role(role)]; !ok {
			return nil, fmt.Errorf("access key %s: unknown role %q", k, role)
		}
		if err := validVersityKey(k); err != nil {
			// "*" would grant everyone.
			return nil, fmt.Errorf("access key %q: %w", k, err)
		}
		byRole[role] = append(byRole[role], k)
	}
	var out []bucketyStatement
	for _, role := range slices.Sorted(maps.Keys(byRole)) {
		keys := byRole[role]
		sort.Strings(keys)
		for _, level := range []string{policyLevelBucket, policyLevelObjects} {
			actions := actionsFor(role, level)
			if len(actions) == 0 {
				continue
			}
			out = append(out, bucketyStatement{
				Sid:       bucketySidPrefix + role + "-" + level,
				Effect:    "Allow",
				Principal: bucketyPrincipal{AWS: keys},
				Action:    actions,
				Resource:  resourceFor(bucket, level),
			})
		}
	}
	return out, nil
}

// canonical is a buckety statement with its lists sorted, as JSON, for
// comparing what is with what should be.
func (st bucketyStatement) canonical() string {
	st.Principal.AWS = slices.Sorted(slices.Values(st.Principal.AWS))
	st.Action = slices.Sorted(slices.Values(st.Action))
	b, err := json.Marshal(st)
	if err != nil {
		// Strings and string slices always marshal.
		panic(err)
	}
	return string(b)
}

// mergeBucketPolicy computes a bucket's policy: the existing one (which may
// be empty) with buckety's statements replaced by those granting grants
// (every buckety access key on the bucket → role, "" meaning ReadWrite).
// Foreign statements are kept byte for byte and in order, followed by
// buckety's in Sid order. changed is false when buckety's statements
// already are what they should be, whatever their order, so a re-check
// writes nothing. A nil policy with changed true means: delete the bucket
// policy (nothing is left in it).
func mergeBucketPolicy(existing []byte, bucket string, grants map[string]string) (policy []byte, changed bool, err error) {
	if bucket == "" {
		return nil, false, errors.New("merge bucket policy: no bucket")
	}
	p, err := parsePolicy(existing)
	if err != nil {
		return nil, false, err
	}
	want, err := desiredStatements(bucket, grants)
	if err != nil {
		return nil, false, err
	}
	changed = len(p.malformed) > 0 || len(p.buckety) != len(want)
	if !changed {
		have := make([]string, len(p.buckety))
		for i, st := range p.buckety {
			have[i] = st.canonical()
		}
		sort.Strings(have)
		// want is in Sid order, and Sids are unique.
		for i, st := range want {
			if have[i] != st.canonical() {
				changed = true
				break
			}
		}
	}
	empty := len(bytes.TrimSpace(existing)) == 0
	if len(p.foreign) == 0 && len(want) == 0 {
		return nil, !empty, nil
	}

	var buf bytes.Buffer
	buf.WriteByte('{')
	if empty {
		// Only for a new policy: a foreign policy without Version means
		// 2008-10-17, which its statements may rely on.
		p.top["Version"] = json.RawMessage(`"` + bucketPolicyVersion + `"`)
	}
	// Version first, then the rest (Id, anything else) sorted, then the
	// statements.
	for _, k := range slices.SortedFunc(maps.Keys(p.top), func(a, b string) int {
		if (a == "Version") != (b == "Version") {
			if a == "Version" {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	}) {
		name, err := json.Marshal(k)
		if err != nil {
			return nil, false, err
		}
		buf.Write(name)
		buf.WriteByte(':')
		buf.Write(p.top[k])
		buf.WriteByte(',')
	}
	buf.WriteString(`"Statement":[`)
	for i, s := range p.foreign {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(s)
	}
	for i, st := range want {
		if i > 0 || len(p.foreign) > 0 {
			buf.WriteByte(',')
		}
		b, err := json.Marshal(st)
		if err != nil {
			return nil, false, err
		}
		buf.Write(b)
	}
	buf.WriteString("]}")
	if changed && buf.Len() > versityPolicyMaxBytes {
		return nil, false, fmt.Errorf("%w: %d bytes for bucket %s with %d grants, at most %d fit", errPolicyTooLarge, buf.Len(), bucket, len(grants), versityPolicyMaxBytes)
	}
	return buf.Bytes(), changed, nil
}

// keyKnown reports whether the gateway knows an access key, from one S3
// request signed with that key and a secret nobody has: the gateway
// answers an unknown key InvalidAccessKeyId and a known one (a user's, or
// the root's) SignatureDoesNotMatch. Listing users instead would cost a
// request whose answer grows with every user, secrets included.
func keyKnown(ctx context.Context, endpoint, region, access string, hc *http.Client) (bool, error) {
	probe, err := newSecret()
	if err != nil {
		return false, err
	}
	resp, err := newAdminHTTP(endpoint, region, access, probe, hc).send(ctx, http.MethodGet, "/", nil, nil, "")
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return false, err
	}
	var xe struct {
		Code string `xml:"Code"`
	}
	if xml.Unmarshal(answer, &xe) != nil {
		xe.Code = ""
	}
	switch xe.Code {
	case "InvalidAccessKeyId":
		return false, nil
	case "SignatureDoesNotMatch":
		return true, nil
	}
	return false, fmt.Errorf("versitygw: probing access key %s: HTTP %d %s, neither InvalidAccessKeyId nor SignatureDoesNotMatch", access, resp.StatusCode, xe.Code)
}
