package s3

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/Yolean/buckety-controller/drivers"
)

// Ensure: create a bucket, or bring an existing one to its parameters. Each
// parameter that can drift is compared and written by a function of its own
// (versioning here, lifecycle in lifecycle.go, the hard quota in quota.go,
// anonymous read in anonread.go, the public ACL block of seaweedfs in
// publicacls.go); a dry run reads the same and writes nothing.

// Ensure implements drivers.Backend.
func (b *Backend) Ensure(ctx context.Context, r drivers.Resource) (drivers.EnsureResult, error) {
	p := parseParams(r.Parameters)
	cl, err := b.clientFor(p)
	if err != nil {
		return drivers.EnsureResult{}, err
	}
	var res drivers.EnsureResult
	var drift error
	ok, err := b.exists(ctx, cl, r.Name)
	if err != nil {
		return res, err
	}
	if !ok && r.DryRun {
		res.Changes = append(res.Changes, "create bucket "+r.Name)
		return res, nil
	}
	if ok && r.CreateOnly {
		// Someone else's, since the adoption check: written to only once
		// its adoption settles.
		return res, nil
	}
	if ok && !r.DryRun && b.recordUnseen(r.Name) {
		return res, b.unseenError(r.Name, "HeadBucket", "written to it")
	}
	g := &writeGate{dryRun: r.DryRun, before: r.BeforeWrite, timeout: b.cfg.timeout()}
	if !ok {
		if err := g.open(ctx); err != nil {
			return res, err
		}
		in := &s3.CreateBucketInput{Bucket: aws.String(r.Name)}
		if p.region != "" && p.region != "us-east-1" {
			in.CreateBucketConfiguration = &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraint(p.region)}
		}
		// Sent once: were its answer lost (a reset connection, a proxy's
		// 502) and the SDK to send it again, the second answer,
		// BucketAlreadyOwnedByYou, would pass this create off as someone
		// else's, and a CreateOnly call would hand the bucket to the
		// adoption check. The error reports an unknown outcome instead,
		// and the next pass, on a claim already recorded, finds the
		// bucket and converges it.
		_, err := cl.CreateBucket(ctx, in, func(o *s3.Options) { o.RetryMaxAttempts = 1 })
		switch {
		case err == nil:
			res.Created = true
			b.owners.unseen.Delete(r.Name)
			// A server that answers a re-create 200 (AWS in us-east-1)
			// does not prove the bucket new (server.createsOnlyNew).
			res.CreateUnproven = !b.cfg.server().createsOnlyNew
			res.Changes = append(res.Changes, "created bucket "+r.Name)
			if res.CreateUnproven {
				// It may be another installation's bucket, created a
				// moment ago: nothing more is written to it (an
				// anonymousRead policy, a lifecycle) until the caller
				// has read its owner record and calls Ensure again.
				return res, nil
			}
		case isCode(err, "BucketAlreadyOwnedByYou") && r.CreateOnly:
			// Created by someone else since the adoption check.
			return res, nil
		case isCode(err, "BucketAlreadyOwnedByYou"):
			// Created by someone else between the existence check and
			// this create, sent once: another installation's bucket,
			// whose owner record may not be written yet (MinIO answers
			// so for any bucket of its root's). Nothing is written to
			// it; the next pass reads its record before converging it.
			return res, fmt.Errorf("bucket %s appeared on the backend between its existence check and its create: nothing was written to it, and its owner is checked at the next pass", r.Name)
		default:
			return res, b.createError(fmt.Errorf("create bucket %s: %w", r.Name, err))
		}
	} else if p.region != "" {
		out, err := cl.GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: aws.String(r.Name)})
		if err != nil && !isNotImplemented(err) {
			return res, b.classify(fmt.Errorf("get location of %s: %w", r.Name, err))
		}
		if err == nil {
			cur := string(out.LocationConstraint)
			if cur == "" {
				cur = "us-east-1"
			}
			if cur != p.region {
				drift = &drivers.DriftError{Parameter: ParamRegion, Current: cur, Desired: p.region, Reason: "a bucket cannot move to another region; recreate it"}
			}
		}
	}
	if err := b.converge(ctx, cl, r.Name, p, g, &res); err != nil {
		return res, err
	}
	return res, drift
}

// converge brings an existing bucket's reconciled parameters to p, one
// function each, in order.
func (b *Backend) converge(ctx context.Context, cl *s3.Client, bucket string, p params, g *writeGate, res *drivers.EnsureResult) error {
	for _, step := range []func() error{
		func() error { return b.ensureVersioning(ctx, cl, bucket, p, g, res) },
		func() error { return b.ensureLifecycle(ctx, cl, bucket, p, g, res) },
		func() error { return b.ensureQuota(ctx, bucket, p, g, res) },
		func() error { return b.ensureAnonymousRead(ctx, cl, bucket, p, g, res) },
		func() error { return b.ensurePublicACLsBlocked(ctx, cl, bucket, g, res) },
	} {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// ensureVersioning compares the bucket's versioning with the parameter and
// sets it, unless dryRun, where only the change is listed.
func (b *Backend) ensureVersioning(ctx context.Context, cl *s3.Client, bucket string, p params, g *writeGate, res *drivers.EnsureResult) error {
	if p.versioning == nil {
		return nil
	}
	out, err := cl.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(bucket)})
	if isNotImplemented(err) {
		res.Shortfalls = append(res.Shortfalls, drivers.Shortfall{Parameter: ParamVersioning, Message: "this backend does not implement bucket versioning (it answered NotImplemented); the bucket works without it"})
		return nil
	}
	if err != nil {
		return b.classify(fmt.Errorf("get versioning of %s: %w", bucket, err))
	}
	var want types.BucketVersioningStatus
	switch {
	case *p.versioning && out.Status != types.BucketVersioningStatusEnabled:
		want = types.BucketVersioningStatusEnabled
	case !*p.versioning && out.Status == types.BucketVersioningStatusEnabled:
		want = types.BucketVersioningStatusSuspended
	default:
		return nil
	}
	change := fmt.Sprintf("versioning %s -> %s", orNever(string(out.Status)), want)
	if g.dryRun {
		res.Changes = append(res.Changes, change)
		return nil
	}
	if err := g.open(ctx); err != nil {
		return err
	}
	_, err = cl.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(bucket), VersioningConfiguration: &types.VersioningConfiguration{Status: want}})
	if isNotImplemented(err) {
		res.Shortfalls = append(res.Shortfalls, drivers.Shortfall{Parameter: ParamVersioning, Message: "this backend does not implement bucket versioning (it answered NotImplemented); the bucket works without it"})
		return nil
	}
	if err != nil {
		return b.classify(fmt.Errorf("set versioning of %s to %s: %w", bucket, want, err))
	}
	res.Changes = append(res.Changes, change)
	return nil
}

func orNever(s string) string {
	if s == "" {
		return "never enabled"
	}
	return s
}

// writeGate stands before every write of one Ensure: a dry run writes
// nothing, and otherwise drivers.Resource.BeforeWrite is asked once, before
// the first write.
type writeGate struct {
	dryRun bool
	before func(context.Context) error
	// timeout bounds the question, as requestTimeout bounds each request.
	timeout time.Duration
	asked   bool
	err     error
}

// open asks BeforeWrite the first time, and returns its answer.
func (g *writeGate) open(ctx context.Context) error {
	if g.before == nil || g.asked {
		return g.err
	}
	g.asked = true
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	g.err = g.before(ctx)
	return g.err
}

// createError classifies a failed CreateBucket. The create is sent once,
// so any 4xx answered it (a refusal, the controller's keys denied, a name
// someone else holds, a request throttled or timed out before it was
// read): the bucket was not made by it, a drivers.NotCreatedError wrapping
// the classified error. A server error or a lost answer may hide a bucket
// it made, and is not one.
func (b *Backend) createError(err error) error {
	status := httpStatus(err)
	err = b.classify(err)
	if status >= 400 && status < 500 {
		return &drivers.NotCreatedError{Err: err}
	}
	return err
}
