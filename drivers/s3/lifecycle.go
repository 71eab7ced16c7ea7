package s3

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/Yolean/buckety-controller/drivers"
)

// Bucket lifecycle, as Ensure compares and writes it: buckety owns one rule
// of a bucket's lifecycle configuration, and never touches a rule of anyone
// else's unless the parameter asks for the lifecycle to be exactly its own.

// LifecycleRuleID names the lifecycle rule buckety owns. Without a
// lifecycle parameter only this rule is removed; rules others added are left
// alone.
const LifecycleRuleID = "buckety"

// ensureLifecycle makes the bucket's lifecycle exactly the one buckety rule
// when the parameter is set, and removes only buckety's rule when it is not.
// With dryRun it only lists the change.
func (b *Backend) ensureLifecycle(ctx context.Context, cl *s3.Client, bucket string, p params, g *writeGate, res *drivers.EnsureResult) error {
	out, err := cl.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String(bucket)})
	var rules []types.LifecycleRule
	switch {
	case isNotImplemented(err):
		if p.lifecycle != nil {
			res.Shortfalls = append(res.Shortfalls, drivers.Shortfall{Parameter: ParamLifecycle, Message: "this backend does not implement bucket lifecycle (it answered NotImplemented); objects will not expire"})
		}
		return nil
	case isCode(err, "NoSuchLifecycleConfiguration"):
	case err != nil:
		return b.classify(fmt.Errorf("get lifecycle of %s: %w", bucket, err))
	default:
		rules = out.Rules
	}
	if p.lifecycle == nil {
		return b.removeLifecycleRule(ctx, cl, bucket, rules, g, res)
	}
	want := *p.lifecycle
	b.mu.Lock()
	dropsAbort := b.dropsAbortUploads
	b.mu.Unlock()
	abortShortfall := drivers.Shortfall{Parameter: ParamLifecycle, Message: "this backend accepts but does not store abortIncompleteMultipartUploadDays (MinIO removes stale uploads by itself); the rest of the lifecycle applies"}
	if len(rules) == 1 && ruleMatches(rules[0], want, dropsAbort) {
		if dropsAbort && want.AbortIncompleteMultipartUploadDays > 0 {
			res.Shortfalls = append(res.Shortfalls, abortShortfall)
		}
		return nil
	}
	change := "lifecycle set: " + want.String()
	if len(rules) > 0 {
		change = fmt.Sprintf("lifecycle replaced (%d rules on the bucket) with: %s", len(rules), want.String())
	}
	if g.dryRun {
		res.Changes = append(res.Changes, change)
		return nil
	}
	if err := g.open(ctx); err != nil {
		return err
	}
	rule := ruleFor(want)
	_, err = cl.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String(bucket), LifecycleConfiguration: &types.BucketLifecycleConfiguration{Rules: []types.LifecycleRule{rule}}})
	if isNotImplemented(err) {
		res.Shortfalls = append(res.Shortfalls, drivers.Shortfall{Parameter: ParamLifecycle, Message: "this backend does not implement bucket lifecycle (it answered NotImplemented); objects will not expire"})
		return nil
	}
	if err != nil {
		return b.classify(fmt.Errorf("set lifecycle of %s: %w", bucket, err))
	}
	if want.AbortIncompleteMultipartUploadDays > 0 {
		back, err := cl.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String(bucket)})
		if err != nil {
			return b.classify(fmt.Errorf("read back lifecycle of %s: %w", bucket, err))
		}
		if len(back.Rules) == 1 && back.Rules[0].AbortIncompleteMultipartUpload == nil {
			b.mu.Lock()
			b.dropsAbortUploads = true
			b.mu.Unlock()
			res.Shortfalls = append(res.Shortfalls, abortShortfall)
		}
	}
	res.Changes = append(res.Changes, change)
	return nil
}

// removeLifecycleRule removes buckety's rule from rules, the bucket's
// lifecycle, leaving the other rules as they are (the parameter is not
// set). With dryRun it only lists the change.
func (b *Backend) removeLifecycleRule(ctx context.Context, cl *s3.Client, bucket string, rules []types.LifecycleRule, g *writeGate, res *drivers.EnsureResult) error {
	var keep []types.LifecycleRule
	for _, r := range rules {
		if aws.ToString(r.ID) != LifecycleRuleID {
			keep = append(keep, r)
		}
	}
	if len(keep) == len(rules) {
		return nil
	}
	if g.dryRun {
		res.Changes = append(res.Changes, "lifecycle rule removed (not in spec)")
		return nil
	}
	if err := g.open(ctx); err != nil {
		return err
	}
	var err error
	if len(keep) == 0 {
		_, err = cl.DeleteBucketLifecycle(ctx, &s3.DeleteBucketLifecycleInput{Bucket: aws.String(bucket)})
	} else {
		_, err = cl.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String(bucket), LifecycleConfiguration: &types.BucketLifecycleConfiguration{Rules: keep}})
	}
	if err != nil {
		return b.classify(fmt.Errorf("remove buckety's lifecycle rule from %s: %w", bucket, err))
	}
	res.Changes = append(res.Changes, "lifecycle rule removed (not in spec)")
	return nil
}

// ruleFor is buckety's rule for want.
func ruleFor(want Lifecycle) types.LifecycleRule {
	rule := types.LifecycleRule{
		ID:     aws.String(LifecycleRuleID),
		Status: types.ExpirationStatusEnabled,
		Filter: &types.LifecycleRuleFilter{Prefix: aws.String(want.Prefix)},
	}
	if want.ExpirationDays > 0 {
		rule.Expiration = &types.LifecycleExpiration{Days: aws.Int32(want.ExpirationDays)}
	}
	if want.AbortIncompleteMultipartUploadDays > 0 {
		rule.AbortIncompleteMultipartUpload = &types.AbortIncompleteMultipartUpload{DaysAfterInitiation: aws.Int32(want.AbortIncompleteMultipartUploadDays)}
	}
	return rule
}

// ruleMatches reports whether r is exactly buckety's rule for want. With
// dropsAbort, a missing AbortIncompleteMultipartUpload matches.
func ruleMatches(r types.LifecycleRule, want Lifecycle, dropsAbort bool) bool {
	if aws.ToString(r.ID) != LifecycleRuleID || r.Status != types.ExpirationStatusEnabled {
		return false
	}
	//lint:ignore SA1019 servers may still answer with the deprecated top-level Prefix
	prefix := aws.ToString(r.Prefix)
	if r.Filter != nil {
		if r.Filter.And != nil || r.Filter.Tag != nil || r.Filter.ObjectSizeGreaterThan != nil || r.Filter.ObjectSizeLessThan != nil {
			return false
		}
		prefix = aws.ToString(r.Filter.Prefix)
	}
	if prefix != want.Prefix {
		return false
	}
	var exp int32
	if r.Expiration != nil {
		if r.Expiration.Date != nil || aws.ToBool(r.Expiration.ExpiredObjectDeleteMarker) {
			return false
		}
		exp = aws.ToInt32(r.Expiration.Days)
	}
	var abort int32
	if r.AbortIncompleteMultipartUpload != nil {
		abort = aws.ToInt32(r.AbortIncompleteMultipartUpload.DaysAfterInitiation)
	} else if dropsAbort {
		abort = want.AbortIncompleteMultipartUploadDays
	}
	return exp == want.ExpirationDays && abort == want.AbortIncompleteMultipartUploadDays &&
		r.NoncurrentVersionExpiration == nil && len(r.NoncurrentVersionTransitions) == 0 && len(r.Transitions) == 0
}
