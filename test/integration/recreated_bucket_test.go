package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	s3driver "github.com/Yolean/buckety-controller/drivers/s3"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/test/wait"
)

// TestBucketCreatedAgainOutOfBandIsNotTaken (MinIO): east's Buckety
// (retentionPolicy Delete) created its bucket, whose tags hold its owner
// record, and its claim records that (spec.ownerRecorded). The bucket is
// deleted on the server, and someone outside buckety creates one of the
// name and writes to it, without buckety's tags. The Buckety's next pass
// (an edit) used to take that bucket for its own: the claim was Created
// and the status provisioned, and no record at all read as "the adoption
// rules do not apply". East's tags and settings were written to it, a
// drain request emptied it, and the deletion deleted it with its data.
// Now the Buckety goes Ready False (ResourceReplaced) naming the bucket
// and the way out, nothing is written to the bucket (no tags, versioning
// unchanged), the key of its access granted before is revoked, a drain
// request is refused, and the deletion finishes leaving the bucket and
// its object in place.
func TestBucketCreatedAgainOutOfBandIsNotTaken(t *testing.T) {
	needInfra(t)
	root := eastOnMinIO(t)
	ctx := context.Background()
	ns := namespace(t)
	removeWhileRunning(t, ns)
	bucket := ns + "-logs"
	_, b, a := tenantManifests(ns, bucket, "")
	b.Spec.Parameters = map[string]string{"versioning": "false"}
	create(t, b)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	uid := getBuckety(t, ns, b.Name).UID
	// An access granted before the bucket is replaced: its key of its own
	// works on east's bucket.
	create(t, a)
	waitCondition(t, a, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	copied := secret(t, ns, a.Spec.CredentialsSecretName).Data
	putGet(t, copied, "east", "east's")
	keyOf := s3Client(t, string(copied["endpoint"]), string(copied["region"]), string(copied["accessKeyID"]), string(copied["secretAccessKey"]))
	wait.For(t, waitTimeout, "the claim on "+bucket+" recording its owner record", func() (bool, string) {
		var list v1.BucketyClaimList
		if err := k8s.List(ctx, &list, client.MatchingLabels{v1.ClaimOwnerLabel: string(uid)}); err != nil {
			return false, err.Error()
		}
		for _, cl := range list.Items {
			if cl.Spec.ResourceName == bucket {
				return cl.Spec.OwnerRecorded, fmt.Sprintf("claim %s, ownerRecorded %v", cl.Name, cl.Spec.OwnerRecorded)
			}
		}
		return false, fmt.Sprintf("no claim among %d", len(list.Items))
	})

	tagged := func() string {
		out, err := root.GetBucketTagging(ctx, &s3.GetBucketTaggingInput{Bucket: aws.String(bucket)})
		if err != nil {
			return ""
		}
		for _, tag := range out.TagSet {
			if aws.ToString(tag.Key) == s3driver.TagInstallation {
				return aws.ToString(tag.Value)
			}
		}
		return ""
	}
	// The stranger's bucket, made with an object and no buckety tags.
	// East's sweep (every second) may find the bucket missing first and
	// create it again, with its record: then it is deleted and made again.
	wait.For(t, waitTimeout, bucket+" made again by someone outside buckety", func() (bool, string) {
		if err := remakeBucket(ctx, root, bucket); err != nil {
			return false, err.Error()
		}
		if _, err := root.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("theirs"), Body: strings.NewReader("theirs")}); err != nil {
			return false, "put: " + err.Error()
		}
		inst := tagged()
		return inst == "", "east's pass came between the create and the check, and tagged it " + inst
	})
	theirs := func(what string) {
		t.Helper()
		if inst := tagged(); inst != "" {
			t.Errorf("%s: want no owner record on the stranger's bucket, got installation %s", what, inst)
		}
		v, err := root.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(bucket)})
		if err != nil {
			t.Fatalf("%s: want the stranger's bucket kept: %v", what, err)
		}
		if v.Status == s3types.BucketVersioningStatusEnabled {
			t.Errorf("%s: want the stranger's bucket's settings untouched, got versioning %s", what, v.Status)
		}
		if _, err := root.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("theirs")}); err != nil {
			t.Errorf("%s: want the stranger's object kept: %v", what, err)
		}
	}

	// An edit wakes the Buckety, and would write to the bucket.
	patch(t, b, `{"spec":{"parameters":{"versioning":"true"}}}`)
	c := waitCondition(t, b, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonResourceReplaced, waitTimeout)
	if !strings.Contains(c.Message, bucket+" on backend owned carries no owner record") || !strings.Contains(c.Message, "kubectl patch bucketyclaim") {
		t.Errorf("want the Ready message to name the bucket and the way out, got %q", c.Message)
	}
	theirs("after the Buckety's pass")

	// The access's key, whose grant names the bucket, no longer reaches
	// the stranger's: it is revoked, as for a bucket another installation
	// holds.
	wait.For(t, waitTimeout, "the access's key revoked", func() (bool, string) {
		_, err := keyOf.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("theirs")})
		return err != nil, "the access's key still reads the stranger's object"
	})
	waitCondition(t, a, v1.ConditionReady, metav1.ConditionFalse, "", waitTimeout)

	patch(t, b, `{"spec":{"drain":{"request":"r1"}}}`)
	wait.For(t, waitTimeout, "the drain refused", func() (bool, string) {
		st := getBuckety(t, ns, b.Name).Status.Drain
		if st == nil {
			return false, "no status.drain"
		}
		return st.Phase == v1.DrainPhaseRefused && strings.Contains(st.Message, "not this Buckety's to drain"), fmt.Sprintf("%s: %s", st.Phase, st.Message)
	})
	theirs("after the drain request")

	deleteOn(t, k8s, a)
	deleteOn(t, k8s, b)
	theirs("after the Buckety was deleted with retentionPolicy Delete")
}
