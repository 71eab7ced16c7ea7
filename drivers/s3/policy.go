package s3

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/Yolean/buckety-controller/drivers/s3/policy"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// bucketPolicy reads a bucket's policy; none is nil.
func (b *Backend) bucketPolicy(ctx context.Context, cl *s3.Client, bucket string) ([]byte, error) {
	out, err := cl.GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: aws.String(bucket)})
	switch {
	case isCode(err, "NoSuchBucketPolicy"):
		return nil, nil
	case err != nil:
		return nil, b.classify(fmt.Errorf("get the policy of bucket %s: %w", bucket, err))
	}
	return []byte(aws.ToString(out.Policy)), nil
}

// putBucketPolicy writes a bucket's policy; an empty one deletes it.
func (b *Backend) putBucketPolicy(ctx context.Context, cl *s3.Client, bucket string, policy []byte) error {
	var err error
	if len(strings.TrimSpace(string(policy))) == 0 {
		_, err = cl.DeleteBucketPolicy(ctx, &s3.DeleteBucketPolicyInput{Bucket: aws.String(bucket)})
	} else {
		_, err = cl.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(bucket), Policy: aws.String(string(policy))})
	}
	if err != nil {
		return b.classify(fmt.Errorf("write the policy of bucket %s: %w", bucket, err))
	}
	return nil
}

// isNoSuchBucket reports a bucket that is gone.
func isNoSuchBucket(err error) bool { return isCode(err, "NoSuchBucket", "NotFound") }

// saidNoSuchBucket reports a bucket the server said, in an answer with a
// body, is gone: NoSuchBucket, not NotFound, which the SDK makes of any
// 404 without a body (a proxy in a rollout, a node whose bucket metadata
// lags). What a bucket gone lets buckety skip or forget (taking a key's
// grant out of its policy, watching it for a grant's return) waits for
// this answer: skipped on a 404 that said nothing, a grant would stay in
// the policy of a bucket that is there, with nothing left to look again.
func saidNoSuchBucket(err error) bool { return isCode(err, "NoSuchBucket") }

// A bucket's policy holds the statements of several owners: the
// VersityGW issuer's grants to keys (credentials_versitygw.go), the
// anonymous read statement (anonread.go), and anyone else's. Each of
// buckety's owners reads and rewrites only its own statements, told by
// Sid, and copies every other statement byte for byte; both hold the
// bucket's policyLock while they read and write.

// bucketySidPrefix marks buckety's statements.
const bucketySidPrefix = "buckety-"

// AnonymousReadSid is the Sid of the statement letting anyone read a
// bucket's objects (anonymousRead).
const AnonymousReadSid = bucketySidPrefix + "anonymous-read"

// isGrantSid tells the VersityGW issuer's statements.
func isGrantSid(sid string) bool {
	return strings.HasPrefix(sid, bucketySidPrefix) && sid != AnonymousReadSid
}

// isAnonymousReadSid tells the anonymous read statement.
func isAnonymousReadSid(sid string) bool { return sid == AnonymousReadSid }

// parsedPolicy is a bucket policy split into one owner's statements and
// the rest.
type parsedPolicy struct {
	// top holds the members other than Statement, as written.
	top map[string]json.RawMessage
	// foreign are the statements the owner did not write, as written.
	foreign []json.RawMessage
	// owned are the owner's statements that decode as policy.Statement;
	// malformed are the Sids of those that do not (edited out of band:
	// a Condition added, say).
	owned     []policy.Statement
	malformed []string
}

// parsePolicy splits a policy for the owner of the Sids owns accepts; an
// empty policy has no parts.
func parsePolicy(doc []byte, owns func(sid string) bool) (*parsedPolicy, error) {
	p := &parsedPolicy{top: map[string]json.RawMessage{}}
	if len(bytes.TrimSpace(doc)) == 0 {
		return p, nil
	}
	if err := json.Unmarshal(doc, &p.top); err != nil {
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
		if err := p.add(i, s, owns); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// add sorts statement i into its part.
func (p *parsedPolicy) add(i int, s json.RawMessage, owns func(string) bool) error {
	var head struct {
		Sid json.RawMessage `json:"Sid"`
	}
	if err := json.Unmarshal(s, &head); err != nil {
		return fmt.Errorf("bucket policy statement %d is not an object: %w", i, err)
	}
	// A Sid that is absent or not a string is not buckety's: the decode
	// error is the answer, not a failure.
	var sid string
	if json.Unmarshal(head.Sid, &sid) != nil || !owns(sid) {
		p.foreign = append(p.foreign, s)
		return nil
	}
	var st policy.Statement
	dec := json.NewDecoder(bytes.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		p.malformed = append(p.malformed, sid)
		return nil
	}
	p.owned = append(p.owned, st)
	return nil
}

// ownedAre reports whether the owner's statements are exactly want (in
// Sid order, Sids unique), whatever their order and formatting: the one
// comparison of what is with what should be, so a re-check writes nothing.
func (p *parsedPolicy) ownedAre(want []policy.Statement) bool {
	if len(p.malformed) > 0 || len(p.owned) != len(want) {
		return false
	}
	have := make([]string, len(p.owned))
	for i, st := range p.owned {
		have[i] = st.Canonical()
	}
	sort.Strings(have)
	for i, st := range want {
		if have[i] != st.Canonical() {
			return false
		}
	}
	return true
}

// render is the policy with the owner's statements replaced by want:
// the foreign statements byte for byte and in order, then want. nil when
// no statement is left (the policy is to be deleted). A new policy
// (empty: there was none) gets Version 2012-10-17; a foreign policy
// without Version keeps none, as that means 2008-10-17, which its
// statements may rely on.
func (p *parsedPolicy) render(want []policy.Statement, empty bool) ([]byte, error) {
	if len(p.foreign) == 0 && len(want) == 0 {
		return nil, nil
	}
	var buf bytes.Buffer
	buf.WriteByte('{')
	if empty {
		p.top["Version"] = json.RawMessage(`"` + policy.Version + `"`)
	}
	// Version first, then the rest (Id, anything else) sorted, then the
	// statements.
	for _, k := range slices.SortedFunc(maps.Keys(p.top), versionFirst) {
		name, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		buf.Write(name)
		buf.WriteByte(':')
		buf.Write(p.top[k])
		buf.WriteByte(',')
	}
	stmts := make([][]byte, 0, len(p.foreign)+len(want))
	for _, st := range p.foreign {
		stmts = append(stmts, st)
	}
	for _, st := range want {
		b, err := json.Marshal(st)
		if err != nil {
			return nil, err
		}
		stmts = append(stmts, b)
	}
	buf.WriteString(`"Statement":[`)
	buf.Write(bytes.Join(stmts, []byte{','}))
	buf.WriteString("]}")
	return buf.Bytes(), nil
}

// versionFirst orders a policy's top-level keys: Version, then the rest.
func versionFirst(a, b string) int {
	if (a == "Version") != (b == "Version") {
		if a == "Version" {
			return -1
		}
		return 1
	}
	return strings.Compare(a, b)
}
