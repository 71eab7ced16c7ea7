package policy

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestEqual(t *testing.T) {
	const sent = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:ListBucket","s3:GetBucketLocation"],"Resource":["arn:aws:s3:::a"]},{"Effect":"Allow","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::a/*"]}]}`
	for _, c := range []struct {
		name string
		b    string
		same bool
	}{
		{"identical", sent, true},
		// What MinIO's info-service-account answers: indented, sorted.
		{"server formatting", "{\n \"Version\": \"2012-10-17\",\n \"Statement\": [\n  {\n   \"Effect\": \"Allow\",\n   \"Action\": [\n    \"s3:GetBucketLocation\",\n    \"s3:ListBucket\"\n   ],\n   \"Resource\": [\n    \"arn:aws:s3:::a\"\n   ]\n  },\n  {\n   \"Effect\": \"Allow\",\n   \"Action\": [\n    \"s3:GetObject\"\n   ],\n   \"Resource\": [\n    \"arn:aws:s3:::a/*\"\n   ]\n  }\n ]\n}", true},
		{"string for one-element list, statements swapped", `{"Statement":[{"Resource":"arn:aws:s3:::a/*","Action":"s3:GetObject","Effect":"Allow","Sid":""},{"Effect":"Allow","Action":["s3:GetBucketLocation","s3:ListBucket","s3:ListBucket"],"Resource":"arn:aws:s3:::a"}],"Version":"2012-10-17"}`, true},
		{"extra action", strings.Replace(sent, `"s3:GetObject"`, `"s3:GetObject","s3:PutObject"`, 1), false},
		{"other bucket", strings.ReplaceAll(sent, ":::a", ":::b"), false},
		{"deny", strings.Replace(sent, `"Allow"`, `"Deny"`, 1), false},
		{"missing statement", `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::a/*"]}]}`, false},
		{"condition", strings.Replace(sent, `"Effect":"Allow",`, `"Effect":"Allow","Condition":{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}},`, 1), false},
		{"not json", `not json`, false},
	} {
		if got := Equal(sent, c.b); got != c.same {
			t.Errorf("%s: want Equal %v, got %v", c.name, c.same, got)
		}
	}
}

// TestStrings: a one-item list may be a string; buckety writes lists.
func TestStrings(t *testing.T) {
	var st Statement
	if err := json.Unmarshal([]byte(`{"Effect":"Allow","Action":"s3:GetObject","Resource":["arn:aws:s3:::a/*"]}`), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Action) != 1 || st.Action[0] != "s3:GetObject" || len(st.Resource) != 1 {
		t.Errorf("want one action and one resource, got %+v", st)
	}
	if err := json.Unmarshal([]byte(`{"Action":7}`), &st); err == nil {
		t.Error("an action that is a number: want an error, got none")
	}
	b, err := json.Marshal(ForBucket("a", []string{"s3:ListBucket", "s3:ListBucket"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:ListBucket"],"Resource":["arn:aws:s3:::a"]}]}`; string(b) != want {
		t.Errorf("want %s, got %s", want, b)
	}
	if !strings.Contains(Statement{Effect: Deny, Action: Strings{"admin:*"}}.Canonical(), `"Action":["admin:*"]`) {
		t.Error("Canonical: want the action as a list")
	}
}
