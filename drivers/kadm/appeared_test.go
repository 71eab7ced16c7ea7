package kadm

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/test/kafka"
)

// TestTopicAppearingBeforeTheCreateIsNotWritten: a topic another
// installation creates after this backend saw it missing (its delete, a
// recent observation that Ensure acts on within MaxAge) and before its
// create. The create is answered that the topic exists; Ensure must fail
// without writing to it (its owner record is read at the next pass). It
// used to converge it at once, writing this Buckety's configs to the
// other's topic.
func TestTopicAppearingBeforeTheCreateIsNotWritten(t *testing.T) {
	f := newFixture(t, kafka.Options{}, nil)
	ctx := context.Background()
	r := drivers.Resource{Name: "appeared", MaxAge: time.Hour, Parameters: map[string]string{"config.retention.ms": "3600000"}}
	if _, err := f.backend.Ensure(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := f.backend.Delete(ctx, r); err != nil {
		t.Fatal(err)
	}
	// Another installation's topic of that name, with a config of its own.
	if _, err := f.admin.CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": kmsg.StringPtr("7200000")}, "appeared"); err != nil {
		t.Fatal(err)
	}
	res, err := f.backend.Ensure(ctx, r)
	if err == nil {
		t.Errorf("want an error for a topic that appeared before the create, got %+v", res)
	}
	if res.Created {
		t.Error("want the topic not reported created")
	}
	rc, err := f.admin.DescribeTopicConfigs(ctx, "appeared")
	if err != nil {
		t.Fatal(err)
	}
	c, err := rc.On("appeared", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range c.Configs {
		if kv.Key == "retention.ms" && (kv.Value == nil || *kv.Value != "7200000") {
			t.Errorf("the other's topic: want its retention.ms 7200000 untouched, got %v", kv.MaybeValue())
		}
	}
}
