package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/Yolean/buckety-controller/test/kafka"
)

func TestAnswersAsCaptured(t *testing.T) {
	const cluster, node = "kfake", int32(1)
	req := func(version int16, mutate func(*kmsg.ApiVersionsRequest)) *kmsg.ApiVersionsRequest {
		r := kmsg.NewPtrApiVersionsRequest()
		r.Version, r.ClientSoftwareName, r.ClientSoftwareVersion = version, "librdkafka", "2.0.2"
		if mutate != nil {
			mutate(r)
		}
		return r
	}
	other := "other"
	ours := cluster
	for _, tc := range []struct {
		name string
		req  *kmsg.ApiVersionsRequest
		want bool
	}{
		{"v0", req(0, nil), true},
		{"v3", req(3, nil), true},
		{"the captured version", req(5, nil), true},
		{"above the captured version", req(6, nil), false},
		{"v0 ignores software fields", req(0, func(r *kmsg.ApiVersionsRequest) { r.ClientSoftwareName = "" }), true},
		{"v3 empty software name", req(3, func(r *kmsg.ApiVersionsRequest) { r.ClientSoftwareName = "" }), false},
		{"v3 software version ends in a dot", req(3, func(r *kmsg.ApiVersionsRequest) { r.ClientSoftwareVersion = "2.0." }), false},
		{"v3 software name with a space", req(3, func(r *kmsg.ApiVersionsRequest) { r.ClientSoftwareName = "my client" }), false},
		{"v3 software version with dashes and dots", req(3, func(r *kmsg.ApiVersionsRequest) { r.ClientSoftwareVersion = "1.7.0-rdkafka-2.0.2" }), true},
		{"v5 naming this cluster and node", req(5, func(r *kmsg.ApiVersionsRequest) { r.ClusterID, r.NodeID = &ours, node }), true},
		{"v5 naming another cluster", req(5, func(r *kmsg.ApiVersionsRequest) { r.ClusterID, r.NodeID = &other, node }), false},
		{"v5 naming another node", req(5, func(r *kmsg.ApiVersionsRequest) { r.ClusterID, r.NodeID = &ours, 2 }), false},
		{"v5 naming a cluster without a node", req(5, func(r *kmsg.ApiVersionsRequest) { r.ClusterID = &ours }), false},
		{"v5 naming a node without a cluster", req(5, func(r *kmsg.ApiVersionsRequest) { r.NodeID = node }), false},
		{"v4 fields of v5 are not read", req(4, func(r *kmsg.ApiVersionsRequest) { r.ClusterID, r.NodeID = &other, 7 }), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := answersAsCaptured(tc.req, 5, cluster, node); got != tc.want {
				t.Errorf("want %v, got %v", tc.want, got)
			}
		})
	}
}

// TestApiVersionsOnTheWire asks a broker process for its ApiVersions at
// every version, raw, and checks that SaslHandshake is advertised from v0
// wherever kfake would answer the same, that kfake still answers where it
// would not, that the request counter sees every ApiVersions, and that a
// SaslHandshake v0 is still refused.
func TestApiVersionsOnTheWire(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: runs the broker; run without -short (make test)")
	}
	for _, kafka26 := range []bool{false, true} {
		t.Run(fmt.Sprintf("kafka-2.6=%v", kafka26), func(t *testing.T) {
			b := kafka.Start(t, kafka.Options{SASL: []string{"SCRAM-SHA-512:admin:secret"}, CountRequests: true, Kafka26: kafka26})
			addr := b.Addrs[0]
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...), kgo.SASL(scram.Auth{User: "admin", Pass: "secret"}.AsSha512Mechanism()))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			meta, err := kadm.NewClient(cl).BrokerMetadata(ctx)
			if err != nil {
				t.Fatal(err)
			}

			maxVersion := int16(5)
			if kafka26 {
				maxVersion = 3
			}
			before := requests(t, b)["ApiVersions"]
			var sent int64
			var keys int
			for v := int16(0); v <= maxVersion; v++ {
				resp := askApiVersions(t, addr, v, nil)
				sent++
				if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
					t.Fatalf("v%d: want no error, got %v", v, err)
				}
				if got := keyRange(resp, kmsg.SASLHandshake); got != [2]int16{0, 1} {
					t.Errorf("v%d: want SaslHandshake advertised as [0 1], got %v", v, got)
				}
				if got := keyRange(resp, kmsg.ApiVersions); got != [2]int16{0, maxVersion} {
					t.Errorf("v%d: want ApiVersions advertised as [0 %d], got %v", v, maxVersion, got)
				}
				if keys == 0 {
					keys = len(resp.ApiKeys)
				} else if len(resp.ApiKeys) != keys {
					t.Errorf("v%d: want %d API keys as at v0, got %d", v, keys, len(resp.ApiKeys))
				}
			}
			// Where kfake answers otherwise, it answers.
			resp := askApiVersions(t, addr, 3, func(r *kmsg.ApiVersionsRequest) { r.ClientSoftwareName = "not valid" })
			sent++
			if !errors.Is(kerr.ErrorForCode(resp.ErrorCode), kerr.InvalidRequest) {
				t.Errorf("v3 with an invalid software name: want INVALID_REQUEST (kfake's answer), got %v", kerr.ErrorForCode(resp.ErrorCode))
			}
			if !kafka26 {
				other := "another-cluster"
				resp = askApiVersions(t, addr, 5, func(r *kmsg.ApiVersionsRequest) { r.ClusterID, r.NodeID = &other, 0 })
				sent++
				if !errors.Is(kerr.ErrorForCode(resp.ErrorCode), kerr.RebootstrapRequired) {
					t.Errorf("v5 naming another cluster: want REBOOTSTRAP_REQUIRED (kfake's answer), got %v", kerr.ErrorForCode(resp.ErrorCode))
				}
				ours := meta.Cluster
				resp = askApiVersions(t, addr, 5, func(r *kmsg.ApiVersionsRequest) { r.ClusterID, r.NodeID = &ours, meta.Brokers[0].NodeID })
				sent++
				if got := keyRange(resp, kmsg.SASLHandshake); resp.ErrorCode != 0 || got != [2]int16{0, 1} {
					t.Errorf("v5 naming this cluster and broker: want SaslHandshake advertised as [0 1], got error %v, %v", kerr.ErrorForCode(resp.ErrorCode), got)
				}
			}
			// Every ApiVersions is counted, the ones the patch answers too.
			if got := requests(t, b)["ApiVersions"] - before; got != sent {
				t.Errorf("request counts: want %d more ApiVersions, got %d", sent, got)
			}

			// SaslHandshake v0 stays unsupported: kfake closes the connection.
			hs := kmsg.NewPtrSASLHandshakeRequest()
			hs.Version, hs.Mechanism = 0, "SCRAM-SHA-512"
			if err := roundTrip(addr, hs, hs.ResponseKind()); !errors.Is(err, io.EOF) {
				t.Errorf("SaslHandshake v0: want the connection closed (EOF), got %v", err)
			}
		})
	}
}

// TestApiVersionsAfterUpdateFeatures changes a finalized feature's level
// (kfake finalizes every feature at its newest level, so a downgrade) and
// checks that ApiVersions reports it, with SaslHandshake still from v0: the
// broker captures the answer again after UpdateFeatures.
func TestApiVersionsAfterUpdateFeatures(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: runs the broker; run without -short (make test)")
	}
	b := kafka.Start(t, kafka.Options{})
	addr := b.Addrs[0]
	resp := askApiVersions(t, addr, 3, nil)
	finalized := map[string]int16{}
	for _, f := range resp.FinalizedFeatures {
		finalized[f.Name] = f.MaxVersionLevel
	}
	var name string
	var level int16
	for _, f := range resp.SupportedFeatures {
		if l := finalized[f.Name] - 1; l >= max(f.MinVersion, 1) {
			name, level = f.Name, l
			break
		}
	}
	if name == "" {
		t.Fatalf("no feature to downgrade: supported %v, finalized %v", resp.SupportedFeatures, finalized)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := kmsg.NewPtrUpdateFeaturesRequest()
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel = name, level
	u.UpgradeType, u.AllowDowngrade = 2, true // a safe downgrade (v1+; v0's flag)
	req.FeatureUpdates = append(req.FeatureUpdates, u)
	uresp, err := req.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(uresp.ErrorCode)
		for _, r := range uresp.Results {
			err = errors.Join(err, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	if err != nil {
		t.Fatalf("UpdateFeatures %s to %d: %v", name, level, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp = askApiVersions(t, addr, 3, nil)
		var got int16
		for _, f := range resp.FinalizedFeatures {
			if f.Name == name {
				got = f.MaxVersionLevel
			}
		}
		hs := keyRange(resp, kmsg.SASLHandshake)
		if got == level && hs == [2]int16{0, 1} {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after UpdateFeatures: want %s finalized at %d and SaslHandshake [0 1], got %d and %v", name, level, got, hs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func keyRange(resp *kmsg.ApiVersionsResponse, key kmsg.Key) [2]int16 {
	for _, k := range resp.ApiKeys {
		if k.ApiKey == int16(key) {
			return [2]int16{k.MinVersion, k.MaxVersion}
		}
	}
	return [2]int16{-1, -1}
}

func requests(t *testing.T, b *kafka.Broker) map[string]int64 {
	t.Helper()
	n, err := b.Requests()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// askApiVersions sends one ApiVersions request of version v, as a client
// names itself (mutate changes it), on a new connection.
func askApiVersions(t *testing.T, addr string, v int16, mutate func(*kmsg.ApiVersionsRequest)) *kmsg.ApiVersionsResponse {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version, req.ClientSoftwareName, req.ClientSoftwareVersion = v, "buckety-test", "1.0"
	if mutate != nil {
		mutate(req)
	}
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if err := roundTrip(addr, req, resp); err != nil {
		t.Fatalf("ApiVersions v%d: %v", v, err)
	}
	return resp
}

// roundTrip writes req on a new connection to addr and reads resp, as
// Kafka frames them.
func roundTrip(addr string, req kmsg.Request, resp kmsg.Response) error {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return err
	}
	const corr = 7
	if _, err := conn.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("buckety-test")).AppendRequest(nil, req, corr)); err != nil {
		return err
	}
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		return err
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(conn, body); err != nil {
		return err
	}
	if len(body) < 4 || int32(binary.BigEndian.Uint32(body)) != corr {
		return fmt.Errorf("want correlation ID %d in a response of %d bytes", corr, len(body))
	}
	body = body[4:]
	resp.SetVersion(req.GetVersion())
	// ApiVersions answers with a v0 header at every version (KIP-511).
	if resp.IsFlexible() && resp.Key() != int16(kmsg.ApiVersions) {
		if len(body) == 0 || body[0] != 0 {
			return errors.New("want an empty tagged-field section in the response header")
		}
		body = body[1:]
	}
	return resp.ReadFrom(body)
}
