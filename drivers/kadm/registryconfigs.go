package kadm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/Yolean/buckety-controller/drivers"
)

// The registry's configs. createRegistry makes the registry compacted, and
// compaction alone never drops a key's latest record. A registry that
// already existed (created by hand or by an older tool, or altered later
// with kafka-configs) may have cleanup.policy delete or "compact,delete":
// the brokers then delete ownership records by age or size, and until
// this backend's next full load notices they are gone (fetchRegistry's
// lost records, up to reloadAfter later), another installation sees the
// topics they name as unowned and may take them over. The backend reads
// the registry's configs when it learns the registry exists or finds it
// created again (registryMetadata), and when the probe finds the last
// reading older than registryConfigsEvery; a registry whose policy is
// anything but compact is the probe's warning (ProbeWarnings), not its
// failure: the backend serves meanwhile. So is a registry whose configs
// the backend's principal may not read (DescribeConfigs refused with
// TOPIC_AUTHORIZATION_FAILED): whether the brokers keep its records cannot
// be told, and a backend that looked sound only because nobody could look
// would hide the risk the warning is for. The backend never alters the
// registry's configs or its rights: they may be the cluster's policy,
// which its operator owns.

// registryConfigsEvery bounds how often the registry's configs are read:
// a registry altered with kafka-configs shows in the probe's warnings
// within it, and neither the probes nor catch-ups after errors ask more
// often.
const registryConfigsEvery = 5 * time.Minute

// registryConfigKeys are the configs of the registry the verdict reads:
// the policy decides, the retentions say when records go.
var registryConfigKeys = []string{"cleanup.policy", "retention.ms", "retention.bytes"}

// judgeRegistry reads the registry's configs and keeps the verdict in the
// table, unless they were read within registryConfigsEvery of the same
// registry. topicID is the registry's (a new one is read at once); the
// zero ID, from the probe or a broker without topic IDs, means whichever
// exists now. A reading that fails keeps the last verdict: a broker slow
// to answer it says nothing about the registry, and reads and writes of
// records go on either way. A reading the brokers refuse is a verdict of
// its own (RegistryConfigsUnreadable), which the first reading they
// answer replaces.
func (b *Backend) judgeRegistry(ctx context.Context, topicID [16]byte) {
	t := b.owners
	now := b.observed.now()
	t.mu.Lock()
	due := t.configsAt.IsZero() || now.Sub(t.configsAt) >= registryConfigsEvery ||
		topicID != ([16]byte{}) && topicID != t.configsID
	if due {
		// Taken before the request, so that callers meanwhile (a probe
		// during a catch-up) do not ask again.
		t.configsAt = now
		if topicID != ([16]byte{}) {
			t.configsID = topicID
		}
	}
	t.mu.Unlock()
	if !due {
		return
	}
	unsound, err := b.registryUnsound(ctx)
	if err != nil {
		// A refusal is the brokers' answer, not a slow broker's: it
		// stands until the operator grants the right.
		var denied *registryConfigsDenied
		if !errors.As(err, &denied) {
			return
		}
		unsound = denied.warning()
	}
	t.mu.Lock()
	// A reading of a registry found created again since keeps the newer
	// one's verdict.
	if topicID == ([16]byte{}) || topicID == t.configsID {
		t.unsound = unsound
	}
	t.mu.Unlock()
}

// registryUnsound reads the registry's configs (one DescribeConfigs) and
// says why they let the brokers delete ownership records (a warning of
// reason RegistryNotCompacted), the zero Warning when they do not or when
// the registry does not exist (createRegistry makes it compacted). The
// brokers refusing the backend's principal the read is a
// *registryConfigsDenied.
func (b *Backend) registryUnsound(ctx context.Context) (drivers.Warning, error) {
	topic := b.cfg.registryTopic()
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.ConfigNames = kmsg.ConfigResourceTypeTopic, topic, registryConfigKeys
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, b.kgo)
	if err != nil {
		return drivers.Warning{}, b.classify(fmt.Errorf("owner registry %s: describe configs: %w", topic, err))
	}
	if len(resp.Resources) != 1 {
		return drivers.Warning{}, fmt.Errorf("owner registry %s: describe configs: the broker's answer does not mention the topic", topic)
	}
	r := resp.Resources[0]
	switch err := kerr.ErrorForCode(r.ErrorCode); {
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		return drivers.Warning{}, nil
	case errors.Is(err, kerr.TopicAuthorizationFailed):
		return drivers.Warning{}, &registryConfigsDenied{topic: topic, principal: b.cfg.saslPrincipal(), err: b.classify(fmt.Errorf("owner registry %s: describe configs: %w %s", topic, err, unptr(r.ErrorMessage)))}
	case err != nil:
		return drivers.Warning{}, b.classify(fmt.Errorf("owner registry %s: describe configs: %w %s", topic, err, unptr(r.ErrorMessage)))
	}
	configs := map[string]string{}
	for _, c := range r.Configs {
		configs[c.Name] = unptr(c.Value)
	}
	policy, ok := configs["cleanup.policy"]
	if !ok {
		return drivers.Warning{}, fmt.Errorf("owner registry %s: describe configs: the broker's answer has no cleanup.policy", topic)
	}
	if why := unsoundMessage(topic, policy, configs); why != "" {
		return drivers.Warning{Reason: ReasonRegistryNotCompacted, Message: why}, nil
	}
	return drivers.Warning{}, nil
}

// registryConfigsDenied is the brokers refusing the backend's principal
// the read of the registry's configs.
type registryConfigsDenied struct {
	// topic is the registry's; principal the backend's SASL principal
	// (User:NAME), "" when it logs in otherwise (mTLS, whose principal
	// the broker's mapping makes).
	topic, principal string
	err              error
}

func (e *registryConfigsDenied) Error() string { return e.err.Error() }
func (e *registryConfigsDenied) Unwrap() error { return e.err }

// warning is the probe's warning about it, reason
// RegistryConfigsUnreadable: what cannot be told, what it risks, and the
// right that lets the backend tell.
func (e *registryConfigsDenied) warning() drivers.Warning {
	principal := e.principal
	if principal == "" {
		principal = "User:PRINCIPAL"
	}
	return drivers.Warning{Reason: ReasonRegistryConfigsUnreadable, Message: fmt.Sprintf(
		"owner registry %s: the brokers refuse the backend's principal the read of its configs (DescribeConfigs: %v), "+
			"so whether they keep its ownership records cannot be told: with a cleanup.policy other than compact they may delete them by age or size, "+
			"and another installation then sees the topics they name as unowned and may take them over. "+
			"The backend serves its topics and writes its records meanwhile: "+
			"allow the backend's principal DescribeConfigs on the topic, e.g. kafka-acls --add --allow-principal %s --operation DescribeConfigs --topic %s",
		e.topic, kerr.TopicAuthorizationFailed.Message, principal, e.topic)}
}

// unsoundMessage is the probe's warning about a registry whose
// cleanup.policy is policy, "" when that is compact alone. It names the config, what it
// risks and the command that fixes it, which the operator runs: the
// backend does not.
func unsoundMessage(topic, policy string, configs map[string]string) string {
	if compactOnly(policy) {
		return ""
	}
	var retention []string
	for _, k := range registryConfigKeys[1:] {
		if v, ok := configs[k]; ok {
			retention = append(retention, k+"="+v)
		}
	}
	setting := "cleanup.policy=" + policy
	if len(retention) > 0 {
		setting += " (" + strings.Join(retention, ", ") + ")"
	}
	return fmt.Sprintf("owner registry %s has %s, not compact: the brokers may delete its ownership records by age or size, "+
		"and another installation then sees the topics they name as unowned and may take them over. "+
		"The backend serves its topics and writes its records meanwhile, and does not change the registry's config itself: "+
		"make it compacted with kafka-configs --alter --entity-type topics --entity-name %s --add-config cleanup.policy=compact",
		topic, setting, topic)
}

// compactOnly reports whether a cleanup.policy value is compact and
// nothing else (Kafka lists policies comma-separated, in any order).
func compactOnly(policy string) bool {
	for p := range strings.SplitSeq(policy, ",") {
		if !strings.EqualFold(strings.TrimSpace(p), "compact") {
			return false
		}
	}
	return true
}

// registryVerdict is the last verdict on the registry's configs, the
// zero Warning when they keep its records (or were not read yet).
func (b *Backend) registryVerdict() drivers.Warning {
	t := b.owners
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.unsound
}
