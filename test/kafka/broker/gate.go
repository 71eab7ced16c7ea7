package main

import (
	"context"
	"crypto/tls"
	"net"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// gate holds the connections of other clients until the broker is set up.
//
// kfake listens as soon as the cluster exists, but this broker installs its
// controls after that (the request counter, the ApiVersions patch, the
// authorizer switch, the wire log), and lists its own topics for the wire
// log through its listener. A client that connects in between (the
// controller retrying after a restart does) would be served by a broker that
// counts, logs and authorizes differently: a CreateTopics there is missing
// from the wire log and its topic is logged as loaded from the data dir.
// The gate closes that window: the listener accepts, but hands kfake only
// the broker's own connections (dialed with selfDialer) until open is
// called; the others wait in Accept, their bytes in the socket, and are
// served in the order they came once the broker opens.
type gate struct {
	mu   sync.Mutex
	cond *sync.Cond
	open bool
	// self holds the local addresses of the broker's own connections that
	// have not passed yet.
	self map[string]bool
}

func newGate() *gate {
	g := &gate{self: map[string]bool{}}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// Open lets every connection through, the held ones first.
func (g *gate) Open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open = true
	g.cond.Broadcast()
}

// listen is kfake's ListenFn.
func (g *gate) listen(network, address string) (net.Listener, error) {
	l, err := net.Listen(network, address)
	if err != nil {
		return nil, err
	}
	gl := &gatedListener{Listener: l, g: g, ch: make(chan net.Conn), done: make(chan struct{})}
	go gl.pump()
	return gl, nil
}

// register marks addr, the local address of one of the broker's own
// connections, as one to let through.
func (g *gate) register(addr string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.open {
		g.self[addr] = true
		g.cond.Broadcast()
	}
}

// wait blocks until c, accepted by l, may pass; false when l closed first.
func (g *gate) wait(c net.Conn, l *gatedListener) bool {
	addr := c.RemoteAddr().String()
	g.mu.Lock()
	defer g.mu.Unlock()
	for !g.open && !g.self[addr] && !l.closed {
		g.cond.Wait()
	}
	delete(g.self, addr)
	return !l.closed
}

type gatedListener struct {
	net.Listener
	g    *gate
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
	err  error // set before done closes
	// closed is set, under g.mu, when the listener closes.
	closed bool
}

// pump accepts and lets each connection through the gate in its own
// goroutine, so a held one does not hold the broker's own behind it.
func (l *gatedListener) pump() {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			l.stop(err)
			return
		}
		go func() {
			if !l.g.wait(c, l) {
				c.Close() //nolint:errcheck // the listener is closed: nobody serves c
				return
			}
			select {
			case l.ch <- c:
			case <-l.done:
				c.Close() //nolint:errcheck // the listener is closed: nobody serves c
			}
		}()
	}
}

func (l *gatedListener) stop(err error) {
	l.once.Do(func() {
		l.err = err
		close(l.done)
		l.g.mu.Lock()
		l.closed = true
		l.g.cond.Broadcast()
		l.g.mu.Unlock()
	})
}

func (l *gatedListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, l.err
	}
}

func (l *gatedListener) Close() error {
	err := l.Listener.Close()
	l.stop(net.ErrClosed)
	return err
}

// selfDialer is how the broker dials its own listener: over TLS with tc when
// it is not nil, each connection registered with g first so the gate lets
// it through before the broker opens.
func selfDialer(g *gate, tc *tls.Config) kgo.Opt {
	return kgo.Dialer(func(ctx context.Context, network, host string) (net.Conn, error) {
		return g.dial(ctx, network, host, tc)
	})
}

func (g *gate) dial(ctx context.Context, network, host string, tc *tls.Config) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	g.register(c.LocalAddr().String())
	if tc == nil {
		return c, nil
	}
	cfg := tc.Clone()
	if cfg.ServerName == "" {
		if cfg.ServerName, _, err = net.SplitHostPort(host); err != nil {
			c.Close() //nolint:errcheck // the dial failed already
			return nil, err
		}
	}
	tlsConn := tls.Client(c, cfg)
	if err := tlsConn.HandshakeContext(ctx); err != nil {
		c.Close() //nolint:errcheck // the dial failed already
		return nil, err
	}
	return tlsConn, nil
}
