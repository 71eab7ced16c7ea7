package kafka

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// SecretClient connects as a workload does, with nothing but an access
// Secret's keys: bootstrap, and the SCRAM user of sasl.username,
// sasl.password and sasl.mechanism. It does not retry, so a refusal
// surfaces at once.
func SecretClient(data map[string][]byte, opts ...kgo.Opt) (*kgo.Client, error) {
	auth := scram.Auth{User: string(data["sasl.username"]), Pass: string(data["sasl.password"])}
	var mech kgo.Opt
	switch m := string(data["sasl.mechanism"]); m {
	case "SCRAM-SHA-512":
		mech = kgo.SASL(auth.AsSha512Mechanism())
	case "SCRAM-SHA-256":
		mech = kgo.SASL(auth.AsSha256Mechanism())
	default:
		return nil, fmt.Errorf("sasl.mechanism %q: want SCRAM-SHA-512 or SCRAM-SHA-256", m)
	}
	return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(strings.Split(string(data["bootstrap"]), ",")...),
		mech, kgo.RequestRetries(0), kgo.RetryTimeout(2 * time.Second)}, opts...)...)
}

// ConsumeOne polls cl (a consumer) until it has a record, or returns the
// first error it fetches, or ctx's.
func ConsumeOne(ctx context.Context, cl *kgo.Client) error {
	return ConsumeMatching(ctx, cl, func(*kgo.Record) bool { return true })
}

// ConsumeMatching polls cl (a consumer) until it fetches a record for
// which match is true, or returns the first error it fetches, or ctx's.
func ConsumeMatching(ctx context.Context, cl *kgo.Client, match func(*kgo.Record) bool) error {
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return ferr
		}
		found := false
		fs.EachRecord(func(r *kgo.Record) { found = found || match(r) })
		if found {
			return nil
		}
	}
}

// Describe asks for topic's metadata on cl: nil when cl may describe it,
// the topic's error (TOPIC_AUTHORIZATION_FAILED, UNKNOWN_TOPIC_OR_PARTITION)
// otherwise.
func Describe(ctx context.Context, cl *kgo.Client, topic string) error {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if len(resp.Topics) != 1 {
		return fmt.Errorf("metadata of %s: want 1 topic, got %d", topic, len(resp.Topics))
	}
	return kerr.ErrorForCode(resp.Topics[0].ErrorCode)
}

// BucketyCredentials reads, as an admin client cl, the SCRAM users buckety
// issued (named bky. or, marked with an installation, bky-) and the ACLs of each, as "TYPE NAME" per ACL, for
// the harnesses that count what is left of per-access credentials.
func BucketyCredentials(ctx context.Context, cl *kgo.Client) (users map[string]kadm.DescribedUserSCRAM, acls map[string][]string, err error) {
	all, err := kadm.NewClient(cl).DescribeUserSCRAMs(ctx)
	if err != nil && !errors.Is(err, kerr.ResourceNotFound) {
		return nil, nil, err
	}
	users = map[string]kadm.DescribedUserSCRAM{}
	for u, d := range all {
		if isBucketyUser(u) {
			users[u] = d
		}
	}
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("describe ACLs: %w", err)
	}
	acls = map[string][]string{}
	for _, r := range resp.Resources {
		for _, x := range r.ACLs {
			if u, ok := strings.CutPrefix(x.Principal, "User:"); ok && isBucketyUser(u) {
				acls[u] = append(acls[u], fmt.Sprintf("%s %s", r.ResourceType, r.ResourceName))
			}
		}
	}
	return users, acls, nil
}

// isBucketyUser: bky.… (unmarked) or bky-<installation marker>.…
func isBucketyUser(u string) bool {
	return strings.HasPrefix(u, "bky.") || strings.HasPrefix(u, "bky-")
}
