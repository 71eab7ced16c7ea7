package scale

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/Yolean/buckety-controller/drivers/s3/iam"
	"github.com/Yolean/buckety-controller/drivers/s3/policy"
)

// weedIAMFigures is the IAM row on SeaweedFS (scopedS3Figures), then what
// its IAM costs any client (bareIAMFigures), on the same server once
// buckety's users are gone.
func weedIAMFigures(t *testing.T, e *env, tbl *table, m int) {
	shared := scopedS3Figures(t, e, tbl, e.weedScoped(), m)
	bareIAMFigures(t, e, tbl, m, shared)
}

// bareIAMWorkers is how many clients the bare IAM figures send at once:
// the controller's reconciles per kind (--max-concurrent-reconciles).
const bareIAMWorkers = 16

// bareIAMFigures times, straight at SeaweedFS (no proxy, no controller),
// the IAM requests buckety sends for m accesses: per access GetUser (the
// check before the record), CreateUser, PutUserPolicy and CreateAccessKey,
// from bareIAMWorkers clients at once, then one credential sweep of them
// (ListUsers, then ListAccessKeys, ListUserPolicies and GetUserPolicy per
// user, in turn, as the driver sweeps). SeaweedFS answers each IAM
// request under one lock after loading every user it has, so this is the
// floor any client of its IAM API pays; shared is the time to all Ready
// with shared keys of the same run, for the ratio. The users are deleted
// after.
func bareIAMFigures(t *testing.T, e *env, tbl *table, m int, shared time.Duration) {
	ctx := context.Background()
	srv := e.weed
	c := iam.New(srv.Endpoint, srv.Region, srv.AccessKey, srv.SecretKey, &http.Client{Timeout: 5 * time.Minute})
	users := make([]string, m)
	for i := range users {
		users[i] = fmt.Sprintf("bkybare%05d", i)
	}
	doc := policy.ForBucket("bare", []string{"s3:ListBucket"}, []string{"s3:GetObject", "s3:PutObject"}).JSON()
	issue := func(u string) error {
		if _, err := c.GetUser(ctx, u); !iam.IsNoSuchEntity(err) {
			return fmt.Errorf("get user %s: want NoSuchEntity, got %v", u, err)
		}
		if _, err := c.CreateUser(ctx, u, "/buckety/", nil); err != nil {
			return err
		}
		if err := c.PutUserPolicy(ctx, u, "buckety", doc); err != nil {
			return err
		}
		_, err := c.CreateAccessKey(ctx, u)
		return err
	}
	start := time.Now()
	if err := parallel(m, bareIAMWorkers, func(i int) error { return issue(users[i]) }); err != nil {
		t.Fatalf("bare IAM issue: %v", err)
	}
	issued := time.Since(start)
	start = time.Now()
	if _, err := c.ListUsers(ctx, "/buckety/"); err != nil {
		t.Fatalf("bare IAM sweep: %v", err)
	}
	for _, u := range users {
		if _, err := c.ListAccessKeys(ctx, u); err != nil {
			t.Fatalf("bare IAM sweep: %v", err)
		}
		if _, err := c.ListUserPolicies(ctx, u); err != nil {
			t.Fatalf("bare IAM sweep: %v", err)
		}
		if _, err := c.GetUserPolicy(ctx, u, "buckety"); err != nil {
			t.Fatalf("bare IAM sweep: %v", err)
		}
	}
	swept := time.Since(start)
	if err := parallel(m, bareIAMWorkers, func(i int) error { return c.DeleteUserAndKeys(ctx, users[i]) }); err != nil {
		t.Fatalf("bare IAM clean-up: %v", err)
	}
	per := func(d time.Duration, reqs int) string { return ms(d / time.Duration(reqs)) }
	tbl.add(fmt.Sprintf("s3 (SeaweedFS) bare IAM client, %d at once: GetUser, CreateUser, PutUserPolicy, CreateAccessKey per user (total; per request)", bareIAMWorkers), m,
		secs(issued)+"; "+per(issued, 4*m), "", nil, fmt.Sprintf("%.2f× shared", issued.Seconds()/shared.Seconds()))
	tbl.add("s3 (SeaweedFS) bare IAM client: one credential sweep of those users (ListUsers, then 3 requests per user; per request)", m,
		secs(swept)+"; "+per(swept, 3*m+1), "", nil, "")
}
