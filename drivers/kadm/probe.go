package kadm

import (
	"context"
)

// Probe implements drivers.Prober: one Metadata request for no topic
// (the brokers and the controller), sent to the cluster rather than
// answered from kgo's metadata cache, within the backend's request
// timeout. A refused SASL login surfaces as *drivers.AccessDeniedError.
func (b *Backend) Probe(ctx context.Context) error {
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	if _, err := b.adm.BrokerMetadata(ctx); err != nil {
		return b.classify(err)
	}
	return nil
}

// Implementation implements drivers.Implementer: kadm speaks the Kafka
// protocol, whatever broker serves it (Apache Kafka, Redpanda).
func (b *Backend) Implementation() string { return "kafka" }
