package main

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// The gate hands the listener's owner the broker's own connections at once
// and other clients' only after Open, in full and in the order they came.
func TestGateHoldsOtherClientsUntilOpen(t *testing.T) {
	g := newGate()
	l, err := g.listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	ctx := context.Background()

	// A client dials first and sends its request before the broker is set up.
	other, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Write([]byte("early")); err != nil {
		t.Fatal(err)
	}
	// The broker's own connection passes while the other waits.
	own, err := g.dial(ctx, "tcp", l.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	first := <-accepted
	if first.RemoteAddr().String() != own.LocalAddr().String() {
		t.Fatalf("first accepted %s, want the broker's own %s (the other client is %s)", first.RemoteAddr(), own.LocalAddr(), other.LocalAddr())
	}
	select {
	case c := <-accepted:
		t.Fatalf("accepted %s before Open", c.RemoteAddr())
	case <-time.After(300 * time.Millisecond):
	}

	g.Open()
	second := <-accepted
	if second.RemoteAddr().String() != other.LocalAddr().String() {
		t.Fatalf("after Open accepted %s, want %s", second.RemoteAddr(), other.LocalAddr())
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(second, buf); err != nil || string(buf) != "early" {
		t.Fatalf("the held client's bytes: %q, %v", buf, err)
	}
	g.mu.Lock()
	left := len(g.self)
	g.mu.Unlock()
	if left != 0 {
		t.Errorf("%d registered addresses left after they passed", left)
	}

	// After Open, new clients pass at once; after Close, Accept ends.
	late, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	if c := <-accepted; c.RemoteAddr().String() != late.LocalAddr().String() {
		t.Fatalf("after Open accepted %s, want %s", c.RemoteAddr(), late.LocalAddr())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-accepted; ok {
		t.Fatal("Accept returned a connection after Close")
	}
	if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close: %v, want net.ErrClosed", err)
	}
}

// A listener closed while a client waits at the gate closes that client's
// connection instead of leaking it.
func TestGateClosesHeldClientsOnClose(t *testing.T) {
	g := newGate()
	l, err := g.listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	other, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := other.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Read(make([]byte, 1)); err == nil {
		t.Fatal("the held client's connection is still open after the listener closed")
	}
}
