package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Why the broker rewrites kfake's ApiVersions answer.
//
// librdkafka (kcat, confluent-kafka for Python, Go and .NET, node-rdkafka)
// decides from a broker's ApiVersions whether it may use the SASL handshake
// of KIP-43: its feature table (rdkafka_feature.c) enables SASL_HANDSHAKE
// only when the advertised SaslHandshake range includes version 0, and
// without that feature every mechanism but GSSAPI fails before a byte of SASL
// is sent, with "SASL Handshake not supported by broker". kfake registers
// SaslHandshake as versions 1..1 (17_sasl_handshake.go), because it does not
// implement v0's unframed SASL tokens after the handshake, so no librdkafka
// client could log in to it. Kafka advertises 0..1. Seeing 0..1, librdkafka
// sends v1 and then SaslAuthenticate, both of which kfake handles, so
// advertising v0 is all it takes.
//
// What stays different from Kafka: a client that really sends SaslHandshake
// v0 (Sarama with Net.SASL.Version = SASLHandshakeV0, the default of older
// Sarama releases; IBM/sarama now defaults to v1) is refused: kfake answers
// nothing and closes the connection ("SaslHandshake version 0 below min
// supported version 1"). docs/development.md lists the other differences
// clients meet.

// apiVersions is the cluster's own ApiVersions answer, as captured.
type apiVersions struct {
	resp *kmsg.ApiVersionsResponse
	// clusterID is the cluster's ID, which ApiVersions v5+ requests may
	// name (KIP-1242).
	clusterID string
}

// captureApiVersions asks the cluster, through its own listener, for its
// ApiVersions answer at the highest version it serves, and for its cluster
// ID. kfake builds that answer in an unexported handler, so this is the way
// to learn it exactly, capped versions (--kafka-2.6) and features included.
func captureApiVersions(c *kfake.Cluster, dial []kgo.Opt) (*apiVersions, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}, dial...)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		return nil, fmt.Errorf("ApiVersions of the cluster itself: %w", err)
	}
	meta := kmsg.NewPtrMetadataRequest()
	meta.Topics = []kmsg.MetadataRequestTopic{} // none: only the cluster
	mresp, err := meta.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("the cluster's own ID: %w", err)
	}
	if mresp.ClusterID == nil {
		return nil, errors.New("the cluster's own ID: Metadata has none")
	}
	return &apiVersions{resp: resp, clusterID: *mresp.ClusterID}, nil
}

// withSASLHandshakeV0 returns a copy of a advertising SaslHandshake from
// version 0.
func (a *apiVersions) withSASLHandshakeV0() (*apiVersions, error) {
	out := cloneApiVersions(a.resp)
	for i := range out.ApiKeys {
		if out.ApiKeys[i].ApiKey == int16(kmsg.SASLHandshake) {
			out.ApiKeys[i].MinVersion = 0
			return &apiVersions{resp: out, clusterID: a.clusterID}, nil
		}
	}
	return nil, errors.New("the cluster does not advertise SaslHandshake")
}

func cloneApiVersions(resp *kmsg.ApiVersionsResponse) *kmsg.ApiVersionsResponse {
	out := *resp
	out.ApiKeys = slices.Clone(resp.ApiKeys)
	out.SupportedFeatures = slices.Clone(resp.SupportedFeatures)
	out.FinalizedFeatures = slices.Clone(resp.FinalizedFeatures)
	return &out
}

// answersAsCaptured reports whether kfake answers req, received by broker
// node, with the content of the captured answer (only the version
// differs), mirroring kfake's handleApiVersions (18_api_versions.go). It
// does not for a version above the captured one (kfake answers v0 with
// UNSUPPORTED_VERSION, or a version the capture did not reach), for v3+
// with a client software name or version Kafka rejects (INVALID_REQUEST),
// and for v5+ naming a cluster or node other than this one, or only one of
// the two (KIP-1242: REBOOTSTRAP_REQUIRED, INVALID_REQUEST).
func answersAsCaptured(req *kmsg.ApiVersionsRequest, captured int16, clusterID string, node int32) bool {
	switch {
	case req.Version > captured:
		return false
	case req.Version >= 3 && (!validSoftwareNameVersion(req.ClientSoftwareName) || !validSoftwareNameVersion(req.ClientSoftwareVersion)):
		return false
	case req.Version >= 5 && (req.ClusterID != nil) != (req.NodeID != -1):
		return false
	case req.Version >= 5 && req.ClusterID != nil && (*req.ClusterID != clusterID || req.NodeID != node):
		return false
	}
	return true
}

// validSoftwareNameVersion is kfake's (18_api_versions.go), itself Kafka's
// pattern for ClientSoftwareName and ClientSoftwareVersion:
// [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?
func validSoftwareNameVersion(s string) bool {
	alnum := func(c byte) bool {
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	if len(s) == 0 || !alnum(s[0]) || !alnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; !alnum(c) && c != '-' && c != '.' {
			return false
		}
	}
	return true
}

// handshakeV0 answers ApiVersions with the captured answer, SaslHandshake
// from v0, at the request's version.
type handshakeV0 struct {
	c    *kfake.Cluster
	dial []kgo.Opt

	mu sync.Mutex
	// patched is the answer (nil while a recapture runs: requests pass
	// through to kfake meanwhile); gen counts the captures started.
	patched *apiVersions
	gen     int
}

// advertiseSASLHandshakeV0 installs the ApiVersions control on c, from the
// answer captureApiVersions got. It must run before any other control that
// should see ApiVersions: kfake runs the controls of a key in the order they
// were added and stops at the first that handles a request.
//
// The finalized features in the answer change when a client updates them
// (UpdateFeatures), so an UpdateFeatures request makes the broker capture
// the answer again, after kfake has handled the update; until then
// ApiVersions passes through to kfake unchanged.
func advertiseSASLHandshakeV0(c *kfake.Cluster, captured *apiVersions, dial []kgo.Opt) error {
	patched, err := captured.withSASLHandshakeV0()
	if err != nil {
		return err
	}
	h := &handshakeV0{c: c, dial: dial, patched: patched}
	c.ControlKey(int16(kmsg.ApiVersions), h.answer)
	c.ControlKey(int16(kmsg.UpdateFeatures), h.featuresUpdated)
	return nil
}

func (h *handshakeV0) answer(req kmsg.Request) (kmsg.Response, error, bool) {
	h.c.KeepControl()
	h.mu.Lock()
	patched := h.patched
	h.mu.Unlock()
	r := req.(*kmsg.ApiVersionsRequest)
	if patched == nil || !answersAsCaptured(r, patched.resp.Version, patched.clusterID, h.c.CurrentNode()) {
		return nil, nil, false // kfake answers
	}
	resp := cloneApiVersions(patched.resp)
	resp.Version = r.Version
	return resp, nil, true
}

// featuresUpdated observes an UpdateFeatures request, which kfake handles
// once this returns, and starts capturing the answer again. The capture's
// own ApiVersions request reaches the cluster after the update: kfake
// handles one request at a time, and this one is still in progress.
func (h *handshakeV0) featuresUpdated(kmsg.Request) (kmsg.Response, error, bool) {
	h.c.KeepControl()
	h.mu.Lock()
	h.gen++
	gen := h.gen
	h.patched = nil
	h.mu.Unlock()
	go func() {
		captured, err := captureApiVersions(h.c, h.dial)
		var patched *apiVersions
		if err == nil {
			patched, err = captured.withSASLHandshakeV0()
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "broker: after UpdateFeatures, ApiVersions stays kfake's own (SaslHandshake v1 only, so librdkafka clients cannot log in): %v\n", err)
			return
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.gen == gen {
			h.patched = patched
		}
	}()
	return nil, nil, false // observe only: the cluster handles it
}

// selfTLS is the TLS of the broker's connections to its own listener
// (capturing ApiVersions, listing topics for the wire log). The certificate
// need not name 127.0.0.1 nor chain to a CA this process has, so normal
// verification is skipped; instead the peer must present exactly the
// certificate this process serves, which is all there is to check on a
// loopback connection to oneself.
func selfTLS(pair tls.Certificate) *tls.Config {
	own := pair.Certificate[0]
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
		InsecureSkipVerify: true, //nolint:gosec // the peer is pinned below
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 || !bytes.Equal(cs.PeerCertificates[0].Raw, own) {
				return errors.New("the listener does not serve this broker's certificate")
			}
			return nil
		},
	}
}
