package s3

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/Yolean/buckety-controller/drivers"
)

var _ drivers.CredentialSweeper = (*Backend)(nil)

// SweepCredentials implements drivers.CredentialSweeper.
//
//   - minio: one list-users and one list-canned-policies for the whole
//     backend: a missing or disabled user, one holding any policy but its
//     own, or its own policy edited or missing, drifted (a legacy service
//     account is not a user: it drifts, and its re-assert replaces it).
//   - versitygw: one ListUsers, and one GetBucketPolicy per bucket: a
//     missing user, or a principal whose grant in buckety's statements is
//     not its role (or buckety's statements edited), drifted.
//
// One access or bucket that cannot be judged (a policy the gateway will
// not return) does not keep the others from being judged: the drifted
// accesses found are returned with an error naming what was skipped.
func (b *Backend) SweepCredentials(ctx context.Context, as []drivers.Access) ([]int, error) {
	if len(as) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, b.cfg.timeout())
	defer cancel()
	if b.cfg.Credentials == nil {
		return nil, nil // keys kept after credentials was unset are not repaired
	}
	switch b.cfg.Implementation {
	case ImplMinIO:
		return b.sweepMinIO(ctx, as)
	case ImplVersityGW:
		return b.sweepVersity(ctx, as)
	case ImplAWS, ImplSeaweedFS:
		if b.scoped.iam == nil {
			return nil, b.noAdmin()
		}
		return b.sweepIAM(ctx, as)
	}
	return nil, nil
}

func (b *Backend) sweepMinIO(ctx context.Context, as []drivers.Access) ([]int, error) {
	m := b.minioAdmin()
	if m == nil {
		return nil, b.noAdmin()
	}
	users, err := m.listUsers(ctx)
	if err != nil {
		return nil, b.adminError("list users", err)
	}
	policies, err := m.listCannedPolicies(ctx)
	if err != nil {
		return nil, b.adminError("list policies", err)
	}
	var drifted []int
	var skipped []error
	for i, a := range as {
		want, err := minioAccessPolicy(a.Resource, roleOf(a))
		if err != nil {
			skipped = append(skipped, fmt.Errorf("%s: %w", a.Principal, err))
			continue
		}
		name := minioPolicyName(a.Principal)
		u, ok := users[a.Principal]
		got, hasPolicy := policies[name]
		if !ok || u.Status != "enabled" || !slices.Equal(u.policies(), []string{name}) || !hasPolicy || !samePolicy(got, string(want)) {
			drifted = append(drifted, i)
		}
	}
	return drifted, errors.Join(skipped...)
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
	var skipped []error
	for bucket, idx := range byBucket {
		policy, err := b.bucketPolicy(ctx, cl, bucket)
		if err != nil {
			if !isNoSuchBucket(err) { // the Buckety's own re-check sees to a missing bucket
				skipped = append(skipped, fmt.Errorf("bucket %s: %w", bucket, err))
			}
			continue
		}
		grants, err := bucketyGrants(policy)
		for _, i := range idx {
			if err != nil || grants[as[i].Principal] != string(roleOf(as[i])) {
				drifted[i] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(drifted)), errors.Join(skipped...)
}
