package iam

import "encoding/json"

// PolicyVersion is the policy language version every document names.
const PolicyVersion = "2012-10-17"

// Policy is an IAM policy document.
type Policy struct {
	Version   string      `json:"Version"`
	Statement []Statement `json:"Statement"`
}

// Statement is one statement of a Policy.
type Statement struct {
	Sid      string   `json:"Sid,omitempty"`
	Effect   string   `json:"Effect"`
	Action   []string `json:"Action"`
	Resource []string `json:"Resource"`
}

// BucketARN and ObjectsARN are the resources of a bucket's bucket-level and
// object-level actions.
func BucketARN(bucket string) string  { return "arn:aws:s3:::" + bucket }
func ObjectsARN(bucket string) string { return "arn:aws:s3:::" + bucket + "/*" }

// BucketPolicy allows bucketActions on the bucket and objectActions on its
// objects, and nothing else: a user holding only this policy can reach no
// other bucket, create none and (without iam: actions) call no IAM API.
// An empty list leaves its statement out.
func BucketPolicy(bucket string, bucketActions, objectActions []string) Policy {
	p := Policy{Version: PolicyVersion}
	if len(bucketActions) > 0 {
		p.Statement = append(p.Statement, Statement{Sid: "Bucket", Effect: "Allow", Action: bucketActions, Resource: []string{BucketARN(bucket)}})
	}
	if len(objectActions) > 0 {
		p.Statement = append(p.Statement, Statement{Sid: "Objects", Effect: "Allow", Action: objectActions, Resource: []string{ObjectsARN(bucket)}})
	}
	return p
}

// JSON is the document as PutUserPolicy takes it.
func (p Policy) JSON() []byte {
	b, err := json.Marshal(p)
	if err != nil {
		// Only strings: Marshal cannot fail.
		panic(err)
	}
	return b
}
