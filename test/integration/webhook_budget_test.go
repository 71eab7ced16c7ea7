package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/test/harness"
)

// TestWebhookCountsWhatExistedAtItsStart: a webhook replica that starts
// beside a namespace's Bucketies counts each at its own footprint. Its
// cache's transform counts a Buckety's footprint and strips the parameters
// it counted from. client-go's watch-list stream (its default since 1.35)
// ran a cache's transform twice on every object it listed at start, once
// into its own store and once into the informer's, so the second count saw
// no parameters and counted the backend's defaults: after any webhook
// restart, a namespace at its budget could grow past it. The caches fill
// by pages now, each object transformed once (internal/runtime/pagedcache).
func TestWebhookCountsWhatExistedAtItsStart(t *testing.T) {
	needInfra(t)
	bs := sharedBackends("kafka", "s3")
	bs[0].Limits = &config.Limits{Partitions: 6}
	ns := namespace(t)
	removeWhileRunning(t, ns)
	// Created before the webhook starts, with no controller running: its
	// 5 partitions are only in its spec.
	create(t, budgetTopic(ns, "big", 5, ""))
	startWebhookWithConfig(t, harness.ConfigYAML(bs...))
	err := k8s.Create(context.Background(), budgetTopic(ns, "more", 2, ""))
	if err == nil {
		t.Fatal("a Buckety of 2 partitions beside one of 5 was admitted under a budget of 6: the webhook counted the one it listed at start at less than its 5")
	}
	if want := "it uses 5 and asks for 2 more, over its budget of 6 partitions (limits.partitions)"; !strings.Contains(err.Error(), want) {
		t.Fatalf("want the refusal to say %q, got %v", want, err)
	}
}
