package kadm

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Client quotas of per-access users on the cluster (quotas.go says which).
// Reads and writes are batched as the users' and ACLs' are (credbatch.go):
// DescribeClientQuotas takes one filter per entity type, so a batch of
// several users reads the quotas of every user entity once and keeps those
// asked for, and a lone call reads only its user's; AlterClientQuotas takes
// many entities.

// errNoQuotaAPI marks a cluster without the client quota API (KIP-546,
// Kafka 2.6).
var errNoQuotaAPI = errors.New("the cluster has no client quota API (DescribeClientQuotas and AlterClientQuotas, KIP-546, Kafka 2.6)")

// noQuotaAPI reports a refusal that means the cluster has no quota API.
func noQuotaAPI(err error) bool {
	return errors.Is(err, errNoQuotaAPI) || errors.Is(err, kerr.UnsupportedVersion) || isUnknownKey(err)
}

// userEntity is the quota entity of a user alone.
func userEntity(principal string) kadm.ClientQuotaEntity {
	return kadm.ClientQuotaEntity{{Type: "user", Name: &principal}}
}

// userQuotas reads principal's quotas, by Kafka key; a user without any
// has none. A cluster without the quota API answers errNoQuotaAPI.
func (b *Backend) userQuotas(ctx context.Context, principal string) (map[string]float64, error) {
	got, err := b.quotaReads.do(ctx, principal, struct{}{})
	if err != nil {
		if noQuotaAPI(err) {
			return nil, fmt.Errorf("describe client quotas of %s: %w", principal, errNoQuotaAPI)
		}
		return nil, b.classify(fmt.Errorf("describe client quotas of %s: %w", principal, b.ctxErr(err)))
	}
	if got == nil {
		got = map[string]float64{}
	}
	return got, nil
}

// setQuotas makes principal's quotas exactly want. A user just issued
// (fresh) has none but what an interrupted attempt of the same grant set,
// so its quotas are set without reading them first.
func (b *Backend) setQuotas(ctx context.Context, principal string, want map[string]float64, fresh bool) error {
	have := map[string]float64{}
	if !fresh {
		var err error
		have, err = b.userQuotas(ctx, principal)
		if errors.Is(err, errNoQuotaAPI) && len(want) == 0 {
			return nil // no quotas on a cluster that has none
		}
		if err != nil {
			return err
		}
	}
	return b.alterQuotas(ctx, principal, quotaDiff(have, want))
}

// clearQuotas removes every quota of principal; a user without any, or a
// cluster without the quota API, is success.
func (b *Backend) clearQuotas(ctx context.Context, principal string) error {
	return b.setQuotas(ctx, principal, nil, false)
}

// alterQuotas sends one user's quota changes; none sends nothing.
func (b *Backend) alterQuotas(ctx context.Context, principal string, ops []quotaOp) error {
	if len(ops) == 0 {
		return nil
	}
	_, err := b.quotaWrites.do(ctx, principal, ops)
	if err != nil && noQuotaAPI(err) {
		err = errNoQuotaAPI
	}
	if err != nil {
		return b.classify(fmt.Errorf("alter client quotas of %s: %w", principal, b.ctxErr(err)))
	}
	return nil
}

// listQuotas reads the quotas of every user entity of the cluster (users
// alone, not combined with a client id) in one request, by user name. A
// cluster without the quota API has none.
func (b *Backend) listQuotas(ctx context.Context) (map[string]map[string]float64, error) {
	got, err := b.adm.DescribeClientQuotas(ctx, true, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchType: kmsg.QuotasMatchTypeAny}})
	if err != nil && noQuotaAPI(err) {
		return map[string]map[string]float64{}, nil
	}
	if err != nil {
		return nil, b.classify(fmt.Errorf("describe client quotas: %w", err))
	}
	return byUser(got), nil
}

// byUser sorts described quotas by user name, keeping only entities of a
// named user alone.
func byUser(got kadm.DescribedClientQuotas) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	for _, q := range got {
		if len(q.Entity) != 1 || q.Entity[0].Type != "user" || q.Entity[0].Name == nil {
			continue
		}
		vals := map[string]float64{}
		for _, v := range q.Values {
			vals[v.Key] = v.Value
		}
		out[*q.Entity[0].Name] = vals
	}
	return out
}

func (b *Backend) execDescribeQuotas(ctx context.Context, calls []*call[struct{}, map[string]float64]) {
	filter := kadm.DescribeClientQuotaComponent{Type: "user", MatchType: kmsg.QuotasMatchTypeAny}
	if len(calls) == 1 {
		filter = kadm.DescribeClientQuotaComponent{Type: "user", MatchName: &calls[0].topic, MatchType: kmsg.QuotasMatchTypeExact}
	}
	got, err := b.adm.DescribeClientQuotas(ctx, true, []kadm.DescribeClientQuotaComponent{filter})
	if err != nil {
		failQuotaRequest(b, calls, err)
		return
	}
	all := byUser(got)
	for _, c := range calls {
		c.out = all[c.topic]
	}
}

func (b *Backend) execAlterQuotas(ctx context.Context, calls []*call[[]quotaOp, struct{}]) {
	entries := make([]kadm.AlterClientQuotaEntry, len(calls))
	for i, c := range calls {
		entries[i].Entity = userEntity(c.topic)
		for _, op := range c.in {
			entries[i].Ops = append(entries[i].Ops, kadm.AlterClientQuotaOp{Key: op.key, Value: op.value, Remove: op.remove})
		}
	}
	res, err := b.adm.AlterClientQuotas(ctx, entries)
	if err != nil {
		failQuotaRequest(b, calls, err)
		return
	}
	answers := map[string]kadm.AlteredClientQuota{}
	for _, r := range res {
		if len(r.Entity) == 1 && r.Entity[0].Name != nil {
			answers[*r.Entity[0].Name] = r
		}
	}
	for _, c := range calls {
		r, ok := answers[c.topic]
		c.err = userResult(ok, r.Err, r.ErrMessage)
	}
}

// failQuotaRequest fails a batch of quota calls: as the cluster's answer
// when it has no quota API (no retry helps), as a failed request
// otherwise.
func failQuotaRequest[In, Out any](b *Backend, calls []*call[In, Out], err error) {
	if noQuotaAPI(err) {
		fail(calls, err)
		return
	}
	failRequest(b, calls, err)
}
