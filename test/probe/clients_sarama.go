package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// saramaConfig is the sarama configuration a workload writes from the
// Secret's keys, and the brokers to give it. What sarama needs beyond the
// keys, which a workload author must know too:
//
//   - Net.SASL.Handshake and Net.SASL.Version = SASLHandshakeV1: v1 frames
//     the exchange in SaslAuthenticate requests, as every Kafka since 1.0
//     expects; the local broker (kfake) answers SaslHandshake v1 only.
//   - SCRAM needs a SCRAMClientGeneratorFunc: sarama ships no SCRAM client
//     (its example uses github.com/xdg-go/scram); here franz-go's, which
//     this module already has (saramaSCRAM).
//   - TLS: Net.TLS.Enable with the CA of ssl.ca.pem in RootCAs.
func saramaConfig(getenv func(string) string) (*sarama.Config, []string, error) {
	conn, err := kafkaConnFrom(getenv)
	if err != nil {
		return nil, nil, err
	}
	cfg := sarama.NewConfig()
	cfg.ClientID = "buckety-probe-sarama"
	cfg.Net.DialTimeout, cfg.Net.ReadTimeout, cfg.Net.WriteTimeout = 10*time.Second, 10*time.Second, 10*time.Second
	if conn.tls != nil {
		cfg.Net.TLS.Enable = true
		cfg.Net.TLS.Config = conn.tls
	}
	if conn.mechanism != "" {
		cfg.Net.SASL.Enable = true
		cfg.Net.SASL.Handshake = true
		cfg.Net.SASL.Version = sarama.SASLHandshakeV1
		cfg.Net.SASL.User, cfg.Net.SASL.Password = conn.user, conn.password
		switch conn.mechanism {
		case "PLAIN":
			cfg.Net.SASL.Mechanism = sarama.SASLTypePlaintext
		case "SCRAM-SHA-256":
			cfg.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA256
			cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &saramaSCRAM{sha512: false} }
		case "SCRAM-SHA-512":
			cfg.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
			cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &saramaSCRAM{sha512: true} }
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, nil, fmt.Errorf("sarama config: %w", err)
	}
	return cfg, conn.brokers, nil
}

// saramaSCRAM is a sarama.SCRAMClient over franz-go's SCRAM client: sarama
// calls Begin, then Step("") for the client-first message, then Step with
// each server message until Done.
type saramaSCRAM struct {
	sha512 bool
	mech   sasl.Mechanism
	sess   sasl.Session
	done   bool
}

func (s *saramaSCRAM) Begin(user, password, authzID string) error {
	a := scram.Auth{Zid: authzID, User: user, Pass: password}
	if s.sha512 {
		s.mech = a.AsSha512Mechanism()
	} else {
		s.mech = a.AsSha256Mechanism()
	}
	return nil
}

func (s *saramaSCRAM) Step(challenge string) (string, error) {
	if s.mech == nil {
		return "", errors.New("SCRAM: Step before Begin")
	}
	if s.sess == nil {
		sess, first, err := s.mech.Authenticate(context.Background(), "")
		s.sess = sess
		return string(first), err
	}
	done, msg, err := s.sess.Challenge([]byte(challenge))
	s.done = done
	return string(msg), err
}

func (s *saramaSCRAM) Done() bool { return s.done }

// saramaClient is github.com/IBM/sarama, each operation a new client from
// the Secret, as a workload's producer or consumer group is.
type saramaClient struct {
	brokers []string
	getenv  func(string) string
}

func newSaramaClient(getenv func(string) string) (kafkaClient, error) {
	_, brokers, err := saramaConfig(getenv)
	if os.Getenv("PROBE_DEBUG") == "true" {
		sarama.Logger = log.New(os.Stderr, "sarama: ", log.LstdFlags)
	}
	return &saramaClient{brokers: brokers, getenv: getenv}, err
}

// config is a fresh configuration from the Secret (validated once by
// newSaramaClient): sarama clients must not share one.
func (s *saramaClient) config() *sarama.Config {
	cfg, _, err := saramaConfig(s.getenv)
	if err != nil {
		panic(err)
	}
	return cfg
}

func (s *saramaClient) produce(ctx context.Context, topic, value string, refusal bool) error {
	cfg := s.config()
	cfg.Producer.Return.Successes = true // a SyncProducer needs it
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	if refusal {
		cfg.Producer.Retry.Max, cfg.Metadata.Retry.Max = 0, 0
	}
	return within(ctx, "sarama produce", func() error {
		p, err := sarama.NewSyncProducer(s.brokers, cfg)
		if err != nil {
			return err
		}
		_, _, err = p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(value)})
		return errors.Join(err, p.Close())
	})
}

func (s *saramaClient) transact(ctx context.Context, topic, txID, value string) error {
	cfg := s.config()
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Idempotent = true
	cfg.Producer.Transaction.ID = txID
	cfg.Net.MaxOpenRequests = 1 // sarama's rule for an idempotent producer
	return within(ctx, "sarama transaction", func() error {
		p, err := sarama.NewSyncProducer(s.brokers, cfg)
		if err != nil {
			return err
		}
		defer func() { _ = p.Close() }()
		if err := p.BeginTxn(); err != nil {
			return err
		}
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(value)}); err != nil {
			return errors.Join(err, p.AbortTxn())
		}
		return p.CommitTxn()
	})
}

func (s *saramaClient) consume(ctx context.Context, r read) error {
	cfg := s.config()
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	if r.readCommitted {
		cfg.Consumer.IsolationLevel = sarama.ReadCommitted
	}
	if r.refusal {
		// sarama retries a refused group's FindCoordinator, each time
		// with its metadata retries: about 15 s with its defaults.
		cfg.Metadata.Retry.Max, cfg.Consumer.Group.Rebalance.Retry.Max = 0, 0
	}
	if r.group == "" {
		return s.readPartitions(ctx, cfg, r.topic, r.value)
	}
	cfg.Consumer.Offsets.AutoCommit.Enable = r.commit
	topic, group := r.topic, r.group
	return within(ctx, "sarama consumer group", func() error {
		g, err := sarama.NewConsumerGroup(s.brokers, group, cfg)
		if err != nil {
			return err
		}
		// Close leaves the group and, when autocommitting, commits what
		// was marked.
		defer func() { _ = g.Close() }()
		h := &saramaHandler{value: r.value, commit: r.commit, found: make(chan struct{})}
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		ended := make(chan error, 1)
		go func() {
			for {
				// Consume returns at each rebalance; a consumer loops.
				if err := g.Consume(cctx, []string{topic}, h); err != nil {
					ended <- err
					return
				}
				if cctx.Err() != nil {
					ended <- nil
					return
				}
			}
		}()
		select {
		case <-h.found:
			cancel()
			return <-ended
		case err := <-ended:
			if err == nil {
				err = ctx.Err()
			}
			return fmt.Errorf("consume topic %s in group %s: %w", topic, group, err)
		case err := <-g.Errors():
			return fmt.Errorf("consume topic %s in group %s: %w", topic, group, err)
		case <-ctx.Done():
			return notRead(topic, r.value)
		}
	})
}

// saramaHandler consumes until it reads value (any record when ""),
// marking what it read and committing it when commit.
type saramaHandler struct {
	value  string
	commit bool
	found  chan struct{}
	once   sync.Once
}

func (h *saramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *saramaHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		select {
		case m, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			if h.commit {
				sess.MarkMessage(m, "")
			}
			if h.value == "" || string(m.Value) == h.value {
				if h.commit {
					sess.Commit()
				}
				h.once.Do(func() { close(h.found) })
			}
		case <-sess.Context().Done():
			return nil
		}
	}
}

// readPartitions reads every partition of topic from the oldest offset,
// without a group, until it reads value (any record when "").
func (s *saramaClient) readPartitions(ctx context.Context, cfg *sarama.Config, topic, value string) error {
	return within(ctx, "sarama consumer", func() error {
		c, err := sarama.NewConsumer(s.brokers, cfg)
		if err != nil {
			return err
		}
		defer func() { _ = c.Close() }()
		parts, err := c.Partitions(topic)
		if err != nil {
			return fmt.Errorf("partitions of topic %s: %w", topic, err)
		}
		found, errs, done := make(chan struct{}), make(chan error, len(parts)), make(chan struct{})
		defer close(done)
		var once sync.Once
		for _, p := range parts {
			pc, err := c.ConsumePartition(topic, p, sarama.OffsetOldest)
			if err != nil {
				return fmt.Errorf("consume topic %s partition %d: %w", topic, p, err)
			}
			defer pc.AsyncClose()
			go func() {
				for {
					select {
					case m, ok := <-pc.Messages():
						if !ok {
							return
						}
						if value == "" || string(m.Value) == value {
							once.Do(func() { close(found) })
						}
					case err, ok := <-pc.Errors():
						if !ok {
							return
						}
						select {
						case errs <- err:
						default:
						}
					case <-done:
						return
					}
				}
			}()
		}
		select {
		case <-found:
			return nil
		case err := <-errs:
			return fmt.Errorf("consume topic %s: %w", topic, err)
		case <-ctx.Done():
			return notRead(topic, value)
		}
	})
}

// notRead is a consumer's failure to read in time.
func notRead(topic, value string) error {
	if value == "" {
		return fmt.Errorf("consume topic %s: no record read in time (a reader needs a writer to have produced one)", topic)
	}
	return fmt.Errorf("consume topic %s: record %q not read back in time", topic, value)
}

func (*saramaClient) refused(err error) error {
	switch {
	case err == nil:
		return errors.New("want it refused (the role does not allow it), but it succeeded")
	case errors.Is(err, sarama.ErrTopicAuthorizationFailed), errors.Is(err, sarama.ErrGroupAuthorizationFailed),
		errors.Is(err, sarama.ErrClusterAuthorizationFailed), errors.Is(err, sarama.ErrTransactionalIDAuthorizationFailed):
		return nil
	}
	return fmt.Errorf("want an authorization refusal, got %w", err)
}
