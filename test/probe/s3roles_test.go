package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/Yolean/buckety-controller/drivers"
	s3driver "github.com/Yolean/buckety-controller/drivers/s3"
	s3test "github.com/Yolean/buckety-controller/test/s3"
)

// TestS3ProbeRoles: the probe's S3 round trip per role, with keys of their
// own on real MinIO and VersityGW: each role passes on its bucket, and is
// refused on the neighbour's (what the e2e scenarios rely on).
func TestS3ProbeRoles(t *testing.T) {
	for _, impl := range s3test.Implementations {
		t.Run(impl, func(t *testing.T) {
			srv := s3test.Start(t, impl, s3test.Options{IAM: true})
			cfg := &s3driver.Config{Implementation: impl, Endpoint: srv.Endpoint, Region: srv.Region, ForcePathStyle: true,
				AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey, RequestTimeout: drivers.Duration{Duration: 10 * time.Second},
				Credentials: &s3driver.Credentials{AdminEndpoint: srv.AdminEndpoint}}
			be, err := s3driver.New().Open(context.Background(), "s3", cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := be.Close(); err != nil {
					t.Error(err)
				}
			})
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			sc := be.(drivers.CredentialIssuer)
			// Until the test's own backstop: scoping is seen once the
			// server's IAM answers, which a loaded machine delays.
			deadline, _ := ctx.Deadline()
			for ; ; time.Sleep(100 * time.Millisecond) {
				s, err := sc.Issuing(ctx)
				if err == nil && s.PerAccess {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("scoping: %+v %v", s, err)
				}
			}
			for _, b := range []string{"roles", "neighbour"} {
				if _, err := be.Ensure(ctx, drivers.Resource{Name: b}); err != nil {
					t.Fatal(err)
				}
			}
			grant := func(role string) map[string][]byte {
				a := drivers.Access{Resource: "roles", Namespace: "team", Name: strings.ToLower(role), UID: "uid-" + role, Role: drivers.Role(role), Assert: drivers.IssueNew}
				a.Principal = sc.Principal(a, 1)
				g, err := be.Grant(ctx, a)
				if err != nil {
					t.Fatal(err)
				}
				return g.Data
			}
			env := func(data map[string][]byte, extra map[string]string) func(string) string {
				return func(k string) string {
					if v, ok := extra[k]; ok {
						return v
					}
					return string(data[k])
				}
			}
			rw, ro, wo := grant("ReadWrite"), grant("ReadOnly"), grant("WriteOnly")
			for _, tc := range []struct {
				role string
				data map[string][]byte
			}{{"ReadWrite", rw}, {"WriteOnly", wo}, {"ReadOnly", ro}} {
				if err := bucketAs(ctx, env(tc.data, map[string]string{"PROBE_ROLE": tc.role})); err != nil {
					t.Errorf("%s: want the probe to pass, got %v", tc.role, err)
				}
				if err := bucketAs(ctx, env(tc.data, map[string]string{"PROBE_ROLE": tc.role, "PROBE_BUCKET": "neighbour", "PROBE_EXPECT_REFUSED": "true"})); err == nil || !strings.Contains(err.Error(), "AccessDenied") {
					t.Errorf("%s on the neighbour's bucket: want it refused with AccessDenied, got %v", tc.role, err)
				}
				if err := bucketAs(ctx, env(tc.data, map[string]string{"PROBE_ROLE": tc.role, "PROBE_EXPECT_REFUSED": "true"})); err != nil {
					t.Errorf("%s on its own bucket expecting a refusal: want the probe to pass (and say it was allowed), got %v", tc.role, err)
				}
			}
			// Data kept between probes: a writer's PROBE_VALUE is what a
			// later reader's PROBE_KEPT finds, with another key; a value
			// never written is not found.
			if err := bucketAs(ctx, env(wo, map[string]string{"PROBE_ROLE": "WriteOnly", "PROBE_VALUE": "kept-1"})); err != nil {
				t.Errorf("WriteOnly with PROBE_VALUE: want the probe to pass, got %v", err)
			}
			for role, data := range map[string]map[string][]byte{"ReadWrite": rw, "ReadOnly": ro} {
				if err := bucketAs(ctx, env(data, map[string]string{"PROBE_ROLE": role, "PROBE_KEPT": "kept-1"})); err != nil {
					t.Errorf("%s with PROBE_KEPT: want it to find the object kept, got %v", role, err)
				}
			}
			if err := bucketAs(ctx, env(rw, map[string]string{"PROBE_ROLE": "ReadWrite", "PROBE_KEPT": "never-written"})); err == nil || !strings.Contains(err.Error(), "the object kept from before: get roles/probe/never-written.txt") {
				t.Errorf("PROBE_KEPT of a value never written: want it not found, got %v", err)
			}
			if err := bucketAs(ctx, env(wo, map[string]string{"PROBE_ROLE": "WriteOnly", "PROBE_KEPT": "kept-1"})); err == nil || !strings.Contains(err.Error(), "a WriteOnly probe cannot read it back") {
				t.Errorf("WriteOnly with PROBE_KEPT: want it refused, got %v", err)
			}
			if err := bucketAs(ctx, env(ro, map[string]string{"PROBE_ROLE": "ReadWrite"})); err == nil || !strings.Contains(err.Error(), "AccessDenied") {
				t.Errorf("a ReadOnly key probed as ReadWrite: want the put refused, got %v", err)
			}
			if err := bucketAs(ctx, env(rw, map[string]string{"PROBE_ROLE": "ReadOnly"})); err == nil || !strings.Contains(err.Error(), "succeeded") {
				t.Errorf("a ReadWrite key probed as its own ReadOnly: want the probe to see it can put, got %v", err)
			}
		})
	}
}

// TestS3AdminOutOfBand: the probe's out-of-band commands on real MinIO and
// VersityGW, as the e2e scenarios use them: a foreign key is created and
// known to the server yet reaches no bucket; a bucket policy is written and
// read back; on MinIO the policy buckety keeps for a key (its user's own
// canned policy) is replaced and read back.
func TestS3AdminOutOfBand(t *testing.T) {
	for _, impl := range s3test.Implementations {
		t.Run(impl, func(t *testing.T) {
			srv := s3test.Start(t, impl, s3test.Options{IAM: true})
			for k, v := range map[string]string{s3driver.SecretEndpoint: srv.Endpoint, s3driver.SecretRegion: srv.Region,
				s3driver.SecretAccessKeyID: srv.AccessKey, s3driver.SecretSecretAccessKey: srv.SecretKey,
				"implementation": impl, "adminEndpoint": srv.AdminEndpoint, s3driver.SecretBucket: "ledger"} {
				t.Setenv(k, v)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			run := func(args ...string) (string, error) {
				t.Helper()
				return captureStdout(t, func() error { return s3Admin(ctx, args) })
			}
			must := func(args ...string) string {
				t.Helper()
				out, err := run(args...)
				if err != nil {
					t.Fatalf("s3-admin %v: %v", args, err)
				}
				return out
			}
			must("create", "ledger")
			if got := must("key-exists", "squatter0123456789"); got != "false\n" {
				t.Errorf("key-exists before key-add: want false, got %q", got)
			}
			must("key-add", "squatter0123456789", "SquatterSecret0123456789")
			if got := must("key-exists", "squatter0123456789"); got != "true\n" {
				t.Errorf("key-exists after key-add: want true, got %q", got)
			}
			foreign := map[string]string{s3driver.SecretEndpoint: srv.Endpoint, s3driver.SecretRegion: srv.Region, s3driver.SecretBucket: "ledger",
				s3driver.SecretAccessKeyID: "squatter0123456789", s3driver.SecretSecretAccessKey: "SquatterSecret0123456789", "PROBE_EXPECT_REFUSED": "true", "PROBE_ROLE": "WriteOnly"}
			if err := bucketAs(ctx, func(k string) string { return foreign[k] }); err == nil || !strings.Contains(err.Error(), "AccessDenied") {
				t.Errorf("the foreign key writing a bucket: want AccessDenied (known, not authorized), got %v", err)
			}

			if got := must("policy", "ledger"); got != "none\n" {
				t.Errorf("policy of a new bucket: want none, got %q", got)
			}
			pol := `{"Version":"2012-10-17","Statement":[{"Sid":"ops-audit","Effect":"Allow","Principal":{"AWS":["squatter0123456789"]},"Action":["s3:GetObject"],"Resource":["arn:aws:s3:::ledger/*"]}]}`
			must("set-policy", "ledger", pol)
			if got := must("policy", "ledger"); strings.Count(got, "\n") != 1 || !strings.Contains(got, "ops-audit") {
				t.Errorf("policy after set-policy: want the ops-audit statement, got %q", got)
			}

			_, err := run("key-policy", "squatter0123456789")
			if impl == s3driver.ImplVersityGW {
				if err == nil || !strings.Contains(err.Error(), "bucket-policy statements") {
					t.Errorf("key-policy on VersityGW: want an error saying its rights are bucket-policy statements, got %v", err)
				}
				return
			}
			if err == nil {
				t.Errorf("key-policy of a key buckety did not mint on MinIO: want an error (it has no policy of buckety's), got none")
			}
			narrowed := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::ledger/*"]}]}`
			must("set-key-policy", "squatter0123456789", narrowed)
			if got := must("key-policy", "squatter0123456789"); strings.Count(got, "\n") != 1 || !strings.Contains(got, "arn:aws:s3:::ledger/*") || strings.Contains(got, "ListAllMyBuckets") {
				t.Errorf("key-policy after set-key-policy: want the new policy, got %q", got)
			}
		})
	}
}
