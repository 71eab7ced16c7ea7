package kadm

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/Yolean/buckety-controller/drivers"
)

// TestLostGrowAnswerIsNotARefusal: the answer to a CreatePartitions that
// grew a topic is lost on a reset connection, and kgo sends the request
// again; Kafka refuses the count the topic now has (INVALID_PARTITIONS,
// "Topic already has 4 partition(s)"). That was reported as a refusal:
// Ready False on the slow backoff for a grow that was done. The topic is
// read again, and a topic of its ID with the count asked for is the grow
// done.
func TestLostGrowAnswerIsNotARefusal(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cfg := &Config{SeedBrokers: c.ListenAddrs(), ClientID: "t", RequestTimeout: drivers.Duration{Duration: 5 * time.Second}}
	loser := &replyLoser{key: kmsg.CreatePartitions}
	be, opts := losingBackend(t, cfg, loser)
	ctx := context.Background()
	r := drivers.Resource{Name: "grow", Parameters: map[string]string{"partitions": "2"}}
	if _, err := be.Ensure(ctx, r); err != nil {
		t.Fatal("create:", err)
	}
	r.Parameters = map[string]string{"partitions": "4"}
	n := 0
	c.ControlKey(kmsg.CreatePartitions.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		n++
		if n != 2 {
			return nil, nil, false
		}
		// As Kafka answers a count equal to the topic's.
		rq := req.(*kmsg.CreatePartitionsRequest)
		resp := rq.ResponseKind().(*kmsg.CreatePartitionsResponse)
		for _, tp := range rq.Topics {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic = tp.Topic
			rt.ErrorCode = kerr.InvalidPartitions.Code
			rt.ErrorMessage = kmsg.StringPtr("Topic already has 4 partition(s).")
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil, true
	})
	loser.armed.Store(true)
	_, err = be.Ensure(ctx, r)
	if loser.lost.Load() != 1 || n != 2 { // the request, and its resend
		t.Fatalf("want the grow's answer lost once and the request sent again, got %d lost, %d requests", loser.lost.Load(), n)
	}
	if err != nil {
		t.Errorf("a grow whose answer was lost and whose resend the broker refused as done: want success, got %v (refused %v)", err, drivers.IsRefused(err))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	td, err := kadm.NewClient(cl).ListTopics(ctx, "grow")
	if err != nil {
		t.Fatal(err)
	}
	if got := len(td["grow"].Partitions); got != 4 {
		t.Errorf("want 4 partitions, got %d", got)
	}
	// The count the resend found may be more than asked for (grown out
	// of band as well): no observation says 4, so a pass acting on
	// recent observations reads the topic, and reports the drift.
	if rs, err := kadm.NewClient(cl).CreatePartitions(ctx, 2, "grow"); err != nil || rs.Error() != nil {
		t.Fatal(err, rs.Error())
	}
	aged := r
	aged.MaxAge = time.Hour
	var drift *drivers.DriftError
	if _, err := be.Ensure(ctx, aged); !errors.As(err, &drift) {
		t.Errorf("6 partitions against the spec's 4, after the grow found done: want a drift reported, got %v", err)
	}
}
