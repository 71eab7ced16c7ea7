package iam

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// fake answers every request with status and body, recording the last
// request's form.
type fake struct {
	status int
	body   string
	form   url.Values
	auth   string
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.form, _ = url.ParseQuery(string(b))
	f.auth = r.Header.Get("Authorization")
	w.WriteHeader(f.status)
	_, _ = io.WriteString(w, f.body)
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		status     int
		code       string
		is         func(error) bool
	}{
		{"aws NoSuchEntity", `<ErrorResponse xmlns="https://iam.amazonaws.com/doc/2010-05-08/"><Error><Type>Sender</Type><Code>NoSuchEntity</Code><Message>The user with name x cannot be found.</Message></Error><RequestId>r1</RequestId></ErrorResponse>`, 404, CodeNoSuchEntity, IsNoSuchEntity},
		{"EntityAlreadyExists", `<ErrorResponse><Error><Code>EntityAlreadyExists</Code><Message>user x already exists</Message></Error></ErrorResponse>`, 409, CodeEntityAlreadyExists, IsEntityAlreadyExists},
		{"LimitExceeded", `<ErrorResponse><Error><Code>LimitExceeded</Code><Message>Cannot exceed quota for AccessKeysPerUser: 2</Message></Error></ErrorResponse>`, 409, CodeLimitExceeded, IsLimitExceeded},
		{"DeleteConflict", `<ErrorResponse><Error><Code>DeleteConflict</Code><Message>has keys</Message></Error></ErrorResponse>`, 409, CodeDeleteConflict, IsDeleteConflict},
		{"s3-style AccessDenied", `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied.</Message></Error>`, 403, CodeAccessDenied, IsAccessDenied},
		{"InvalidClientTokenId", `<ErrorResponse><Error><Code>InvalidClientTokenId</Code><Message>no such key</Message></Error></ErrorResponse>`, 403, CodeInvalidClientTokenID, IsAccessDenied},
		{"not XML", `bad gateway`, 502, "", func(err error) bool { return strings.Contains(err.Error(), "bad gateway") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(&fake{status: tc.status, body: tc.body})
			defer srv.Close()
			c := New(srv.URL, AWSSigningRegion, "AK", "SK", nil)
			_, err := c.GetUser(context.Background(), "x")
			if err == nil {
				t.Fatal("want an error, got none")
			}
			if got := CodeOf(err); got != tc.code {
				t.Errorf("want code %q, got %q (%v)", tc.code, got, err)
			}
			if !tc.is(err) {
				t.Errorf("want the predicate to hold for %v", err)
			}
		})
	}
}

func TestCreateUserForm(t *testing.T) {
	f := &fake{status: 200, body: `<CreateUserResponse xmlns="https://iam.amazonaws.com/doc/2010-05-08/"><CreateUserResult><User><Path>/buckety/</Path><UserName>u</UserName><UserId>AID1</UserId><Arn>arn:aws:iam::1:user/buckety/u</Arn><Tags><member><Key>k</Key><Value>v</Value></member></Tags></User></CreateUserResult></CreateUserResponse>`}
	srv := httptest.NewServer(f)
	defer srv.Close()
	c := New(srv.URL, AWSSigningRegion, "AK", "SK", nil)
	u, err := c.CreateUser(context.Background(), "u", "/buckety/", []Tag{{"k", "v"}, {"k2", "v2"}})
	if err != nil {
		t.Fatal(err)
	}
	want := url.Values{
		"Action": {"CreateUser"}, "Version": {APIVersion}, "UserName": {"u"}, "Path": {"/buckety/"},
		"Tags.member.1.Key": {"k"}, "Tags.member.1.Value": {"v"}, "Tags.member.2.Key": {"k2"}, "Tags.member.2.Value": {"v2"},
	}
	if f.form.Encode() != want.Encode() {
		t.Errorf("want form %s, got %s", want.Encode(), f.form.Encode())
	}
	if !strings.Contains(f.auth, "/us-east-1/iam/aws4_request") {
		t.Errorf("want a SigV4 signature for service iam, got %q", f.auth)
	}
	if u.Path != "/buckety/" || u.UserID != "AID1" || len(u.Tags) != 1 || u.Tags[0] != (Tag{"k", "v"}) {
		t.Errorf("want the user decoded, got %+v", u)
	}
}

func TestGetUserPolicyDecodes(t *testing.T) {
	doc := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::b/*"]}]}`
	for name, sent := range map[string]string{
		"aws url-encoded":  url.QueryEscape(doc),
		"seaweedfs plain":  doc,
		"xml-escaped only": strings.ReplaceAll(doc, `"`, "&quot;"),
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(&fake{status: 200, body: `<GetUserPolicyResponse><GetUserPolicyResult><UserName>u</UserName><PolicyName>p</PolicyName><PolicyDocument>` + sent + `</PolicyDocument></GetUserPolicyResult></GetUserPolicyResponse>`})
			defer srv.Close()
			got, err := New(srv.URL, AWSSigningRegion, "AK", "SK", nil).GetUserPolicy(context.Background(), "u", "p")
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != doc {
				t.Errorf("want %s, got %s", doc, got)
			}
		})
	}
}

func TestNoRedirect(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("the redirect was followed")
	}))
	defer target.Close()
	srv := httptest.NewServer(http.RedirectHandler(target.URL, http.StatusTemporaryRedirect))
	defer srv.Close()
	err := New(srv.URL, AWSSigningRegion, "AK", "SK", nil).DeleteUser(context.Background(), "u")
	if err == nil {
		t.Fatal("want an error for a redirect, got none")
	}
}

// TestListUsersPages: the markers are followed page by page; a server
// whose markers loop (A, B, A, ...) is an error, not an endless listing.
func TestListUsersPages(t *testing.T) {
	page := func(user, marker string, truncated bool) string {
		return `<ListUsersResponse><ListUsersResult><Users><member><UserName>` + user + `</UserName></member></Users><IsTruncated>` +
			map[bool]string{true: "true", false: "false"}[truncated] + `</IsTruncated><Marker>` + marker + `</Marker></ListUsersResult></ListUsersResponse>`
	}
	serve := func(next map[string]string) (*httptest.Server, *int) {
		calls := 0
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls++
			b, err := io.ReadAll(r.Body)
			if err != nil {
				t.Error(err)
			}
			form, err := url.ParseQuery(string(b))
			if err != nil {
				t.Error(err)
			}
			if got := form.Get("MaxItems"); got != "1000" {
				t.Errorf("ListUsers: want MaxItems 1000 (AWS lists 100 a page without it), got %q", got)
			}
			m := form.Get("Marker")
			n, more := next[m]
			if _, err := io.WriteString(w, page("user-at-"+m, n, more)); err != nil {
				t.Error(err)
			}
		})), &calls
	}

	srv, _ := serve(map[string]string{"": "A", "A": "B"})
	defer srv.Close()
	users, err := New(srv.URL, AWSSigningRegion, "AK", "SK", nil).ListUsers(context.Background(), "")
	if err != nil || len(users) != 3 || users[2].UserName != "user-at-B" {
		t.Errorf("three pages: want 3 users, the last from marker B, got %+v %v", users, err)
	}

	loop, calls := serve(map[string]string{"": "A", "A": "B", "B": "A"})
	defer loop.Close()
	_, err = New(loop.URL, AWSSigningRegion, "AK", "SK", nil).ListUsers(context.Background(), "")
	if err == nil || !strings.Contains(err.Error(), `marker "A" a second time`) {
		t.Errorf("pages that loop: want an error naming the repeated marker, got %v", err)
	}
	if *calls != 3 {
		t.Errorf("pages that loop: want the listing to stop at the repeat (3 requests), got %d", *calls)
	}
}
