package kadm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Batched requests of per-access credentials (credentials.go, acls.go). As for
// topics (coalesce.go), concurrent grants and revocations meet in one
// request per kind, keyed by principal: DescribeUserSCRAMs and
// AlterUserSCRAMs take many users, CreateACLs many creations, DeleteACLs
// many filters. DescribeACLs takes a single filter, so a batch of several
// principals reads every ACL of the cluster once and keeps those of the
// principals asked for; a lone call reads only its principal's. A
// thousand accesses granted at once cost a handful of requests, not four
// each.

// scramOp is one user's part of an AlterUserSCRAMs request: an upsert or a
// deletion (never both: Kafka refuses a user named twice in one request).
type scramOp struct {
	upsert *kadm.UpsertSCRAM
	del    *kadm.DeleteSCRAM
}

// wireCredentialBatchers adds the credential batchers to a backend.
func (b *Backend) wireCredentialBatchers(base context.Context, linger time.Duration, maxBatch int) {
	t := b.cfg.timeout()
	b.scramReads = newBatcher(base, true, linger, maxBatch, t, b.execDescribeSCRAMs)
	b.scramWrites = newBatcher(base, false, linger, maxBatch, t, b.execAlterSCRAMs)
	b.aclReads = newBatcher(base, true, linger, maxBatch, t, b.execDescribeACLs)
	b.aclCreates = newBatcher(base, false, linger, maxBatch, t, b.execCreateACLs)
	b.aclDeletes = newBatcher(base, false, linger, maxBatch, t, b.execDeleteACLs)
	b.quotaReads = newBatcher(base, true, linger, maxBatch, t, b.execDescribeQuotas)
	b.quotaWrites = newBatcher(base, false, linger, maxBatch, t, b.execAlterQuotas)
}

// describeUser reads one user's SCRAM credentials; a missing user has none.
func (b *Backend) describeUser(ctx context.Context, principal string) (kadm.DescribedUserSCRAM, error) {
	d, err := b.scramReads.do(ctx, principal, struct{}{})
	if err != nil {
		return kadm.DescribedUserSCRAM{}, b.ctxErr(err)
	}
	if errors.Is(d.Err, kerr.ResourceNotFound) {
		return kadm.DescribedUserSCRAM{User: principal}, nil
	}
	if d.Err != nil {
		return d, b.classify(fmt.Errorf("describe SCRAM user %s: %w", principal, d.Err))
	}
	return d, nil
}

func (b *Backend) execDescribeSCRAMs(ctx context.Context, calls []*call[struct{}, kadm.DescribedUserSCRAM]) {
	users := make([]string, len(calls))
	for i, c := range calls {
		users[i] = c.topic
	}
	got, err := b.adm.DescribeUserSCRAMs(ctx, users...)
	if errors.Is(err, kerr.ResourceNotFound) && len(calls) > 1 {
		// An error for the whole request, which Kafka gives per user: a
		// broker that answers so when one user of several is missing
		// says nothing of the others, and reading every one as absent
		// would take an existing user for a free name (record) or leave
		// it in place (revoke). Each is asked alone.
		for _, c := range calls {
			b.execDescribeSCRAMs(ctx, []*call[struct{}, kadm.DescribedUserSCRAM]{c})
		}
		return
	}
	if err != nil && !errors.Is(err, kerr.ResourceNotFound) {
		failRequest(b, calls, fmt.Errorf("describe SCRAM users: %w", err))
		return
	}
	for _, c := range calls {
		c.out = got[c.topic] // absent: no credentials
	}
}

// alterUser sends one user's upsert or deletion; a deletion of a user or
// mechanism that is not there is success.
func (b *Backend) alterUser(ctx context.Context, principal string, op scramOp) error {
	_, err := b.scramWrites.do(ctx, principal, op)
	if err != nil && op.del != nil && errors.Is(err, kerr.ResourceNotFound) {
		return nil
	}
	if err != nil {
		verb := "set the SCRAM password of"
		if op.del != nil {
			verb = "delete SCRAM user"
		}
		return b.classify(fmt.Errorf("%s %s: %w", verb, principal, b.ctxErr(err)))
	}
	return nil
}

func (b *Backend) execAlterSCRAMs(ctx context.Context, calls []*call[scramOp, struct{}]) {
	var dels []kadm.DeleteSCRAM
	var ups []kadm.UpsertSCRAM
	for _, c := range calls {
		if c.in.del != nil {
			dels = append(dels, *c.in.del)
		} else {
			ups = append(ups, *c.in.upsert)
		}
	}
	res, err := b.adm.AlterUserSCRAMs(ctx, dels, ups)
	if err != nil {
		failRequest(b, calls, err)
		return
	}
	for _, c := range calls {
		r, ok := res[c.topic]
		c.err = userResult(ok, r.Err, r.ErrMessage)
	}
}

// principalACLs reads every ALLOW ACL of a buckety principal.
func (b *Backend) principalACLs(ctx context.Context, principal string) (map[acl]bool, error) {
	got, err := b.aclReads.do(ctx, principal, struct{}{})
	if err != nil {
		return nil, b.classify(fmt.Errorf("describe ACLs of %s: %w", principal, b.ctxErr(err)))
	}
	if got == nil {
		got = map[acl]bool{}
	}
	return got, nil
}

func (b *Backend) execDescribeACLs(ctx context.Context, calls []*call[struct{}, map[acl]bool]) {
	var filter *string
	if len(calls) == 1 {
		filter = kmsg.StringPtr("User:" + calls[0].topic)
	}
	resp, err := describeACLsRequest(filter).RequestWith(ctx, b.kgo)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		failRequest(b, calls, err)
		return
	}
	all := parseACLs(resp)
	for _, c := range calls {
		c.out = all[c.topic]
	}
}

// parseACLs sorts the ALLOW ACLs of a DescribeACLs answer by buckety
// principal (users named as isBucketyUser says). Every other principal's
// ACLs, and every DENY ACL (an operator's, acls.go), are left out.
func parseACLs(resp *kmsg.DescribeACLsResponse) map[string]map[acl]bool {
	out := map[string]map[acl]bool{}
	for _, r := range resp.Resources {
		for _, x := range r.ACLs {
			user, ok := strings.CutPrefix(x.Principal, "User:")
			if !ok || !isBucketyUser(user) || x.PermissionType != kmsg.ACLPermissionTypeAllow {
				continue
			}
			if out[user] == nil {
				out[user] = map[acl]bool{}
			}
			out[user][acl{typ: r.ResourceType, name: r.ResourceName, pattern: r.ResourcePatternType, op: x.Operation, host: x.Host}] = true
		}
	}
	return out
}

// createACLs creates principal's ACLs in list (allow, any host).
func (b *Backend) createACLs(ctx context.Context, principal string, list []acl) error {
	if _, err := b.aclCreates.do(ctx, principal, list); err != nil {
		return b.classify(fmt.Errorf("create ACLs of %s: %w", principal, b.ctxErr(err)))
	}
	return nil
}

func (b *Backend) execCreateACLs(ctx context.Context, calls []*call[[]acl, struct{}]) {
	req := kmsg.NewPtrCreateACLsRequest()
	for _, c := range calls {
		for _, m := range c.in {
			x := kmsg.NewCreateACLsRequestCreation()
			x.ResourceType, x.ResourceName, x.ResourcePatternType = m.typ, m.name, m.pattern
			x.Principal, x.Host, x.Operation, x.PermissionType = "User:"+c.topic, "*", m.op, kmsg.ACLPermissionTypeAllow
			req.Creations = append(req.Creations, x)
		}
	}
	resp, err := req.RequestWith(ctx, b.kgo)
	if err != nil {
		failRequest(b, calls, err)
		return
	}
	counts := make([]int, len(calls))
	for i, c := range calls {
		counts[i] = len(c.in)
	}
	answerByCount(calls, counts, len(resp.Results), func(i int) error {
		r := resp.Results[i]
		return withMessage(kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	})
}

// deleteACLs deletes principal's ALLOW ACLs in list, each exactly (its
// resource, pattern, operation and host); a nil list deletes every ALLOW
// ACL of the principal. DENY ACLs are never deleted (acls.go).
func (b *Backend) deleteACLs(ctx context.Context, principal string, list []acl) error {
	if _, err := b.aclDeletes.do(ctx, principal, list); err != nil {
		return b.classify(fmt.Errorf("delete ACLs of %s: %w", principal, b.ctxErr(err)))
	}
	return nil
}

func (b *Backend) execDeleteACLs(ctx context.Context, calls []*call[[]acl, struct{}]) {
	req := kmsg.NewPtrDeleteACLsRequest()
	counts := make([]int, len(calls))
	for i, c := range calls {
		p := "User:" + c.topic
		if c.in == nil {
			f := kmsg.NewDeleteACLsRequestFilter()
			f.ResourceType, f.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
			f.Principal, f.Operation, f.PermissionType = &p, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAllow
			req.Filters = append(req.Filters, f)
			counts[i] = 1
			continue
		}
		for _, x := range c.in {
			f := kmsg.NewDeleteACLsRequestFilter()
			f.ResourceType, f.ResourceName, f.ResourcePatternType = x.typ, kmsg.StringPtr(x.name), x.pattern
			f.Principal, f.Host, f.Operation, f.PermissionType = &p, kmsg.StringPtr(x.host), x.op, kmsg.ACLPermissionTypeAllow
			req.Filters = append(req.Filters, f)
		}
		counts[i] = len(c.in)
	}
	resp, err := req.RequestWith(ctx, b.kgo)
	if err != nil {
		failRequest(b, calls, err)
		return
	}
	answerByCount(calls, counts, len(resp.Results), func(i int) error {
		r := resp.Results[i]
		if err := withMessage(kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage); err != nil {
			return err
		}
		// A filter answered as a success can still name ACLs it failed
		// to delete (a ZooKeeper-mode broker answers a failed deletion
		// per ACL): taking the filter's code alone would report a
		// narrowing, a Drop or a revoke done with an ALLOW ACL left.
		var errs []error
		for _, m := range r.MatchingACLs {
			if err := withMessage(kerr.ErrorForCode(m.ErrorCode), m.ErrorMessage); err != nil {
				errs = append(errs, fmt.Errorf("ACL %s: %w", matchingACLString(m), err))
			}
		}
		return errors.Join(errs...)
	})
}

// matchingACLString names one ACL of a DeleteACLs answer by permission,
// operation, resource and host (its principal is the call's).
func matchingACLString(m kmsg.DeleteACLsResponseResultMatchingACL) string {
	return fmt.Sprintf("%s %s on %s %s %q from host %s", m.PermissionType, m.Operation, m.ResourcePatternType, m.ResourceType, m.ResourceName, m.Host)
}

// answerByCount gives call i the first error among its counts[i] results,
// which follow those of the calls before it.
func answerByCount(calls []*call[[]acl, struct{}], counts []int, results int, errAt func(int) error) {
	at := 0
	for i, c := range calls {
		for j := 0; j < counts[i]; j++ {
			if at >= results {
				c.err = errors.New("the broker's answer has fewer results than the request asked for")
				break
			}
			if err := errAt(at); err != nil && c.err == nil {
				c.err = err
			}
			at++
		}
	}
}

func withMessage(err error, msg *string) error {
	if err != nil && msg != nil && *msg != "" {
		return fmt.Errorf("%w: %s", err, *msg)
	}
	return err
}

// userResult is the error a per-user batch answer gives one user: none
// when the broker did not mention it, the error with the broker's message
// when it has one.
func userResult(mentioned bool, err error, msg string) error {
	switch {
	case !mentioned:
		return errors.New("the broker's answer does not mention the user")
	case err != nil && msg != "":
		return fmt.Errorf("%w: %s", err, msg)
	}
	return err
}
