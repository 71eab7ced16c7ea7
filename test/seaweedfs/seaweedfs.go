// Package seaweedfs runs a real SeaweedFS for tests: one `weed mini`
// process (master, volume server, filer, an admin server and the S3
// gateway, whose port also serves the AWS IAM API) on free loopback ports,
// with its data under a directory of its own. The binary is the pinned one
// test/tools/install.sh builds (tool seaweedfs).
//
// SeaweedFS authenticates nobody until an identity is configured, so the
// server starts with one static admin identity (-s3.config) whose keys are
// Server.AccessKey and Server.SecretKey; IAM writes are enabled
// (-s3.iam.readOnly=false), and managing one's own keys needs an iam: grant
// as on AWS (-s3.iam.selfServiceRequiresGrant: by default SeaweedFS lets
// every key create, list and delete keys of its own user). Users created
// through IAM live in the filer (/etc/iam), so they survive Restart.
//
// Start returns once an object can be written (about 5 s); Restart takes
// about 17 s, as the restarted master holds volume growth for three
// heartbeats (15 s, not configurable) waiting for volume servers it knew.
package seaweedfs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/Yolean/buckety-controller/drivers/s3/iam"
	"github.com/Yolean/buckety-controller/test/proc"
)

// Env holds the weed binary; `make test` sets it from test/tools/install.sh.
const Env = "BUCKETY_SEAWEEDFS"

// Region is the region the server answers for (SeaweedFS has one).
const Region = "us-east-1"

// PidName is the process name of a detached server: its pid file is
// proc.PidFile(dir, PidName).
const PidName = "seaweedfs"

// Server is a running SeaweedFS.
type Server struct {
	// Endpoint is http://127.0.0.1:PORT: S3 and IAM.
	Endpoint string
	// AccessKey and SecretKey are the admin identity's keys.
	AccessKey, SecretKey string
	// Dir holds the data, the identity file, the sockets and logs/.
	Dir string

	bin      string
	args     []string
	env      []string
	grpc     []int
	detached bool
	p        *proc.Process
}

// Options configure a server.
type Options struct {
	// SelfServiceKeys keeps SeaweedFS' default: any key may create, list
	// and delete keys of its own user without an iam: grant.
	SelfServiceKeys bool
	// AccessKey and SecretKey are the admin identity's keys; random when
	// empty. A server started again on an earlier one's directory (the
	// local stack's) keeps its keys this way.
	AccessKey, SecretKey string
}

// Start starts a server and stops it, and removes its directory, when the
// test ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: runs a real SeaweedFS; run without -short (make test)")
	}
	dir, err := os.MkdirTemp("", "bkt-seaweedfs-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("remove %s: %v", dir, err)
		}
	})
	s, err := StartIn(dir, opts, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stop seaweedfs: %v", err)
		}
	})
	return s
}

// StartIn starts a server with its data and logs under dir. In detached
// mode it outlives this process (StopDetached stops it by its pid file,
// name PidName).
//
// A server started again in the directory of an earlier one (the local
// stack's, after it died) takes the earlier one's ports when they are all
// free: the master keeps its state under a directory named by its port,
// and one that finds none starts a new cluster, whose master then refuses
// to grow volumes for the old volume server's data ("volume growth
// frozen": no new bucket takes writes). When any of them is taken, the
// earlier data is removed and the server starts afresh on new ports.
func StartIn(dir string, opts Options, detached bool) (*Server, error) {
	bin, err := binary()
	if err != nil {
		return nil, err
	}
	ports, err := portsIn(dir)
	if err != nil {
		return nil, err
	}
	s := &Server{
		Endpoint:  "http://127.0.0.1:" + strconv.Itoa(ports[6]),
		AccessKey: opts.AccessKey,
		SecretKey: opts.SecretKey,
		Dir:       dir,
		bin:       bin,
		grpc:      []int{ports[1], ports[3], ports[5], ports[7], ports[9]},
		detached:  detached,
	}
	if s.AccessKey == "" || s.SecretKey == "" {
		s.AccessKey, s.SecretKey = "bucketyadmin"+randomHex(4), randomHex(20)
	}
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, err
	}
	// The gRPC sockets weed leaves in /tmp (Stop), for StopDetached, which
	// knows only the directory.
	if err := os.WriteFile(filepath.Join(dir, socketsFile), []byte(strings.Join(s.sockets(), "\n")+"\n"), 0o644); err != nil {
		return nil, err
	}
	config := filepath.Join(dir, "s3.json")
	if err := writeIdentities(config, s.AccessKey, s.SecretKey); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "master.toml"), []byte(masterTOML), 0o644); err != nil {
		return nil, err
	}
	p := func(i int) string { return strconv.Itoa(ports[i]) }
	s.args = []string{
		// Global flags (before the command): logs to stderr, which proc
		// sends to logs/seaweedfs.log, rather than files in /tmp; the
		// master.toml above.
		"-logtostderr=true",
		"-config_dir=" + dir,
		// mini rather than server: the same master, volume server, filer
		// and S3 gateway in one process, plus an admin server and a
		// maintenance worker, but its filer joins the cluster at once
		// (server's waits out a membership check), so it takes writes
		// about 5 s after start instead of 12.
		"mini",
		"-dir=" + data,
		"-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		"-master.port=" + p(0), "-master.port.grpc=" + p(1),
		"-master.peers=none",
		// Never call home (the default reports to telemetry.seaweedfs.com).
		"-master.telemetry=false",
		// Small volumes (they are sparse files; the size is a cap).
		"-master.volumeSizeLimitMB=64",
		"-volume.port=" + p(2), "-volume.port.grpc=" + p(3),
		"-filer.port=" + p(4), "-filer.port.grpc=" + p(5),
		"-filer.localSocket=" + filepath.Join(dir, "filer.sock"),
		"-s3.port=" + p(6), "-s3.port.grpc=" + p(7),
		"-s3.localSocket=" + filepath.Join(dir, "s3.sock"),
		"-admin.port=" + p(8), "-admin.port.grpc=" + p(9), "-admin.port.legacy=0",
		"-admin.ui=false", "-webdav=false", "-s3.port.iceberg=0", "-s3.port.lance=0",
		// As on AWS, a write to a missing bucket is NoSuchBucket, also
		// for the admin (by default SeaweedFS creates the bucket).
		"-s3.autoCreateBucket=false",
		"-s3.config=" + config,
		"-s3.iam.readOnly=false",
		"-s3.iam.selfServiceRequiresGrant=" + strconv.FormatBool(!opts.SelfServiceKeys),
	}
	// weed reads its other .toml files from -config_dir, ., $HOME/.seaweedfs
	// and /etc/seaweedfs: a HOME of its own keeps the caller's out.
	s.env = []string{"HOME=" + dir}
	if err := s.start(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Server) start() error {
	p, err := proc.Start(s.Dir, PidName, s.bin, s.args, s.env, s.detached)
	if err != nil {
		return err
	}
	s.p = p
	if err := s.waitReady(); err != nil {
		if serr := s.Stop(); serr != nil {
			err = fmt.Errorf("%w (and stop: %v)", err, serr)
		}
		return err
	}
	return nil
}

// Restart stops the server and starts it again on the same ports and
// data, as a pod restart would.
func (s *Server) Restart() error {
	if err := s.Stop(); err != nil {
		return err
	}
	return s.start()
}

func binary() (string, error) {
	p := os.Getenv(Env)
	if p == "" {
		return "", fmt.Errorf("%s is not set: run `make test`, or export %s=$(test/tools/install.sh seaweedfs)", Env, Env)
	}
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s=%s: %w", Env, p, err)
	}
	return filepath.Abs(p)
}

// portsFile, in the server's directory, lists the ports it was started on.
const portsFile = "ports"

// portsIn returns the ten ports to start on in dir: HTTP and gRPC of master,
// volume server, filer, S3 and the admin server (gRPC ports are explicit:
// weed's default, HTTP port + 10000, overflows for a free port above
// 55535). Those recorded by an earlier server in dir when all are free,
// else new free ones, the earlier data removed (see StartIn); they are
// recorded for the next.
func portsIn(dir string) ([]int, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, portsFile)
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	var ports []int
	if err == nil {
		for _, f := range strings.Fields(string(b)) {
			p, err := strconv.Atoi(f)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			ports = append(ports, p)
		}
		if len(ports) == 10 && allFree(ports) {
			return ports, nil
		}
		if err := os.RemoveAll(filepath.Join(dir, "data")); err != nil {
			return nil, err
		}
	}
	if ports, err = proc.FreePorts(10); err != nil {
		return nil, err
	}
	var out strings.Builder
	for _, p := range ports {
		fmt.Fprintln(&out, p)
	}
	return ports, os.WriteFile(path, []byte(out.String()), 0o644)
}

// allFree reports whether every port can be listened on at 127.0.0.1.
func allFree(ports []int) bool {
	for _, p := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			return false
		}
		if err := l.Close(); err != nil {
			return false
		}
	}
	return true
}

// masterTOML is the master's configuration: one volume per bucket instead
// of seven (each bucket is a collection of its own).
const masterTOML = `[master.volume_growth]
copy_1 = 1
`

// writeIdentities writes the -s3.config file: one static identity with
// every right, SeaweedFS' admin.
func writeIdentities(path, accessKey, secretKey string) error {
	type credential struct {
		AccessKey string `json:"accessKey"`
		SecretKey string `json:"secretKey"`
	}
	type identity struct {
		Name        string       `json:"name"`
		Credentials []credential `json:"credentials"`
		Actions     []string     `json:"actions"`
	}
	b, err := json.MarshalIndent(map[string][]identity{"identities": {{
		Name:        "buckety-admin",
		Credentials: []credential{{AccessKey: accessKey, SecretKey: secretKey}},
		Actions:     []string{"Admin"},
	}}}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// IAM is an IAM client of the server with the admin keys.
func (s *Server) IAM() *iam.Client {
	return iam.New(s.Endpoint, Region, s.AccessKey, s.SecretKey, nil)
}

// waitReady waits until the admin can list IAM users (the S3 gateway
// serves, reaches the filer and has loaded its identities) and then until it
// can write an object: writes wait for the filer to join the cluster (its
// lock ring), some seconds after everything else answers, longest after a
// restart. The probe bucket is deleted again.
func (s *Server) waitReady() error {
	deadline := time.Now().Add(90 * time.Second)
	var last error
	for {
		if done, err := s.p.Exited(); done {
			return fmt.Errorf("seaweedfs exited (%v); last lines of %s:\n%s", err, s.p.Log, s.p.Tail(30))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, last = s.IAM().ListUsers(ctx, "")
		cancel()
		if last == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("seaweedfs: IAM not ready after 90s (last: %v); see %s", last, s.p.Log)
		}
		time.Sleep(200 * time.Millisecond)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	cl := s.S3()
	bucket := aws.String("buckety-seaweedfs-ready")
	if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: bucket}); err != nil {
		return fmt.Errorf("seaweedfs: create the probe bucket: %w; see %s", err, s.p.Log)
	}
	key := aws.String("probe")
	if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: key, Body: strings.NewReader("ok")}); err != nil {
		return fmt.Errorf("seaweedfs: write the probe object: %w; see %s", err, s.p.Log)
	}
	if _, err := cl.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: bucket, Key: key}); err != nil {
		return fmt.Errorf("seaweedfs: delete the probe object: %w", err)
	}
	if _, err := cl.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: bucket}); err != nil {
		return fmt.Errorf("seaweedfs: delete the probe bucket: %w", err)
	}
	return nil
}

// S3 is an S3 client of the server with the admin keys.
func (s *Server) S3() *s3.Client {
	return s3.New(s3.Options{
		Region: Region, BaseEndpoint: aws.String(s.Endpoint), UsePathStyle: true,
		Credentials:                credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
}

// Stop stops the server; it is idempotent.
func (s *Server) Stop() error {
	if s.p == nil {
		return nil
	}
	err := s.p.Stop(15 * time.Second)
	if err == nil {
		err = removeSockets(s.sockets())
	}
	s.p = nil
	return err
}

// socketsFile, in the server's directory, lists its gRPC sockets.
const socketsFile = "grpc-sockets"

// sockets are the in-process gRPC sockets weed puts in /tmp whatever the
// flags, named by port; a killed server leaves them behind.
func (s *Server) sockets() []string {
	var out []string
	for i, name := range []string{"master", "volume", "filer", "s3", "admin"} {
		out = append(out, fmt.Sprintf("/tmp/seaweedfs-%s-grpc-%d.sock", name, s.grpc[i]))
	}
	return out
}

func removeSockets(socks []string) error {
	var errs []error
	for _, sock := range socks {
		if err := os.Remove(sock); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// StopDetached stops a server StartIn started detached in dir, by its pid
// file, and removes the sockets it left in /tmp. Nothing running there is
// success.
func StopDetached(dir string, grace time.Duration) error {
	if err := proc.StopDetached(dir, PidName, grace); err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(dir, socketsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return removeSockets(strings.Fields(string(b)))
}

// PID is the server's process ID.
func (s *Server) PID() int { return s.p.PID() }

// Log is the server's log file.
func (s *Server) Log() string { return filepath.Join(s.Dir, "logs", "seaweedfs.log") }

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}
