package kadm

import (
	"context"
	"errors"
)

// Probe implements drivers.Prober: one Metadata request for no topic
// (the brokers and the controller), sent to the cluster rather than
// answered from kgo's metadata cache, within the backend's request
// timeout. A refused SASL login surfaces as *drivers.AccessDeniedError.
//
// A cluster that answers fails the probe still when its owner registry
// is not compacted (registryconfigs.go): its configs are read here when
// the last reading is older than registryConfigsEvery (one
// DescribeConfigs), else the verdict the backend holds is reported.
// drivers.Prober carries no warning, and the probe's error is what an
// operator sees of a backend (the BucketyBackend's Ready, reason
// ProbeFailed, with the message; buckety_backend_up). The error is
// neither unavailable nor access denied, and nothing else stops on it:
// no Buckety waits on the probe, and the backend reads and writes its
// topics and owner records as before.
func (b *Backend) Probe(ctx context.Context) error {
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	if _, err := b.adm.BrokerMetadata(ctx); err != nil {
		return b.classify(err)
	}
	b.judgeRegistry(ctx, [16]byte{})
	if why := b.registryVerdict(); why != "" {
		return errors.New(why)
	}
	return nil
}

// Implementation implements drivers.Implementer: kadm speaks the Kafka
// protocol, whatever broker serves it (Apache Kafka, Redpanda).
func (b *Backend) Implementation() string { return "kafka" }
