package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// WireLogEnv names a file the broker appends one JSON line to for every
// topic named in a CreateTopics or DeleteTopics request it receives, as
// {"api":"CreateTopics","topic":"orders","validateOnly":false}, after a
// {"api":"Start"} line and a {"api":"Loaded","topic":...} line per topic the
// broker has when it starts (from its data dir). The fault
// harness (test/faults) counts creates per topic name on the wire with it.
// It is an environment variable, not a flag, so test helpers that start the
// broker pass it without new options; the file is written unbuffered, line
// by line, so a SIGKILL loses nothing already answered, and it can be read
// while the broker is paused.
const WireLogEnv = "BUCKETY_KFAKE_WIRE_LOG"

// WireRecord is one line of the wire log.
type WireRecord struct {
	API          string `json:"api"`
	Topic        string `json:"topic"`
	ValidateOnly bool   `json:"validateOnly,omitempty"`
}

// startWireLog installs an observe-only control function when WireLogEnv is
// set; the returned function closes the file.
func startWireLog(c *kfake.Cluster, dial []kgo.Opt) (func(), error) {
	path := os.Getenv(WireLogEnv)
	if path == "" {
		return func() {}, nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", WireLogEnv, err)
	}
	var mu sync.Mutex
	write := func(r WireRecord) {
		b, err := json.Marshal(r)
		if err != nil {
			fmt.Fprintf(os.Stderr, "broker: wire log: %v\n", err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if _, err := f.Write(append(b, '\n')); err != nil {
			fmt.Fprintf(os.Stderr, "broker: wire log: %v\n", err)
		}
	}
	// Each start is marked, with the topics the broker has at start (from
	// its data dir): a create of a topic the broker lost in a kill is a
	// re-create, not a duplicate; the harness tells them apart with these.
	write(WireRecord{API: "Start"})
	loaded, err := listTopics(c, dial)
	if err != nil {
		return nil, fmt.Errorf("%s: list the topics at start: %w", WireLogEnv, err)
	}
	for _, t := range loaded {
		write(WireRecord{API: "Loaded", Topic: t})
	}
	observe := func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		switch r := req.(type) {
		case *kmsg.CreateTopicsRequest:
			for _, t := range r.Topics {
				write(WireRecord{API: "CreateTopics", Topic: t.Topic, ValidateOnly: r.ValidateOnly})
			}
		case *kmsg.DeleteTopicsRequest:
			for _, t := range r.TopicNames {
				write(WireRecord{API: "DeleteTopics", Topic: t})
			}
			for _, t := range r.Topics {
				if t.Topic != nil {
					write(WireRecord{API: "DeleteTopics", Topic: *t.Topic})
				}
			}
		}
		return nil, nil, false // observe only: the cluster handles it
	}
	c.ControlKey(int16(kmsg.CreateTopics), observe)
	c.ControlKey(int16(kmsg.DeleteTopics), observe)
	return func() {
		if err := f.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "broker: wire log: %v\n", err)
		}
	}, nil
}

// listTopics lists the cluster's topics through its own listener, connecting
// with dial (the superuser's login and TLS, as main sets up).
func listTopics(c *kfake.Cluster, dial []kgo.Opt) ([]string, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}, dial...)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	td, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		return nil, err
	}
	return td.Names(), nil
}
