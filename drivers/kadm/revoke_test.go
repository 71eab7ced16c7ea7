package kadm

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/Yolean/buckety-controller/drivers"
)

// TestRevokeDeletesAUserAReadMisses: a DescribeUserSCRAMCredentials
// answered by a broker whose metadata lags (just after the upsert) lists
// none of the user's mechanisms. A revoke that deleted only what it read
// would delete nothing and succeed, the controller would drop the record,
// and a user that still authenticates would be left with nothing naming
// it. Revoke deletes both mechanisms whatever a read says.
//
// The broker is franz-go's kfake cluster in this process: only there can
// a request be answered as a lagging broker would (Cluster.ControlKey).
func TestRevokeDeletesAUserAReadMisses(t *testing.T) {
	c, b := inProcessBackend(t, &Driver{}, kfake.NumBrokers(1))
	ctx := context.Background()
	const user = "bky.t.lagging.1"
	for _, mech := range []kadm.ScramMechanism{kadm.ScramSha256, kadm.ScramSha512} {
		if err := b.alterUser(ctx, user, scramOp{upsert: &kadm.UpsertSCRAM{User: user, Mechanism: mech, Iterations: scramIterations, Password: "pw"}}); err != nil {
			t.Fatal(err)
		}
	}

	// Until the revoke has returned, every read of a user answers it
	// unknown, as Kafka answers a user it has not seen.
	var lagging atomic.Bool
	lagging.Store(true)
	c.ControlKey(kmsg.DescribeUserSCRAMCredentials.Int16(), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if !lagging.Load() {
			return nil, nil, false
		}
		req := kreq.(*kmsg.DescribeUserSCRAMCredentialsRequest)
		resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
		resp.Version = req.Version
		for _, u := range req.Users {
			r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
			r.User, r.ErrorCode = u.Name, kerr.ResourceNotFound.Code
			r.ErrorMessage = kmsg.StringPtr("Attempt to describe a user credential that does not exist")
			resp.Results = append(resp.Results, r)
		}
		return resp, nil, true
	})
	if ok, err := b.InspectPrincipal(ctx, user); err != nil || ok {
		t.Fatalf("want the lagging broker's read to find no user (the case under test), got %v, %v", ok, err)
	}

	if err := b.Revoke(ctx, drivers.Access{Principal: user}); err != nil {
		t.Fatal(err)
	}
	lagging.Store(false)
	got, err := b.adm.DescribeUserSCRAMs(ctx, user)
	if err != nil && !errors.Is(err, kerr.ResourceNotFound) {
		t.Fatal(err)
	}
	if d, ok := got[user]; ok && len(d.CredInfos) > 0 {
		t.Errorf("after Revoke: want user %s gone, the broker still has %+v", user, d.CredInfos)
	}
}

// TestACLDeletionFailedPerACLIsAnError: a broker (ZooKeeper mode's
// AclAuthorizer) can answer a DeleteACLs filter as a success and report
// the deletion of one ACL it matched as failed. A narrowing (setACLs) or
// a revoke that read only the filter's code would report itself done with
// that ALLOW ACL left; each fails instead, naming the ACL, and a revoke
// keeps the user (the controller keeps its record and tries again).
//
// The broker is franz-go's kfake cluster in this process, answering every
// DeleteACLs as such a broker whose deletion of one ACL failed: nothing
// is deleted.
func TestACLDeletionFailedPerACLIsAnError(t *testing.T) {
	a := drivers.Access{Resource: "t", Namespace: "team", Name: "app", UID: "uid-acl-failed", Role: drivers.RoleReadWrite}
	all := wantACLs(a)
	stuck := all[0] // READ on topic t
	for _, tc := range []struct {
		name string
		// op takes stuck away from principal.
		op func(b *Backend, principal string) error
	}{
		{"narrowing", func(b *Backend, principal string) error { return b.setACLs(context.Background(), principal, all[1:]) }},
		{"revoke", func(b *Backend, principal string) error {
			return b.Revoke(context.Background(), drivers.Access{Principal: principal})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, b := inProcessBackend(t, &Driver{}, kfake.NumBrokers(1))
			ctx := context.Background()
			principal := b.Principal(a, 1)
			if err := b.alterUser(ctx, principal, scramOp{upsert: &kadm.UpsertSCRAM{User: principal, Mechanism: kadm.ScramSha512, Iterations: scramIterations, Password: "pw"}}); err != nil {
				t.Fatal(err)
			}
			if err := b.createACLs(ctx, principal, all); err != nil {
				t.Fatal(err)
			}

			var answered atomic.Int32
			c.ControlKey(kmsg.DeleteACLs.Int16(), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
				c.KeepControl()
				answered.Add(1)
				req := kreq.(*kmsg.DeleteACLsRequest)
				resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
				resp.Version = req.Version
				for range req.Filters {
					m := kmsg.NewDeleteACLsResponseResultMatchingACL()
					m.ErrorCode, m.ErrorMessage = kerr.UnknownServerError.Code, kmsg.StringPtr("failed to delete the ACL")
					m.ResourceType, m.ResourceName, m.ResourcePatternType = stuck.typ, stuck.name, stuck.pattern
					m.Principal, m.Host, m.Operation, m.PermissionType = "User:"+principal, stuck.host, stuck.op, kmsg.ACLPermissionTypeAllow
					r := kmsg.NewDeleteACLsResponseResult() // the filter: success
					r.MatchingACLs = append(r.MatchingACLs, m)
					resp.Results = append(resp.Results, r)
				}
				return resp, nil, true
			})

			err := tc.op(b, principal)
			if answered.Load() == 0 {
				t.Fatal("want a DeleteACLs request (the case under test), got none")
			}
			if !errors.Is(err, kerr.UnknownServerError) || !strings.Contains(err.Error(), `ALLOW READ on LITERAL TOPIC "t"`) {
				t.Errorf("want UNKNOWN_SERVER_ERROR naming ALLOW READ on topic t, got %v", err)
			}
			if tc.name != "revoke" {
				return
			}
			if ok, err := b.InspectPrincipal(ctx, principal); err != nil || !ok {
				t.Errorf("a revoke whose ACLs are not all deleted: want the user kept, got exists=%v, %v", ok, err)
			}
		})
	}
}
