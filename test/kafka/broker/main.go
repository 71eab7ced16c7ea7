// Command broker runs a Kafka-protocol cluster (franz-go's kfake) on
// loopback ports, for tests and the local stack. It is a real broker over
// TCP: clients speak the Kafka protocol to it exactly as to Kafka.
//
//	broker --ports 19092 --addr-file /tmp/addrs [--brokers 1] [--data-dir DIR]
//	       [--sasl SCRAM-SHA-256:admin:secret [--acls] [--reauth-ms N]] [--kafka-2.6]
//	       [--tls-cert F --tls-key F]
//	       [--stats-addr 127.0.0.1:PORT] [--cluster-id ID]
//
// It writes the comma-separated listen addresses to --addr-file once it
// accepts connections, and runs until SIGTERM or SIGINT.
//
// With --stats-addr it counts every request it handles per API key (kfake's
// control hooks, observing without intercepting) and serves the counts as a
// JSON object of API name to count, e.g. {"Metadata":12,"CreateTopics":1},
// at GET /requests on that loopback address. Benchmarks and tests read it
// before and after a run to count what a client sent.
//
// It advertises SaslHandshake from v0 in ApiVersions, as Kafka does, so that
// librdkafka clients (kcat, confluent-kafka) can log in with SASL; see
// handshake.go for why and for what still differs from Kafka.
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(s string) error { *l = append(*l, s); return nil }

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "broker: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	brokers := flag.Int("brokers", 1, "number of brokers")
	ports := flag.String("ports", "", "comma-separated listen ports on 127.0.0.1, one per broker (default: any free)")
	addrFile := flag.String("addr-file", "", "file to write the listen addresses to when ready")
	dataDir := flag.String("data-dir", "", "persist topics and records in this directory (survives restarts)")
	partitions := flag.Int("default-partitions", 1, "partitions of a topic created with -1 (Kafka's num.partitions default is 1)")
	tlsCert := flag.String("tls-cert", "", "PEM certificate to serve TLS with")
	tlsKey := flag.String("tls-key", "", "PEM key for --tls-cert")
	clusterID := flag.String("cluster-id", "", "the cluster ID Metadata answers report (default kfake's, the same for every broker)")
	statsAddr := flag.String("stats-addr", "", "serve request counts per API key at http://ADDR/requests (a 127.0.0.1 address)")
	var sasls list
	flag.Var(&sasls, "sasl", "MECHANISM:user:password of a superuser; enables SASL (repeatable)")
	acls := flag.Bool("acls", false, "enforce ACLs: users other than the --sasl superusers may do only what their ACLs allow")
	reauthMS := flag.Int("reauth-ms", 0, "connections.max.reauth.ms: SASL connections must re-authenticate within it (0: never)")
	kafka26 := flag.Bool("kafka-2.6", false, "answer only the API versions of Kafka 2.6: no SCRAM admin API (KIP-554)")
	var brokerConfigs list
	flag.Var(&brokerConfigs, "broker-config", "KEY=VALUE a broker config DescribeConfigs reports, as a broker started with it in server.properties does (repeatable; kfake acts only on the keys it knows)")
	flag.Parse()

	opts := []kfake.Opt{kfake.NumBrokers(*brokers), kfake.DefaultNumPartitions(*partitions)}
	if *clusterID != "" {
		opts = append(opts, kfake.ClusterID(*clusterID))
	}
	if *ports != "" {
		var ps []int
		for _, p := range strings.Split(*ports, ",") {
			n, err := strconv.Atoi(p)
			if err != nil {
				return fmt.Errorf("--ports: %q is not a port", p)
			}
			ps = append(ps, n)
		}
		opts = append(opts, kfake.Ports(ps...))
	}
	if *dataDir != "" {
		opts = append(opts, kfake.DataDir(*dataDir))
	}
	// Other clients wait at the gate until the broker is set up (gate.go).
	g := newGate()
	opts = append(opts, kfake.ListenFn(g.listen))
	// selfDial is how the broker connects to its own listener: as the first
	// superuser, over TLS when it serves TLS, through the gate.
	selfDial := superuserLogin(sasls)
	var ownTLS *tls.Config
	if *tlsCert != "" {
		pair, err := tls.LoadX509KeyPair(*tlsCert, *tlsKey)
		if err != nil {
			return fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		opts = append(opts, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}))
		ownTLS = selfTLS(pair) // handshake.go
	}
	selfDial = append(selfDial, selfDialer(g, ownTLS))
	if len(sasls) > 0 {
		opts = append(opts, kfake.EnableSASL())
		for _, s := range sasls {
			parts := strings.SplitN(s, ":", 3)
			if len(parts) != 3 {
				return fmt.Errorf("--sasl %q: want MECHANISM:user:password", s)
			}
			opts = append(opts, kfake.Superuser(parts[0], parts[1], parts[2]))
		}
	}
	if *acls {
		opts = append(opts, kfake.EnableACLs())
	}
	if *kafka26 {
		opts = append(opts, kfake.MaxVersions(kversion.V2_6_0()))
	}
	if *reauthMS > 0 {
		opts = append(opts, kfake.BrokerConfigs(map[string]string{"connections.max.reauth.ms": strconv.Itoa(*reauthMS)}))
	}
	for _, kv := range brokerConfigs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("--broker-config %q: want KEY=VALUE", kv)
		}
		opts = append(opts, kfake.BrokerConfigs(map[string]string{k: v}))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return err
	}
	defer c.Close()
	// The cluster's own ApiVersions answer, captured before any control is
	// installed (the broker's own connection is not counted). Control
	// functions of a key run in the order they were added, and the first
	// that handles a request ends the run: the request counter comes first,
	// then the controls that answer requests themselves.
	own, err := captureApiVersions(c, selfDial) // handshake.go
	if err != nil {
		return err
	}
	if *statsAddr != "" {
		stop, err := serveStats(c, *statsAddr)
		if err != nil {
			return err
		}
		defer stop()
	}
	if err := advertiseSASLHandshakeV0(c, own, selfDial); err != nil {
		return err
	}
	if !*acls {
		withoutAuthorizer(c)
	}
	addrs := strings.Join(c.ListenAddrs(), ",")
	fmt.Printf("broker: listening on %s\n", addrs)
	closeWireLog, err := startWireLog(c, selfDial) // wirelog.go
	if err != nil {
		return err
	}
	defer closeWireLog()
	g.Open()
	if *addrFile != "" {
		tmp := *addrFile + ".tmp"
		if err := os.WriteFile(tmp, []byte(addrs+"\n"), 0o644); err != nil {
			return err
		}
		if err := os.Rename(tmp, *addrFile); err != nil {
			return err
		}
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	s := <-sig
	fmt.Printf("broker: %s, shutting down\n", s)
	return nil
}

// serveStats counts requests per API key and serves the counts on addr,
// which must be a loopback address. It must run before the controls that
// answer requests themselves (ApiVersions, the ACL APIs without --acls):
// kfake runs a key's own controls before the catch-all ones (key -1) and
// stops at the first that handles a request, so a catch-all counter would
// miss every request another control answers. The counter is therefore
// installed on every key, first.
func serveStats(c *kfake.Cluster, addr string) (stop func(), err error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--stats-addr: %w", err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("--stats-addr %q: want a loopback address such as 127.0.0.1:PORT", addr)
	}
	var mu sync.Mutex
	counts := map[int16]int64{}
	count := func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		mu.Lock()
		counts[req.Key()]++
		mu.Unlock()
		return nil, nil, false // observe only: the next control or the cluster handles it
	}
	for k := int16(0); k <= kmsg.MaxKey; k++ {
		c.ControlKey(k, count)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--stats-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /requests", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		out := make(map[string]int64, len(counts))
		for k, n := range counts {
			out[kmsg.NameForKey(k)] = n
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(out); err != nil {
			fmt.Fprintf(os.Stderr, "broker: stats: %v\n", err)
		}
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(os.Stderr, "broker: stats: %v\n", err)
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "broker: stats shutdown: %v\n", err)
		}
	}, nil
}

// withoutAuthorizer answers the ACL APIs as Kafka does on a cluster without
// an authorizer (SECURITY_DISABLED), which kfake does not model: it accepts
// ACLs it then does not enforce. Clients that check for an authorizer, as
// buckety does before issuing per-access users, see the truth.
func withoutAuthorizer(c *kfake.Cluster) {
	disabled := func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		code := kerr.SecurityDisabled.Code
		switch r := req.(type) {
		case *kmsg.DescribeACLsRequest:
			resp := r.ResponseKind().(*kmsg.DescribeACLsResponse)
			resp.ErrorCode = code
			return resp, nil, true
		case *kmsg.CreateACLsRequest:
			resp := r.ResponseKind().(*kmsg.CreateACLsResponse)
			for range r.Creations {
				res := kmsg.NewCreateACLsResponseResult()
				res.ErrorCode = code
				resp.Results = append(resp.Results, res)
			}
			return resp, nil, true
		case *kmsg.DeleteACLsRequest:
			resp := r.ResponseKind().(*kmsg.DeleteACLsResponse)
			for range r.Filters {
				res := kmsg.NewDeleteACLsResponseResult()
				res.ErrorCode = code
				resp.Results = append(resp.Results, res)
			}
			return resp, nil, true
		}
		return nil, nil, false
	}
	for _, k := range []kmsg.Key{kmsg.DescribeACLs, kmsg.CreateACLs, kmsg.DeleteACLs} {
		c.ControlKey(int16(k), disabled)
	}
}

// superuserLogin is the client option that logs in as the first --sasl
// superuser (none without SASL), for the broker's own reads.
func superuserLogin(sasls []string) []kgo.Opt {
	if len(sasls) == 0 {
		return nil
	}
	parts := strings.SplitN(sasls[0], ":", 3)
	switch parts[0] {
	case "PLAIN":
		return []kgo.Opt{kgo.SASL(plain.Auth{User: parts[1], Pass: parts[2]}.AsMechanism())}
	case "SCRAM-SHA-256":
		return []kgo.Opt{kgo.SASL(scram.Auth{User: parts[1], Pass: parts[2]}.AsSha256Mechanism())}
	default:
		return []kgo.Opt{kgo.SASL(scram.Auth{User: parts[1], Pass: parts[2]}.AsSha512Mechanism())}
	}
}
