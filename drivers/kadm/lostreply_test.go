package kadm

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/drivertest"
	"github.com/Yolean/buckety-controller/test/kafka"
)

// replyLoser dials real connections to the broker and loses the answer to
// the first request of its key (CreateTopics, DeleteTopics) written on any
// of them once armed, or with all to every one until disarmed: the broker
// gets the request and answers it, and the client reads a closed
// connection instead, as when a network drops a reply.
type replyLoser struct {
	key   kmsg.Key
	all   bool
	armed atomic.Bool
	lost  atomic.Int32
}

func (l *replyLoser) dial(ctx context.Context, network, host string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	return &losingConn{Conn: c, l: l}, nil
}

type losingConn struct {
	net.Conn
	l *replyLoser
	// lose is the correlation ID whose answer is lost, once set.
	mu      sync.Mutex
	lose    bool
	lostFor int32
}

// Write passes every request on (kgo writes one request per Write: size,
// key, version, correlation ID, ...), noting the first of the loser's key.
func (c *losingConn) Write(p []byte) (int, error) {
	if len(p) >= 12 && int16(binary.BigEndian.Uint16(p[4:6])) == c.l.key.Int16() && (c.l.all && c.l.armed.Load() || c.l.armed.CompareAndSwap(true, false)) {
		c.mu.Lock()
		c.lose, c.lostFor = true, int32(binary.BigEndian.Uint32(p[8:12]))
		c.mu.Unlock()
	}
	return c.Conn.Write(p)
}

// Read, once an answer is to be lost, reads the broker's answers
// up to that one (so the broker has carried the request out), drops them
// and closes the connection, reading a reset.
func (c *losingConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	lose, id := c.lose, c.lostFor
	c.mu.Unlock()
	if !lose {
		return c.Conn.Read(p)
	}
	for {
		var head [8]byte
		if _, err := io.ReadFull(c.Conn, head[:]); err != nil {
			return 0, err
		}
		if _, err := io.CopyN(io.Discard, c.Conn, int64(binary.BigEndian.Uint32(head[:4]))-4); err != nil {
			return 0, err
		}
		if int32(binary.BigEndian.Uint32(head[4:])) == id {
			break
		}
	}
	c.l.lost.Add(1)
	if err := c.Conn.Close(); err != nil {
		return 0, err
	}
	// What a reset connection reads (an EOF on a connection's first
	// answer kgo takes for a refused SASL handshake, and sends nothing
	// again).
	return 0, &net.OpError{Op: "read", Net: "tcp", Addr: c.RemoteAddr(), Err: os.NewSyscallError("read", syscall.ECONNRESET)}
}

// TestLostCreateReplyIsNotSomeoneElsesTopic: the first create of a topic
// (a claim just recorded, create only) whose answer the network loses
// after the broker created it. Sent again, the create would be answered
// TOPIC_ALREADY_EXISTS and read as a topic someone else made since the
// adoption check, which the controller hands to adoption: its own new
// topic refused or adopted (and so kept on delete). The create is sent
// once, its error says the outcome is unknown (unavailable), and the
// next pass converges the topic the broker has.
func TestLostCreateReplyIsNotSomeoneElsesTopic(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: runs a real Kafka-protocol broker; run without -short (make test)")
	}
	broker := kafka.Start(t, kafka.Options{})
	cfg := &Config{SeedBrokers: broker.Addrs, ClientID: "buckety-test", RequestTimeout: drivers.Duration{Duration: 5 * time.Second}}
	loser := &replyLoser{key: kmsg.CreateTopics}
	be, _ := losingBackend(t, cfg, loser)
	params := map[string]string{"partitions": "3", "config.retention.ms": "3600000"}
	drivertest.LostCreateSettles(t, be, drivers.Resource{Name: "lost-reply", Parameters: params},
		func() { loser.armed.Store(true) }, func() int { return int(loser.lost.Load()) })
	st, err := be.describe(context.Background(), "lost-reply", true)
	if err != nil || !st.exists || st.partitions != 3 || st.dynamic["retention.ms"] != "3600000" {
		t.Errorf("the topic after the next pass: want 3 partitions and retention.ms 3600000, got %+v %v", st, err)
	}
}

// losingBackend is a Backend on cfg whose connections lose the answers
// loser picks (opt added to its client's options); it returns the
// client options without the loser, for a client of the test's own.
func losingBackend(t *testing.T, cfg *Config, loser *replyLoser, opt ...kgo.Opt) (*Backend, []kgo.Opt) {
	t.Helper()
	opts, err := cfg.clientOpts()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(append(append(slices.Clip(opts), kgo.Dialer(loser.dial)), opt...)...)
	if err != nil {
		t.Fatal(err)
	}
	d := &Driver{}
	be := newBackend("kafka", cfg, cl, d.linger(), d.maxBatch())
	t.Cleanup(func() {
		if err := be.Close(); err != nil {
			t.Error(err)
		}
	})
	return be, opts
}
