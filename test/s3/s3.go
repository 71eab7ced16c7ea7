// Package s3 runs real S3 servers for tests and the local stack: VersityGW
// (posix backend, with a versioning directory) and MinIO (single drive),
// each as a process on free loopback ports with its own data directory,
// and SeaweedFS through test/seaweedfs, so that a harness that takes its
// S3 server by name (the fault and scale harnesses) runs on it too.
// The binaries are the pinned ones test/tools/install.sh builds.
package s3

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/Yolean/buckety-controller/test/proc"
	"github.com/Yolean/buckety-controller/test/seaweedfs"
)

// Environment variables holding the server binaries; `make test` sets them
// from test/tools/install.sh.
const (
	VersityGWEnv = "BUCKETY_VERSITYGW"
	MinIOEnv     = "BUCKETY_MINIO"
)

// Implementations are the S3 servers the tests run, in a stable order.
// SeaweedFS is not among them: StartIn starts it by name, and its own
// tests are in test/seaweedfs.
var Implementations = []string{"versitygw", "minio"}

// Server is a running S3 server.
type Server struct {
	// Implementation is "versitygw", "minio" or "seaweedfs".
	Implementation string
	// Endpoint is http://127.0.0.1:PORT.
	Endpoint string
	// AccessKey and SecretKey are the root credentials.
	AccessKey, SecretKey string
	// Region is the server's region.
	Region string
	// AdminEndpoint is VersityGW's admin API, http://127.0.0.1:PORT (empty
	// for MinIO, whose admin API is on Endpoint).
	AdminEndpoint string

	p *proc.Process
	// weed is the server when Implementation is seaweedfs (p is nil).
	weed *seaweedfs.Server
}

// Options configure a server.
type Options struct {
	// NoVersioning starts VersityGW without --versioning-dir, so versioning
	// requests answer NotImplemented.
	NoVersioning bool
	// Region is the server's region (default us-east-1).
	Region string
	// AccessKey and SecretKey set the root credentials (default: random),
	// for two servers standing in for one account's endpoints, as R2's
	// account and jurisdiction endpoints are.
	AccessKey, SecretKey string
	// PublicMetrics lets anyone read MinIO's Prometheus metrics (request
	// counts per S3 API at /minio/metrics/v3/api/requests), for the scale
	// benchmark; VersityGW ignores it.
	PublicMetrics bool
	// IAM starts VersityGW with its internal IAM service (--iam-dir), so
	// the admin API can create users; without it VersityGW runs in single
	// root-account mode and answers XAdminMethodNotSupported. MinIO ignores
	// it (it always has users).
	IAM bool
	// DefaultScanner runs MinIO's scanner at its default speed instead of
	// fastest: a server that serves a whole package's tests, none of
	// which reads data usage or relies on a quota (test/integration's),
	// then does not spend a share of a core scanning its objects every
	// second. The others ignore it.
	DefaultScanner bool
}

// Start starts the named implementation and stops it when the test ends.
func Start(t testing.TB, implementation string, opts Options) *Server {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: runs a real S3 server; run without -short (make test)")
	}
	dir, err := os.MkdirTemp("", "bkt-s3-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("remove %s: %v", dir, err)
		}
	})
	s, err := StartIn(dir, implementation, opts, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stop %s: %v", implementation, err)
		}
	})
	return s
}

// freePorts picks the ports a server listens on (a test takes one first).
var freePorts = proc.FreePorts

// StartIn starts a server with its data and logs under dir. SeaweedFS
// (test/seaweedfs) has one region, us-east-1, and keys of its own choosing,
// with IAM writes on: Options other than Region us-east-1 are refused.
func StartIn(dir, implementation string, opts Options, detached bool) (*Server, error) {
	if implementation == "seaweedfs" {
		return startSeaweedFS(dir, opts, detached)
	}
	for attempt := 1; ; attempt++ {
		s, p, err := startOnce(dir, implementation, opts, detached)
		if err == nil {
			return s, nil
		}
		if p == nil || !proc.PortTaken(p) || attempt == 3 {
			return nil, err
		}
		// Another listener took a port between FreePorts and the bind:
		// start afresh on new ports, with fresh data.
		if err := os.RemoveAll(filepath.Join(dir, "data")); err != nil {
			return nil, err
		}
	}
}

// startOnce starts the server on free ports. When it fails after the
// process started, it returns the stopped process with the error, for
// StartIn to tell whether a port was taken.
func startOnce(dir, implementation string, opts Options, detached bool) (*Server, *proc.Process, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, nil, err
	}
	s := &Server{
		Implementation: implementation,
		Endpoint:       "http://127.0.0.1:" + strconv.Itoa(ports[0]),
		AccessKey:      "bucketyroot" + randomHex(4),
		SecretKey:      randomHex(20),
		Region:         opts.Region,
	}
	if opts.AccessKey != "" {
		s.AccessKey, s.SecretKey = opts.AccessKey, opts.SecretKey
	}
	if s.Region == "" {
		s.Region = "us-east-1"
	}
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, nil, err
	}
	var bin string
	var args, env []string
	switch implementation {
	case "versitygw":
		if bin, err = binary(VersityGWEnv, "versitygw"); err != nil {
			return nil, nil, err
		}
		env = []string{"ROOT_ACCESS_KEY=" + s.AccessKey, "ROOT_SECRET_KEY=" + s.SecretKey}
		s.AdminEndpoint = "http://127.0.0.1:" + strconv.Itoa(ports[1])
		args = []string{"--port", "127.0.0.1:" + strconv.Itoa(ports[0]), "--admin-port", "127.0.0.1:" + strconv.Itoa(ports[1]), "--region", s.Region}
		if opts.IAM {
			// A global flag: it goes before the posix subcommand. The
			// directory's users.json holds the users' secrets in clear.
			idir := filepath.Join(dir, "iam")
			if err := os.MkdirAll(idir, 0o700); err != nil {
				return nil, nil, err
			}
			args = append(args, "--iam-dir", idir)
		}
		args = append(args, "posix")
		if !opts.NoVersioning {
			vdir := filepath.Join(dir, "versions")
			if err := os.MkdirAll(vdir, 0o755); err != nil {
				return nil, nil, err
			}
			args = append(args, "--versioning-dir", vdir)
		}
		args = append(args, data)
	case "minio":
		if bin, err = binary(MinIOEnv, "minio"); err != nil {
			return nil, nil, err
		}
		env = []string{"MINIO_ROOT_USER=" + s.AccessKey, "MINIO_ROOT_PASSWORD=" + s.SecretKey, "MINIO_BROWSER=off", "MINIO_UPDATE=off", "MINIO_REGION=" + s.Region}
		if !opts.DefaultScanner {
			// The data usage report (bucket sizes, status.usage) and the
			// quotas follow the scanner: a cycle a second, not MinIO's
			// default minutes, so a test sees a write in the report
			// within seconds.
			env = append(env, "MINIO_SCANNER_SPEED=fastest")
		}
		args = []string{"server", "--quiet", "--address", "127.0.0.1:" + strconv.Itoa(ports[0]), "--console-address", "127.0.0.1:" + strconv.Itoa(ports[1]), data}
		if opts.PublicMetrics {
			env = append(env, "MINIO_PROMETHEUS_AUTH_TYPE=public")
		}
	default:
		return nil, nil, fmt.Errorf("unknown S3 implementation %q (known: versitygw, minio, seaweedfs)", implementation)
	}
	p, err := proc.Start(dir, implementation, bin, args, env, detached)
	if err != nil {
		return nil, nil, err
	}
	s.p = p
	if err := s.waitReady(); err != nil {
		if serr := s.Stop(); serr != nil {
			err = fmt.Errorf("%w (and stop: %v)", err, serr)
		}
		return nil, p, err
	}
	return s, p, nil
}

func binary(env, name string) (string, error) {
	p := os.Getenv(env)
	if p == "" {
		return "", fmt.Errorf("%s is not set: run `make test`, or export %s=$(test/tools/install.sh %s)", env, env, name)
	}
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s=%s: %w", env, p, err)
	}
	return filepath.Abs(p)
}

// minioHealth answers 200 only once MinIO's IAM and bucket metadata are
// loaded: /minio/health/live answers before that, and admin calls made
// then answer 503 XMinioServerNotInitialized (a CI run failed on one).
const minioHealth = "/minio/health/cluster"

// readyURLs are the URLs that must answer before the server is ready:
// its health (MinIO's minioHealth, any answer of VersityGW's S3 port),
// and VersityGW's admin endpoint. VersityGW opens its admin port in a
// goroutine of its own, after or before the S3 port: a test's first
// admin call made when only the S3 port answered was refused (a CI run
// failed on one).
func (s *Server) readyURLs() []string {
	if s.Implementation == "minio" {
		return []string{s.Endpoint + minioHealth}
	}
	if s.AdminEndpoint == "" {
		return []string{s.Endpoint}
	}
	return []string{s.Endpoint, s.AdminEndpoint}
}

// waitReady waits until every URL of readyURLs answers, within one 60 s
// bound.
func (s *Server) waitReady() error {
	client := &http.Client{Timeout: time.Second}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(60 * time.Second)
	for _, url := range s.readyURLs() {
		if err := s.waitURL(client, url, deadline); err != nil {
			return err
		}
	}
	if s.Implementation == "minio" {
		return s.waitIAMLoaded(deadline)
	}
	return nil
}

// minioIAMLoaded is an admin call MinIO answers only after its first load
// of IAM from disk (list-groups waits for it; the answer is plain JSON).
// minioHealth answers 200 before that load ends, and the load replaces
// the IAM cache whole: a user's policy set in between lists as none until
// the next periodic refresh, minutes later (MinIO's IAMStoreSys.
// LoadIAMCache with firstTime; a CI run failed on one, under load).
const minioIAMLoaded = "/minio/admin/v3/groups"

// waitIAMLoaded waits until MinIO answers minioIAMLoaded 200, signed with
// the root keys.
func (s *Server) waitIAMLoaded(deadline time.Time) error {
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	last := "no answer"
	for {
		if done, err := s.p.Exited(); done {
			return fmt.Errorf("%s exited (%v); last lines of %s:\n%s", s.Implementation, err, s.p.Log, s.p.Tail(20))
		}
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		status, err := func() (int, error) {
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.Endpoint+minioIAMLoaded, nil)
			if err != nil {
				return 0, err
			}
			req.Header.Set("X-Amz-Content-Sha256", emptySHA256)
			if err := v4.NewSigner().SignHTTP(ctx, aws.Credentials{AccessKeyID: s.AccessKey, SecretAccessKey: s.SecretKey}, req, emptySHA256, "s3", s.Region, time.Now()); err != nil {
				return 0, err
			}
			resp, err := hc.Do(req)
			if err != nil {
				return 0, err
			}
			defer resp.Body.Close()
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				return 0, err
			}
			return resp.StatusCode, nil
		}()
		switch {
		case err == nil && status == http.StatusOK:
			return nil
		case err != nil:
			last = err.Error()
		default:
			last = "status " + strconv.Itoa(status)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("minio: IAM not loaded after 60s (%s answers %s); see %s", minioIAMLoaded, last, s.p.Log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *Server) waitURL(client *http.Client, url string, deadline time.Time) error {
	for {
		if done, err := s.p.Exited(); done {
			return fmt.Errorf("%s exited (%v); last lines of %s:\n%s", s.Implementation, err, s.p.Log, s.p.Tail(20))
		}
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			// Any HTTP answer from VersityGW (403 for anonymous) means it
			// serves; MinIO's health endpoint answers 200.
			if s.Implementation != "minio" || resp.StatusCode == http.StatusOK {
				return nil
			}
		} else if _, ok := err.(net.Error); !ok && s.Implementation == "versitygw" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after 60s (%s does not answer); see %s", s.Implementation, url, s.p.Log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// startSeaweedFS starts SeaweedFS under dir as a Server.
func startSeaweedFS(dir string, opts Options, detached bool) (*Server, error) {
	if opts.NoVersioning || opts.PublicMetrics || opts.AccessKey != "" || (opts.Region != "" && opts.Region != seaweedfs.Region) {
		return nil, fmt.Errorf("seaweedfs: options %+v: only Region %s (and IAM, always on) apply", opts, seaweedfs.Region)
	}
	w, err := seaweedfs.StartIn(dir, seaweedfs.Options{}, detached)
	if err != nil {
		return nil, err
	}
	return &Server{Implementation: "seaweedfs", Endpoint: w.Endpoint, AccessKey: w.AccessKey, SecretKey: w.SecretKey, Region: seaweedfs.Region, weed: w}, nil
}

// Stop stops the server; it is idempotent.
func (s *Server) Stop() error {
	if s.weed != nil {
		return s.weed.Stop()
	}
	if s.p == nil {
		return nil
	}
	err := s.p.Stop(15 * time.Second)
	s.p = nil
	return err
}

// PID is the server's process ID.
func (s *Server) PID() int {
	if s.weed != nil {
		return s.weed.PID()
	}
	return s.p.PID()
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}
