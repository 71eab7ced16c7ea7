package s3

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/Yolean/buckety-controller/drivers"
)

// Owner records (drivers.OwnerRecorder) as bucket tags. A bucket's tags
// are read and written with s3:GetBucketTagging / s3:PutBucketTagging /
// s3:DeleteBucketTagging, which no role grants a tenant's credential
// (roles.go), so only buckety's own keys reach the record; they are
// stored by the server with the bucket, so a second installation on the
// same server, or this one rebuilt, reads them.
//
// The keys are buckety.yolean.se/<field>: S3 allows tag keys of 1-128 and
// values of 0-256 Unicode letters, digits, spaces and _ . : / = + - @,
// and reserves the aws: prefix; a domain and a '/' keep buckety's keys
// apart from anyone else's (as Kubernetes labels are), and MinIO,
// VersityGW (posix) and SeaweedFS store them as given (owners_test.go).
// Every value buckety writes is a DNS name, a UID or a state word. To is
// written only for a handover: an absent key reads as "".
//
// PutBucketTagging replaces the whole set, so WriteOwner reads the set,
// replaces buckety's keys and writes it back, keeping every other tag.
// S3 has no conditional PutBucketTagging: two installations writing one
// bucket's record at the same moment race, the last write winning; the
// controller reads the record fresh before it writes, which narrows the
// window to a reconcile's length.

// Tag keys of the owner record.
const (
	TagInstallation = "buckety.yolean.se/installation"
	TagNamespace    = "buckety.yolean.se/namespace"
	TagName         = "buckety.yolean.se/name"
	TagUID          = "buckety.yolean.se/uid"
	TagState        = "buckety.yolean.se/state"
	TagTo           = "buckety.yolean.se/to"
	TagAdopted      = "buckety.yolean.se/adopted"
)

// ErrNoOwnerRecords: the server keeps no bucket tags (it answered
// NotImplemented), so no owner record can be read or written.
var ErrNoOwnerRecords = errors.New("no owner records on this server")

// ownerTagKeys are every key of the owner record.
var ownerTagKeys = []string{TagInstallation, TagNamespace, TagName, TagUID, TagState, TagTo, TagAdopted}

var _ drivers.OwnerRecorder = (*Backend)(nil)

// ownerTags is rec as tags; nil for nil.
func ownerTags(rec *drivers.OwnerRecord) map[string]string {
	if rec == nil {
		return nil
	}
	t := map[string]string{
		TagInstallation: rec.Installation,
		TagNamespace:    rec.Namespace,
		TagName:         rec.Name,
		TagUID:          rec.UID,
		TagState:        string(rec.State),
	}
	if rec.To != "" {
		t[TagTo] = rec.To
	}
	if rec.Adopted {
		t[TagAdopted] = "true"
	}
	return t
}

// ownerFromTags is the record a bucket's tags hold, nil when they hold
// none of buckety's keys. A partial record (someone removed some of the
// keys) is returned as it is: its empty fields never match an
// installation, so the controller treats it as another's.
func ownerFromTags(tags map[string]string) *drivers.OwnerRecord {
	found := false
	for _, k := range ownerTagKeys {
		if _, ok := tags[k]; ok {
			found = true
		}
	}
	if !found {
		return nil
	}
	return &drivers.OwnerRecord{
		Installation: tags[TagInstallation],
		Namespace:    tags[TagNamespace],
		Name:         tags[TagName],
		UID:          tags[TagUID],
		State:        drivers.OwnerState(tags[TagState]),
		To:           tags[TagTo],
		Adopted:      tags[TagAdopted] == "true",
	}
}

// withOwner is tags with buckety's keys replaced by rec's (removed for nil).
func withOwner(tags map[string]string, rec *drivers.OwnerRecord) map[string]string {
	out := maps.Clone(tags)
	if out == nil {
		out = map[string]string{}
	}
	for _, k := range ownerTagKeys {
		delete(out, k)
	}
	maps.Copy(out, ownerTags(rec))
	return out
}

// owners is what a Backend knows of its server's bucket tagging.
type owners struct {
	mu sync.Mutex
	// known: the server was asked, or answered a read or write, and kept
	// says how.
	known bool
	kept  bool
	// why is the reason when not kept.
	why string
	// proven: the server answered a tag read or write as a server that
	// keeps tags (a probe, ReadOwner or WriteOwner). A NotImplemented
	// after that is a fault of the moment (a proxy, a node of a rolling
	// upgrade), not a server without tags: it fails the request and
	// keeps the records on. Turning them off would stop every check of
	// another installation's record on this backend for the process's
	// life.
	proven bool
	// locks serialise one bucket's tag read-modify-write within this
	// backend.
	locks sync.Map // bucket → *sync.Mutex
	// unseen: buckets whose last owner record read was answered
	// NoSuchBucket, and when (bucket → time.Time). See recordUnseen.
	unseen sync.Map
}

// unseenFor is how long a record read answered NoSuchBucket keeps the
// bucket from being written to, emptied or deleted by this backend, should
// another request find it: longer than a pass's record read precedes its
// writes.
const unseenFor = time.Minute

// recordUnseen reports whether the last owner record read of bucket, less
// than unseenFor ago, was answered NoSuchBucket. A request that then finds
// the bucket (a HEAD, a create answered BucketAlreadyOwnedByYou) met a
// server that answers for it from two views: a node or gateway whose
// bucket metadata lags (SeaweedFS while its filer does not answer, a proxy
// in a rollout), or another installation's bucket made between the two.
// The record read said nothing of its owner: whatever this pass would
// write, empty or delete waits for a read that sees the bucket.
func (b *Backend) recordUnseen(bucket string) bool {
	v, ok := b.owners.unseen.Load(bucket)
	return ok && time.Since(v.(time.Time)) < unseenFor
}

// unseenError is the error of a request, op, that found a bucket its
// owner record read did not (recordUnseen): nothing is done, as what.
func (b *Backend) unseenError(bucket, op, what string) error {
	return &drivers.UnavailableError{Backend: b.name, Err: fmt.Errorf("bucket %s: the read of its owner record was answered NoSuchBucket, yet %s finds it: its owner is not known, so nothing is %s until a read sees the bucket and its record", bucket, op, what)}
}

func (o *owners) lock(bucket string) *sync.Mutex {
	l, _ := o.locks.LoadOrStore(bucket, &sync.Mutex{})
	return l.(*sync.Mutex)
}

// notKept records that the server does not keep bucket tags, and
// returns why, unless the server has been seen keeping them (proven):
// then it returns an error of the moment, for the request to be retried.
func (b *Backend) notKept(op string, err error) (string, error) {
	b.owners.mu.Lock()
	defer b.owners.mu.Unlock()
	if b.owners.proven {
		return "", &drivers.UnavailableError{Backend: b.name, Err: fmt.Errorf("%s answered %v, though this server has kept bucket tags (buckety's owner records) before: retried, owner records stay on", op, err)}
	}
	why := fmt.Sprintf("backend %s (implementation %s) keeps no bucket tags, where buckety keeps owner records: %s answered %v", b.name, orUnset(b.cfg.Implementation), op, err)
	b.owners.known, b.owners.kept, b.owners.why = true, false, why
	return why, nil
}

// keepsTagsProven records that the server answered a tag read or write
// as a server that keeps tags.
func (b *Backend) keepsTagsProven() {
	b.owners.mu.Lock()
	b.owners.known, b.owners.kept, b.owners.why, b.owners.proven = true, true, "", true
	b.owners.mu.Unlock()
}

// noOwnerRecords is the error of a tag read or write answered
// NotImplemented (notKept).
func (b *Backend) noOwnerRecords(op string, err error) error {
	why, transient := b.notKept(op, err)
	if transient != nil {
		return transient
	}
	return fmt.Errorf("%w: %s", ErrNoOwnerRecords, why)
}

// ownerProbeBucket is a bucket name no one holds, asked for its tags when
// the server has no bucket to ask about.
const ownerProbeBucket = "buckety-owner-records-probe-0"

// OwnerRecords implements drivers.OwnerRecorder. It asks the server once:
// GetBucketTagging on the first bucket the backend's keys list (a name
// no one holds when there is none). NotImplemented (VersityGW on a
// backend without tags; R2 if it answers so: untested, no server here
// stands in for it) means no records; any S3 answer about the bucket's
// tags (tags, NoSuchTagSet, NoSuchBucket: a server may check the bucket
// before the operation) means records are kept. The answer is kept for
// the backend's life; a NotImplemented seen later by ReadOwner or
// WriteOwner turns it to false, unless the server answered a tag read or
// write before (owners.proven): then it is an error of the moment, and
// the request is retried. An error (refused keys, an unreachable
// server) is not kept. A server that keeps tags on every store
// (keepsTags: MinIO) is not asked: a NotImplemented would still turn the
// answer to false.
func (b *Backend) OwnerRecords(ctx context.Context) (bool, string, error) {
	b.owners.mu.Lock()
	known, kept, why := b.owners.known, b.owners.kept, b.owners.why
	b.owners.mu.Unlock()
	if known {
		return kept, why, nil
	}
	if b.cfg.server().keepsTags {
		return true, "", nil
	}
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	cl, err := b.client(b.cfg.endpoint())
	if err != nil {
		return false, "", err
	}
	bucket := ownerProbeBucket
	list, err := cl.ListBuckets(ctx, &s3.ListBucketsInput{MaxBuckets: aws.Int32(1)})
	if err != nil {
		return false, "", b.classify(err)
	}
	if len(list.Buckets) > 0 {
		bucket = aws.ToString(list.Buckets[0].Name)
	}
	_, err = cl.GetBucketTagging(ctx, &s3.GetBucketTaggingInput{Bucket: aws.String(bucket)})
	switch {
	case isNotImplemented(err):
		why, transient := b.notKept("GetBucketTagging", err)
		if transient != nil {
			return false, "", transient
		}
		return false, why, nil
	case err == nil, isNoTags(err):
		b.keepsTagsProven()
		return true, "", nil
	case isNoSuchBucket(err):
		// The server may have answered for the bucket before the
		// operation: records are kept, not yet proven.
		b.owners.mu.Lock()
		b.owners.known, b.owners.kept, b.owners.why = true, true, ""
		b.owners.mu.Unlock()
		return true, "", nil
	}
	return false, "", b.classify(err)
}

// isNoTags reports the answer of GetBucketTagging on a bucket without
// tags.
func isNoTags(err error) bool { return isCode(err, "NoSuchTagSet", "NoSuchTagSetError") }

// bucketTags reads a bucket's tags: nil for none; found false when the
// bucket does not exist.
func (b *Backend) bucketTags(ctx context.Context, cl *s3.Client, bucket string) (tags map[string]string, found bool, err error) {
	out, err := cl.GetBucketTagging(ctx, &s3.GetBucketTaggingInput{Bucket: aws.String(bucket)})
	switch {
	case isNoTags(err):
		b.keepsTagsProven()
		b.owners.unseen.Delete(bucket)
		return nil, true, nil
	case isNoSuchBucket(err):
		b.owners.unseen.Store(bucket, time.Now())
		return nil, false, nil
	case isNotImplemented(err):
		return nil, false, b.noOwnerRecords("GetBucketTagging", err)
	case err != nil:
		return nil, false, b.classify(err)
	}
	b.keepsTagsProven()
	b.owners.unseen.Delete(bucket)
	tags = make(map[string]string, len(out.TagSet))
	for _, t := range out.TagSet {
		tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return tags, true, nil
}

// ReadOwner implements drivers.OwnerRecorder. It always reads the server
// (r.MaxAge is not used: there is no cache of observations to answer
// from), on the endpoint Inspect and Ensure use for r (an R2
// jurisdiction's own).
func (b *Backend) ReadOwner(ctx context.Context, r drivers.Resource) (*drivers.OwnerRecord, error) {
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	cl, err := b.clientFor(parseParams(r.Parameters))
	if err != nil {
		return nil, err
	}
	tags, _, err := b.bucketTags(ctx, cl, r.Name)
	if err != nil {
		return nil, fmt.Errorf("s3: backend %s: read the owner record of bucket %s: %w", b.name, r.Name, err)
	}
	return ownerFromTags(tags), nil
}

// WriteOwner implements drivers.OwnerRecorder: the bucket's tags with
// buckety's keys replaced by rec's, every other tag kept. Nothing is
// written when the tags already say so; a set left empty is deleted
// (DeleteBucketTagging), as S3 refuses an empty PutBucketTagging on some
// servers. A missing bucket is an error, but for rec nil: it holds no
// record to remove. A bucket this pass's Ensure created (r.JustCreated),
// on a server that creates only new buckets (createsOnlyNew), has no tags
// to keep: the record is written without reading them, one request in
// place of two. Every bucket that existed before is read first.
func (b *Backend) WriteOwner(ctx context.Context, r drivers.Resource, rec *drivers.OwnerRecord) error {
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	cl, err := b.clientFor(parseParams(r.Parameters))
	if err != nil {
		return err
	}
	l := b.owners.lock(r.Name)
	l.Lock()
	defer l.Unlock()
	fail := func(err error) error {
		return fmt.Errorf("s3: backend %s: write the owner record of bucket %s: %w", b.name, r.Name, err)
	}
	tags, found := map[string]string(nil), true
	// The controller judged the record this write replaces from its own
	// read; one answered NoSuchBucket judged none, and a bucket this read
	// finds may hold a record nobody judged (another installation's).
	// Without one (a new bucket a lagging server answered for late),
	// there is nothing to take over.
	unseen := b.recordUnseen(r.Name)
	if !r.JustCreated || !b.cfg.server().createsOnlyNew {
		tags, found, err = b.bucketTags(ctx, cl, r.Name)
	}
	switch {
	case err != nil:
		return fail(err)
	case found && unseen && rec != nil && ownerFromTags(tags) != nil:
		return fail(b.unseenError(r.Name, "GetBucketTagging", "written"))
	case !found && rec == nil:
		return nil
	case !found:
		return fail(errors.New("the bucket does not exist"))
	}
	want := withOwner(tags, rec)
	if maps.Equal(want, tags) || (len(want) == 0 && len(tags) == 0) {
		return nil
	}
	if len(want) == 0 {
		_, err = cl.DeleteBucketTagging(ctx, &s3.DeleteBucketTaggingInput{Bucket: aws.String(r.Name)})
	} else {
		_, err = cl.PutBucketTagging(ctx, &s3.PutBucketTaggingInput{Bucket: aws.String(r.Name), Tagging: &types.Tagging{TagSet: tagSet(want)}})
	}
	switch {
	case isNotImplemented(err):
		return fail(b.noOwnerRecords("PutBucketTagging", err))
	case err != nil:
		return fail(b.classify(err))
	}
	b.keepsTagsProven()
	return nil
}

// tagSet is tags in key order.
func tagSet(tags map[string]string) []types.Tag {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]types.Tag, 0, len(keys))
	for _, k := range keys {
		out = append(out, types.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	return out
}

// errNoInstallation: principals are listed by installation, and "" names
// none (its principals carry no marker).
var errNoInstallation = errors.New("no installation: principals named without an installation's marker are never listed")
