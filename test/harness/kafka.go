package harness

import (
	"context"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Topics lists the broker's topics with a fresh client: kadm's ListTopics
// answers from the client's metadata, which a long-lived client would
// serve stale. opts are added to the client's (e.g. hooks that count the
// harness's own requests).
func Topics(ctx context.Context, seeds []string, opts ...kgo.Opt) (map[string]bool, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, opts...)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	td, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, n := range td.Names() {
		out[n] = true
	}
	return out, nil
}
