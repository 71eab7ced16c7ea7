// Command broker runs a Kafka-protocol cluster (franz-go's kfake) on
// loopback ports, for tests and the local stack. It is a real broker over
// TCP: clients speak the Kafka protocol to it exactly as to Kafka.
//
//	broker --ports 19092 --addr-file /tmp/addrs [--brokers 1] [--data-dir DIR]
//	       [--sasl SCRAM-SHA-256:admin:secret] [--tls-cert F --tls-key F]
//
// It writes the comma-separated listen addresses to --addr-file once it
// accepts connections, and runs until SIGTERM or SIGINT.
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
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
	var sasls list
	flag.Var(&sasls, "sasl", "MECHANISM:user:password of a superuser; enables SASL (repeatable)")
	flag.Parse()

	opts := []kfake.Opt{kfake.NumBrokers(*brokers), kfake.DefaultNumPartitions(*partitions)}
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
	if *tlsCert != "" {
		pair, err := tls.LoadX509KeyPair(*tlsCert, *tlsKey)
		if err != nil {
			return fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		opts = append(opts, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}))
	}
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
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return err
	}
	defer c.Close()
	addrs := strings.Join(c.ListenAddrs(), ",")
	fmt.Printf("broker: listening on %s\n", addrs)
	closeWireLog, err := startWireLog(c) // wirelog.go
	if err != nil {
		return err
	}
	defer closeWireLog()
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
