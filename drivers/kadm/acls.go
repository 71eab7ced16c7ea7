package kadm

import (
	"context"
	"errors"
	"fmt"
	"strings"

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

// setACLs makes principal's ACLs exactly want: it reads them (one
// DescribeACLs), deletes those not wanted and creates those missing.
// Every ACL of a buckety principal is buckety's (the principal is).
func (b *Backend) setACLs(ctx context.Context, principal string, want []acl) error {
	have, err := b.describeACLs(ctx, principal)
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
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	req := kmsg.NewPtrCreateACLsRequest()
	for _, m := range missing {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = m.typ, m.name, m.pattern
		c.Principal, c.Host, c.Operation, c.PermissionType = "User:"+principal, "*", m.op, kmsg.ACLPermissionTypeAllow
		req.Creations = append(req.Creations, c)
	}
	resp, err := req.RequestWith(ctx, b.kgo)
	if err != nil {
		return b.classify(fmt.Errorf("create ACLs of %s: %w", principal, err))
	}
	for _, r := range resp.Results {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return b.classify(fmt.Errorf("create ACLs of %s: %w", principal, err))
		}
	}
	return nil
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

// listACLs reads the ACLs of buckety's principals (users named with
// principalPrefix), by user name: of principal only, or of all of them
// when principal is "" (one request either way).
func (b *Backend) listACLs(ctx context.Context, principal string) (map[string]map[acl]bool, error) {
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	var filter *string
	if principal != "" {
		filter = kmsg.StringPtr("User:" + principal)
	}
	resp, err := describeACLsRequest(filter).RequestWith(ctx, b.kgo)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		return nil, b.classify(fmt.Errorf("describe ACLs: %w", err))
	}
	out := map[string]map[acl]bool{}
	for _, r := range resp.Resources {
		for _, x := range r.ACLs {
			user, ok := strings.CutPrefix(x.Principal, "User:")
			if !ok || !strings.HasPrefix(user, principalPrefix) || (principal != "" && user != principal) {
				continue
			}
			if out[user] == nil {
				out[user] = map[acl]bool{}
			}
			out[user][acl{typ: r.ResourceType, name: r.ResourceName, pattern: r.ResourcePatternType, op: x.Operation,
				foreign: x.PermissionType != kmsg.ACLPermissionTypeAllow || x.Host != "*"}] = true
		}
	}
	return out, nil
}

// describeACLs reads every ACL of principal.
func (b *Backend) describeACLs(ctx context.Context, principal string) (map[acl]bool, error) {
	all, err := b.listACLs(ctx, principal)
	if err != nil {
		return nil, err
	}
	if all[principal] == nil {
		return map[acl]bool{}, nil
	}
	return all[principal], nil
}

// deleteACLs deletes principal's ACLs in list (any host and permission).
func (b *Backend) deleteACLs(ctx context.Context, principal string, list []acl) error {
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	req := kmsg.NewPtrDeleteACLsRequest()
	p := "User:" + principal
	for _, x := range list {
		f := kmsg.NewDeleteACLsRequestFilter()
		f.ResourceType, f.ResourceName, f.ResourcePatternType = x.typ, kmsg.StringPtr(x.name), x.pattern
		f.Principal, f.Operation, f.PermissionType = &p, x.op, kmsg.ACLPermissionTypeAny
		req.Filters = append(req.Filters, f)
	}
	return b.execDeleteACLs(ctx, principal, req)
}

func (b *Backend) execDeleteACLs(ctx context.Context, principal string, req *kmsg.DeleteACLsRequest) error {
	resp, err := req.RequestWith(ctx, b.kgo)
	if err != nil {
		return b.classify(fmt.Errorf("delete ACLs of %s: %w", principal, err))
	}
	for _, r := range resp.Results {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return b.classify(fmt.Errorf("delete ACLs of %s: %w", principal, err))
		}
	}
	return nil
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
	have, err := b.listACLs(ctx, "")
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
