package kadm

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/Yolean/buckety-controller/drivers"
)

// ACLs of per-access users (credentials.go): the role's exact set, and the
// credential sweep that judges every user of a cluster in two requests.
//
// Buckety owns the ALLOW ACLs of its principals and none of their DENY
// ACLs. An ALLOW beyond the role's widens what the credential may do, so
// it is drift and removed. A DENY only narrows it, and buckety never makes
// one, so a DENY on a buckety principal is an operator's decision (cut a
// tenant off a topic during an incident, say): it is never drift and never
// deleted, not even at revocation, and the operator removes it. DENY wins
// over ALLOW in Kafka, so keeping it keeps the operator's intent whatever
// buckety restores.
//
// Deletion is exact for the same reason: a DeleteACLs filter matches every
// ACL its fields allow, so a filter with permission ANY, or any host, would
// delete an operator's DENY, or the role's any-host ALLOW behind a
// host-restricted one, along with the ACL it was meant for. Every filter
// buckety sends names permission ALLOW, and every filter but revocation's
// (which removes all of them) the exact resource, pattern, operation and
// host of one ACL it read.

// acl is one ALLOW ACL of a principal, as buckety compares them.
type acl struct {
	typ     kmsg.ACLResourceType
	name    string
	pattern kmsg.ACLResourcePatternType
	op      kmsg.ACLOperation
	// host is "*" (any host) in the ACLs buckety makes; a host-restricted
	// ALLOW is never wanted, so it is removed as an extra.
	host string
}

// allowed is the kind of ACL buckety makes: allow, any host.
func allowed(typ kmsg.ACLResourceType, name string, pattern kmsg.ACLResourcePatternType, op kmsg.ACLOperation) acl {
	return acl{typ: typ, name: name, pattern: pattern, op: op, host: "*"}
}

// wantACLs is the exact ACL set of an access's role: the role's topic
// ACLs on each of its topics (Access.Resources: every topic of an access
// naming several Bucketies), and its group and transactional-id ACLs on
// its one prefix. A topic of Access.Drop is not among them, so setACLs
// removes its ACLs.
func wantACLs(a drivers.Access) []acl {
	lit, pre := kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed
	topic, group, txn := kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeGroup, kmsg.ACLResourceTypeTransactionalId
	read, write, describe := kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDescribe
	gp := groupPrefix(a)
	var topicOps []kmsg.ACLOperation
	var out []acl
	switch a.Role {
	case drivers.RoleReadOnly:
		topicOps = []kmsg.ACLOperation{read, describe}
		out = []acl{allowed(group, gp, pre, read), allowed(group, gp, pre, describe)}
	case drivers.RoleWriteOnly:
		topicOps = []kmsg.ACLOperation{write, describe}
		out = []acl{allowed(txn, gp, pre, write), allowed(txn, gp, pre, describe)}
	default:
		topicOps = []kmsg.ACLOperation{read, write, describe}
		out = []acl{allowed(group, gp, pre, read), allowed(group, gp, pre, describe),
			allowed(txn, gp, pre, write), allowed(txn, gp, pre, describe)}
	}
	var topics []acl
	for _, name := range a.Resources() {
		for _, op := range topicOps {
			topics = append(topics, allowed(topic, name, lit, op))
		}
	}
	return append(topics, out...)
}

// setACLs makes principal's ALLOW ACLs exactly want: it reads them,
// deletes those not wanted and creates those missing (each a batched
// request). Every ALLOW ACL of a buckety principal is buckety's (the
// principal is); its DENY ACLs are not read, deleted or counted.
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

// listACLs reads the ALLOW ACLs of every buckety principal (users named
// as isBucketyUser says), by user name, in one request.
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

// SweepCredentials implements drivers.CredentialSweeper with three
// requests for the whole cluster: DescribeUserSCRAMs of every user,
// DescribeACLs of every ACL and DescribeClientQuotas of every user entity.
// Only the principals in as are judged: on their SCRAM credentials (the
// configured credentials.mechanism's and not the other SCRAM mechanism's,
// as upsertUser leaves them: a user left with only the mechanism it was
// issued before a change of credentials.mechanism cannot log in with the
// Secret, which names the new one), their ALLOW ACLs (an operator's DENY
// is not drift) and their client quotas (quotas.go); every other user,
// ACL and quota is someone else's and is not looked at further.
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
	quotas, err := b.listQuotas(ctx)
	if err != nil {
		return nil, err
	}
	mech, _ := b.cfg.mechanism()
	var drifted []int
	var errs []error
	for i, a := range as {
		want, err := b.cfg.wantQuotas(a.Parameters)
		if err != nil {
			// Its re-assert reports the parameter.
			errs = append(errs, fmt.Errorf("access %s/%s: %w", a.Namespace, a.Name, err))
		}
		if d, ok := users[a.Principal]; err != nil || !ok || d.Err != nil || !hasOnlyMechanism(d.CredInfos, mech) ||
			!sameACLs(have[a.Principal], wantACLs(a)) || !sameQuotas(quotas[a.Principal], want) {
			drifted = append(drifted, i)
		}
	}
	return drifted, errors.Join(errs...)
}

// sameACLs reports whether have is exactly want.
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
