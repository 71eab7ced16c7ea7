package kadm

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/Yolean/buckety-controller/drivers"
)

// ACLs of per-access users (scoped.go): the role's exact set, and the
// credential sweep that judges every user of a cluster in two requests.

// acl is one ACL of a principal, as buckety compares them.
type acl struct {
	typ     kmsg.ACLResourceType
	name    string
	pattern kmsg.ACLResourcePatternType
	op      kmsg.ACLOperation
	// foreign: a deny or host-restricted ACL, which buckety never makes:
	// it never matches a wanted one, so it is removed as an extra.
	foreign bool
}

// allowed is the kind of ACL buckety makes: allow, any host.
func allowed(typ kmsg.ACLResourceType, name string, pattern kmsg.ACLResourcePatternType, op kmsg.ACLOperation) acl {
	return acl{typ: typ, name: name, pattern: pattern, op: op}
}

// wantACLs is the exact ACL set of an access's role.
func wantACLs(a drivers.Access) []acl {
	lit, pre := kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed
	topic, group, txn := kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeGroup, kmsg.ACLResourceTypeTransactionalId
	read, write, describe := kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDescribe
	gp := groupPrefix(a)
	var out []acl
	switch a.Role {
	case "ReadOnly":
		out = append(out, allowed(topic, a.Resource, lit, read), allowed(topic, a.Resource, lit, describe),
			allowed(group, gp, pre, read), allowed(group, gp, pre, describe))
	case "WriteOnly":
		out = append(out, allowed(topic, a.Resource, lit, write), allowed(topic, a.Resource, lit, describe),
			allowed(txn, gp, pre, write), allowed(txn, gp, pre, describe))
	default:
		out = append(out, allowed(topic, a.Resource, lit, read), allowed(topic, a.Resource, lit, write), allowed(topic, a.Resource, lit, describe),
			allowed(group, gp, pre, read), allowed(group, gp, pre, describe),
			allowed(txn, gp, pre, write), allowed(txn, gp, pre, describe))
	}
	return out
}

// setACLs makes principal's ACLs exactly want: it reads them, deletes
// those not wanted and creates those missing (each a batched request).
// Every ACL of a buckety principal is buckety's (the principal is).
func (b *Backend) setACLs(ctx context.Context, principal string, want []acl) error {
	have, err := b.principalACLs(ctx, principal)
	if err != nil {
		return err
	}
	wantSet := map[acl]bool{}
	for _, w := range want {
		wantSet[w] = true
	}
	var extra []acl
	for h := range have {
		if !wantSet[h] {
			extra = append(extra, h)
		}
	}
	var missing []acl
	for _, w := range want {
		if !have[w] {
			missing = append(missing, w)
		}
	}
	if len(extra) > 0 {
		if err := b.deleteACLs(ctx, principal, extra); err != nil {
			return err
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return b.createACLs(ctx, principal, missing)
}

// describeACLsRequest asks for every ACL of principal (a Kafka principal,
// User:name), or of everyone when principal is nil.
func describeACLsRequest(principal *string) *kmsg.DescribeACLsRequest {
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType = kmsg.ACLResourceTypeAny
	req.ResourcePatternType = kmsg.ACLResourcePatternTypeAny
	req.Operation = kmsg.ACLOperationAny
	req.PermissionType = kmsg.ACLPermissionTypeAny
	req.Principal = principal
	return req
}

// listACLs reads the ACLs of every buckety principal (users named with
// principalPrefix), by user name, in one request.
func (b *Backend) listACLs(ctx context.Context) (map[string]map[acl]bool, error) {
	resp, err := describeACLsRequest(nil).RequestWith(ctx, b.kgo)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		return nil, b.classify(fmt.Errorf("describe ACLs: %w", err))
	}
	return parseACLs(resp), nil
}

var _ drivers.CredentialSweeper = (*Backend)(nil)

// SweepCredentials implements drivers.CredentialSweeper with two requests
// for the whole cluster: DescribeUserSCRAMs of every user, and
// DescribeACLs of every ACL. Only the principals in as are judged; every
// other user and ACL is someone else's and is not looked at further.
func (b *Backend) SweepCredentials(ctx context.Context, as []drivers.Access) ([]int, error) {
	if len(as) == 0 {
		return nil, nil
	}
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	users, err := b.adm.DescribeUserSCRAMs(ctx)
	if err != nil && !errors.Is(err, kerr.ResourceNotFound) {
		return nil, b.classify(fmt.Errorf("describe SCRAM users: %w", err))
	}
	have, err := b.listACLs(ctx)
	if err != nil {
		return nil, err
	}
	var drifted []int
	for i, a := range as {
		if d, ok := users[a.Principal]; !ok || d.Err != nil || len(d.CredInfos) == 0 || !sameACLs(have[a.Principal], wantACLs(a)) {
			drifted = append(drifted, i)
		}
	}
	return drifted, nil
}

func sameACLs(have map[acl]bool, want []acl) bool {
	if len(have) != len(want) {
		return false
	}
	for _, w := range want {
		if !have[w] {
			return false
		}
	}
	return true
}
