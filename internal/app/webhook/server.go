package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sys/unix"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// server serves admission like controller-runtime's DefaultServer, whose
// Register (with the request metrics) and mux it reuses, and adds two things
// replica loss needs:
//
//   - Draining moves clients off this replica while it still serves. The
//     API server keeps one pooled (HTTP/2) connection per webhook and does
//     not retry a failed admission call, so a replica that simply stops
//     would fail whatever is in flight on that connection. From Drain on,
//     keep-alives are off: every connection is closed (HTTP/2: GOAWAY) as
//     soon as its current requests finish, and the client's next request
//     dials again, reaching a replica that is not going away. The listener
//     stays open until Start's context ends, for clients that still
//     route here.
//   - ReusePort (SO_REUSEPORT) lets several replicas on one host network
//     share the port, the kernel spreading new connections over them; it is
//     what a Service does for Pods on the Pod network.
type server struct {
	*webhook.DefaultServer
	host      string
	port      int
	getCert   func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	reusePort bool
	log       logr.Logger

	started  atomic.Bool
	draining atomic.Bool
	srv      atomic.Pointer[http.Server]
}

var _ webhook.Server = (*server)(nil)

// newServer serves on host:port with the certificate getCert returns (the
// certificate watcher's, so a renewal is served without a restart).
func newServer(host string, port int, getCert func(*tls.ClientHelloInfo) (*tls.Certificate, error), reusePort bool, log logr.Logger) *server {
	return &server{
		DefaultServer: &webhook.DefaultServer{Options: webhook.Options{Host: host, Port: port}},
		host:          host, port: port, getCert: getCert, reusePort: reusePort, log: log,
	}
}

func (s *server) addr() string { return net.JoinHostPort(s.host, strconv.Itoa(s.port)) }

// listen opens the TCP listener, with SO_REUSEPORT when asked.
func (s *server) listen(ctx context.Context) (net.Listener, error) {
	lc := net.ListenConfig{}
	if s.reusePort {
		lc.Control = func(_, _ string, c syscall.RawConn) error {
			var serr error
			if err := c.Control(func(fd uintptr) {
				serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
			}); err != nil {
				return err
			}
			if serr != nil {
				return fmt.Errorf("SO_REUSEPORT: %w", serr)
			}
			return nil
		}
	}
	return lc.Listen(ctx, "tcp", s.addr())
}

// Start serves until ctx ends, then stops gracefully: in-flight requests
// finish (up to a minute).
func (s *server) Start(ctx context.Context) error {
	l, err := s.listen(ctx)
	if err != nil {
		return err
	}
	srv := &http.Server{
		BaseContext:       func(net.Listener) context.Context { return ctx },
		Handler:           s.WebhookMux(),
		MaxHeaderBytes:    1 << 20,
		IdleTimeout:       90 * time.Second,
		ReadHeaderTimeout: 32 * time.Second,
	}
	if s.draining.Load() {
		srv.SetKeepAlivesEnabled(false)
	}
	s.srv.Store(srv)
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			s.log.Error(err, "stopping the admission server")
		}
	}()
	s.log.Info("serving admission", "address", s.addr(), "reusePort", s.reusePort)
	s.started.Store(true)
	tl := tls.NewListener(l, &tls.Config{NextProtos: []string{"h2", "http/1.1"}, GetCertificate: s.getCert, MinVersion: tls.VersionTLS12})
	if err := srv.Serve(tl); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	<-done
	return nil
}

// Drain turns keep-alives off, so clients leave this replica as their
// current requests finish, while it goes on serving.
func (s *server) Drain() {
	s.draining.Store(true)
	if srv := s.srv.Load(); srv != nil {
		srv.SetKeepAlivesEnabled(false)
	}
}

// StartedChecker is healthy once the server serves TLS on its address.
func (s *server) StartedChecker() healthz.Checker {
	return func(*http.Request) error {
		if !s.started.Load() {
			return errors.New("the admission server has not started")
		}
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", s.addr(), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // a liveness dial of our own listener
		if err != nil {
			return fmt.Errorf("the admission server is not reachable: %w", err)
		}
		return conn.Close()
	}
}
