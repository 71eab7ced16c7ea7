package kadm

import (
	"context"

	"github.com/Yolean/buckety-controller/drivers"
)

var (
	_ drivers.Prober = (*Backend)(nil)
	_ drivers.Warner = (*Backend)(nil)
)

// ReasonRegistryNotCompacted is the warning of a backend whose owner
// registry is not compacted (ProbeWarnings): the BucketyBackend's Degraded
// reason.
const ReasonRegistryNotCompacted = "RegistryNotCompacted"

// ReasonRegistryConfigsUnreadable is the warning of a backend whose
// principal the brokers refuse the read of the owner registry's configs
// (DescribeConfigs on the topic), so that whether the registry keeps its
// records cannot be told.
const ReasonRegistryConfigsUnreadable = "RegistryConfigsUnreadable"

// Probe implements drivers.Prober: one Metadata request for no topic
// (the brokers and the controller), sent to the cluster rather than
// answered from kgo's metadata cache, within the backend's request
// timeout. A refused SASL login surfaces as *drivers.AccessDeniedError.
//
// A cluster that answers has its owner registry judged too
// (registryconfigs.go): its configs are read here when the last reading
// is older than registryConfigsEvery (one DescribeConfigs), else the
// verdict the backend holds stands. A registry that is not compacted does
// not fail the probe: the backend serves its topics and reads and writes
// its owner records as before, so it is Ready, and what else the view
// asks of it (Issuing) is still asked. ProbeWarnings reports it instead.
// A reading that fails does not fail the probe either: the cluster
// answered, and the last verdict stands.
func (b *Backend) Probe(ctx context.Context) error {
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	m, err := b.adm.BrokerMetadata(ctx)
	if err != nil {
		return b.classify(err)
	}
	b.judgeRegistry(ctx, [16]byte{})
	b.judgeOpenACLs(ctx, m.Brokers.NodeIDs())
	return nil
}

// ProbeWarnings implements drivers.Warner: a registry whose cleanup.policy
// lets the brokers delete ownership records is a warning, reason
// RegistryNotCompacted, whose message names the topic, the setting and
// the kafka-configs command that fixes it; one whose configs the brokers
// refuse the backend's principal is a warning too, reason
// RegistryConfigsUnreadable, naming the right to grant; brokers that let
// every user do what no ACL names, where the backend issues a user per
// access, are a warning of reason BrokersAllowWithoutACLs (openacls.go).
// It is the verdict
// the backend holds: the last Probe's, or a newer one from a catch-up that
// found the registry created again since.
func (b *Backend) ProbeWarnings() []drivers.Warning {
	var ws []drivers.Warning
	for _, w := range []drivers.Warning{b.registryVerdict(), b.openWarning()} {
		if w.Reason != "" {
			ws = append(ws, w)
		}
	}
	return ws
}

// Implementation implements drivers.Implementer: kadm speaks the Kafka
// protocol, whatever broker serves it (Apache Kafka, Redpanda).
func (b *Backend) Implementation() string { return "kafka" }
