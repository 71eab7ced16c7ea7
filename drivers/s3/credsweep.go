package s3

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/Yolean/buckety-controller/drivers"
)

var _ drivers.CredentialSweeper = (*Backend)(nil)

// policyChecksPerSweep bounds how many MinIO inline policies one sweep
// reads. MinIO lists a parent's service accounts in one request, with
// their status and whether they have an inline policy at all, but not the
// policy: that takes a request per account whose answer is encrypted with
// argon2id (64 MiB and tens of milliseconds per read). So each sweep reads
// this many, the ones read longest ago first: with a 30 s sweep, every one
// of 1000 accesses is read within 20 minutes.
const policyChecksPerSweep = 25

// policyCursor is where the next sweep's policy reads start.
type policyCursor struct {
	mu   sync.Mutex
	next int
}

// SweepCredentials implements drivers.CredentialSweeper.
//
//   - minio: one ListServiceAccounts of the parent user: a missing or
//     disabled account, or one without its inline policy, drifted; and
//     the inline policies of up to policyChecksPerSweep accounts, compared
//     with their role's.
//   - versitygw: one ListUsers, and one GetBucketPolicy per bucket: a
//     missing user, or a principal whose grant in buckety's statements is
//     not its role (or buckety's statements edited), drifted.
func (b *Backend) SweepCredentials(ctx context.Context, as []drivers.Access) ([]int, error) {
	if len(as) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, b.cfg.timeout())
	defer cancel()
	switch b.cfg.Implementation {
	case ImplMinIO:
		return b.sweepMinIO(ctx, as)
	case ImplVersityGW:
		return b.sweepVersity(ctx, as)
	}
	return nil, nil
}

func (b *Backend) sweepMinIO(ctx context.Context, as []drivers.Access) ([]int, error) {
	m := b.minioAdmin()
	accounts, err := m.list(ctx, b.cfg.parentUser())
	if err != nil {
		return nil, b.adminError("list the service accounts of "+b.cfg.parentUser(), err)
	}
	have := make(map[string]minioServiceAccount, len(accounts))
	for _, sa := range accounts {
		have[sa.AccessKey] = sa
	}
	drifted := map[int]bool{}
	for i, a := range as {
		sa, ok := have[a.Principal]
		if !ok || sa.Status != "on" || sa.ImpliedPolicy {
			drifted[i] = true
		}
	}
	b.policies.mu.Lock()
	start := b.policies.next
	b.policies.mu.Unlock()
	checked := 0
	for k := 0; k < len(as) && checked < policyChecksPerSweep; k++ {
		i := (start + k) % len(as)
		if drifted[i] {
			continue
		}
		checked++
		a := as[i]
		want, err := minioAccessPolicy(a.Resource, roleOf(a))
		if err != nil {
			return nil, err
		}
		sa, found, err := m.info(ctx, a.Principal)
		if err != nil {
			return nil, b.adminError("inspect service account "+a.Principal, err)
		}
		if !found || !samePolicy(sa.Policy, string(want)) {
			drifted[i] = true
		}
	}
	b.policies.mu.Lock()
	b.policies.next = (start + checked) % len(as)
	b.policies.mu.Unlock()
	return slices.Sorted(maps.Keys(drifted)), nil
}

func (b *Backend) sweepVersity(ctx context.Context, as []drivers.Access) ([]int, error) {
	users, err := b.versityAdmin().listUsers(ctx)
	if err != nil {
		return nil, b.adminError("list users", err)
	}
	cl, err := b.client(b.cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	byBucket := map[string][]int{}
	drifted := map[int]bool{}
	for i, a := range as {
		if _, ok := users[a.Principal]; !ok {
			drifted[i] = true
		}
		byBucket[a.Resource] = append(byBucket[a.Resource], i)
	}
	for bucket, idx := range byBucket {
		policy, err := b.bucketPolicy(ctx, cl, bucket)
		if err != nil {
			if isNoSuchBucket(err) {
				continue // the Buckety's own re-check sees to the bucket
			}
			return nil, err
		}
		grants, err := bucketyGrants(policy)
		for _, i := range idx {
			if err != nil || grants[as[i].Principal] != roleOf(as[i]) {
				drifted[i] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(drifted)), nil
}
