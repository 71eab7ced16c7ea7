// Package policy is the one model of the AWS policy language that the s3
// driver writes and reads, whichever server keeps it: a MinIO user's
// canned policy, an IAM user's inline policy (AWS, SeaweedFS), and
// buckety's statements in a VersityGW bucket policy.
//
// Documents written by buckety use Statement as it is; documents read back
// from a server are compared with Equal, because servers re-format what
// they store (MinIO indents and reorders, SeaweedFS turns a one-item list
// into a string).
package policy

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Version is the policy language version every document buckety writes
// names.
const Version = "2012-10-17"

// Document is a policy document.
type Document struct {
	Version   string      `json:"Version"`
	Statement []Statement `json:"Statement"`
}

// Statement is one statement. Principal is set in bucket policies only.
type Statement struct {
	Sid       string     `json:"Sid,omitempty"`
	Effect    string     `json:"Effect"`
	Principal *Principal `json:"Principal,omitempty"`
	Action    Strings    `json:"Action"`
	Resource  Strings    `json:"Resource,omitempty"`
}

// Principal names who a bucket-policy statement applies to.
type Principal struct {
	AWS Strings `json:"AWS"`
}

// Effects.
const (
	Allow = "Allow"
	Deny  = "Deny"
)

// Strings is a list of strings that the policy language also allows as a
// single string: it reads either, and writes a list.
type Strings []string

// UnmarshalJSON reads a string or a list of strings.
func (s *Strings) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*s = Strings{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("want a string or a list of strings: %w", err)
	}
	*s = many
	return nil
}

// BucketARN and ObjectsARN are the resources of a bucket's bucket-level
// and object-level actions.
func BucketARN(bucket string) string  { return "arn:aws:s3:::" + bucket }
func ObjectsARN(bucket string) string { return "arn:aws:s3:::" + bucket + "/*" }

// ForBucket allows bucketActions on the bucket and objectActions on its
// objects, and nothing else: a key holding only this policy can reach no
// other bucket, create none and call no admin or IAM API (without admin:
// or iam: actions). An empty list leaves its statement out; actions are
// sorted and unique.
func ForBucket(bucket string, bucketActions, objectActions []string) Document {
	return ForBuckets([]string{bucket}, bucketActions, objectActions)
}

// ForBuckets is ForBucket on several buckets at once: one statement
// naming every bucket, one naming the objects of every bucket, so the
// document grows by two resources per bucket and not by two statements.
func ForBuckets(buckets []string, bucketActions, objectActions []string) Document {
	d := Document{Version: Version}
	if len(bucketActions) > 0 {
		d.Statement = append(d.Statement, Statement{Effect: Allow, Action: SortedSet(bucketActions), Resource: arns(buckets, BucketARN)})
	}
	if len(objectActions) > 0 {
		d.Statement = append(d.Statement, Statement{Effect: Allow, Action: SortedSet(objectActions), Resource: arns(buckets, ObjectsARN)})
	}
	return d
}

// arns is arn of every bucket, in order.
func arns(buckets []string, arn func(string) string) Strings {
	out := make(Strings, len(buckets))
	for i, b := range buckets {
		out[i] = arn(b)
	}
	return out
}

// JSON is the document as servers take it, compact.
func (d Document) JSON() []byte {
	b, err := json.Marshal(d)
	if err != nil {
		// Only strings: Marshal cannot fail.
		panic(err)
	}
	return b
}

// Canonical is a statement with its lists sorted and unique, as JSON, for
// comparing what is with what should be.
func (st Statement) Canonical() string {
	st.Action = SortedSet(st.Action)
	st.Resource = SortedSet(st.Resource)
	if st.Principal != nil {
		st.Principal = &Principal{AWS: SortedSet(st.Principal.AWS)}
	}
	b, err := json.Marshal(st)
	if err != nil {
		panic(err) // only strings
	}
	return string(b)
}

// SortedSet is s sorted, without duplicates (a new slice; nil for none).
func SortedSet(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

// Equal reports whether two policy documents mean the same: equal after
// JSON normalisation, with a single string and a one-element list alike,
// and the order of actions, resources and statements (and duplicates among
// them) ignored. Servers store what they parsed and answer with their own
// formatting and order, so byte comparison would see drift that is not
// there. Documents that do not parse are compared as bytes.
func Equal(a, b string) bool {
	na, errA := normalise(a)
	nb, errB := normalise(b)
	if errA != nil || errB != nil {
		return a == b
	}
	return na == nb
}

// setKeys are the statement fields whose values are sets of strings.
var setKeys = []string{"Action", "NotAction", "Resource", "NotResource"}

func normalise(s string) (string, error) {
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
	doc["Statement"] = SortedSet(canon)
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
		return SortedSet(out), nil
	case nil:
		return nil, nil
	}
	return nil, fmt.Errorf("is a %T", v)
}
