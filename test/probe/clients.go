package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// `probe clients KIND LIB` acts as a workload written with another client
// library would: it configures LIB from nothing but the Secret's keys and
// does what the Secret's role allows (PROBE_ROLE, ReadWrite when unset),
// and is refused what it does not. Workloads use many clients; a Secret
// that only franz-go and the probe's own S3 client can use is not yet a
// Secret workloads can use. One line per check ("clients: LIB CHECK ok"),
// then "probe: OK".
const clientsUsage = `usage: probe clients kafka sarama|franz-go
       probe clients s3 aws-sdk-go-v2|aws-env
The Secret is the environment (envFrom), or the files in PROBE_SECRET_DIR (a mounted Secret).
PROBE_ROLE ReadWrite|ReadOnly|WriteOnly; kafka: PROBE_NEIGHBOUR_TOPIC, PROBE_TOPIC_KEY (the key holding
the topic: topic when unset, topic.<buckety> of an access naming several); s3: PROBE_NEIGHBOUR_BUCKET,
PROBE_BUCKET_KEY (aws-sdk-go-v2: the key holding the bucket, bucket when unset), PROBE_SHARED=true (backend keys: no role refusals), PROBE_PATH_STYLE=true|false`

// clientsStepTimeout bounds each of one library's checks, as the host
// clients' scripts bound each command: a hung broker or server fails the
// probe, naming the check, rather than the scenario's timeout. Each check,
// not the whole run: a server under the load of the whole suite took 42 s
// for one 17 MiB multipart upload on two cores, and a bound on the sum
// failed a slow but working server.
const clientsStepTimeout = 120 * time.Second

// errNoProgress is the cause of a library's checks cancelled by their
// watchdog.
var errNoProgress = errors.New("no check finished")

// watchdog is a context cancelled with errNoProgress (naming d) when step
// has not been called for d: each finished check calls it.
func watchdog(ctx context.Context, d time.Duration) (_ context.Context, step func(), stop func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	t := time.AfterFunc(d, func() { cancel(fmt.Errorf("%w within %s", errNoProgress, d)) })
	return ctx, func() { t.Reset(d) }, func() { t.Stop(); cancel(nil) }
}

// clients runs `probe clients KIND LIB`, the probe's settings read with
// getenv (the process environment).
func clients(ctx context.Context, args []string, getenv func(string) string) error {
	if len(args) != 2 {
		return errors.New(clientsUsage)
	}
	secret, err := secretSource(getenv)
	if err != nil {
		return err
	}
	ctx, step, stop := watchdog(ctx, clientsStepTimeout)
	defer stop()
	last := time.Now()
	out := func(check string) {
		step()
		fmt.Printf("clients: %s %s (%s)\n", args[1], check, time.Since(last).Round(time.Millisecond))
		last = time.Now()
	}
	var summary string
	switch args[0] {
	case "kafka":
		var c kafkaClient
		switch args[1] {
		case "sarama":
			c, err = newSaramaClient(secret)
		case "franz-go":
			c, err = newFranzClient(secret)
		default:
			return fmt.Errorf("unknown kafka client %q\n%s", args[1], clientsUsage)
		}
		if err != nil {
			return fmt.Errorf("%s from the Secret: %w", args[1], err)
		}
		summary, err = kafkaClientChecks(ctx, args[1], c, secret, out)
	case "s3":
		summary, err = s3ClientChecks(ctx, args[1], secret, out)
	default:
		return fmt.Errorf("unknown client kind %q\n%s", args[0], clientsUsage)
	}
	if err != nil {
		if cause := context.Cause(ctx); cause != nil {
			err = fmt.Errorf("%w (%s: %v)", err, args[1], cause)
		}
		return fmt.Errorf("clients %s %s: %w", args[0], args[1], err)
	}
	fmt.Printf("probe: OK: clients %s %s: %s\n", args[0], args[1], summary)
	return nil
}

// secretSource is where a Secret's keys are read, as a getenv: the process
// environment (getenv itself: the Secret as envFrom, where Kubernetes sets
// every key, sasl.username too, though a shell could not), or, with
// PROBE_SECRET_DIR, the files of the Secret mounted as a volume, one per
// key. A file's content is the value as it is, trailing newline and all,
// as a workload reading it gets it. The probe's own settings (PROBE_*)
// always come from the environment, and in a directory a key has no
// fallback to the environment: a key missing from the volume is missing.
func secretSource(getenv func(string) string) (func(string) string, error) {
	dir := getenv("PROBE_SECRET_DIR")
	if dir == "" {
		return getenv, nil
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("PROBE_SECRET_DIR %s: want the directory of a mounted Secret (%v)", dir, err)
	}
	return func(key string) string {
		if strings.HasPrefix(key, "PROBE_") {
			return getenv(key)
		}
		// Secret keys are [-._a-zA-Z0-9]+, never . or .. or ..*; the
		// volume's own entries (..data, ..2024_…) are not keys.
		if key == "" || strings.ContainsRune(key, '/') || strings.HasPrefix(key, "..") || key == "." {
			return ""
		}
		b, err := os.ReadFile(filepath.Join(dir, key))
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				fmt.Fprintf(os.Stderr, "probe: Secret key %s in %s: %v\n", key, dir, err)
			}
			return ""
		}
		return string(b)
	}, nil
}

// roleOf is PROBE_ROLE, ReadWrite when unset.
func roleOf(getenv func(string) string) (string, error) {
	switch role := getenv("PROBE_ROLE"); role {
	case "":
		return "ReadWrite", nil
	case "ReadWrite", "ReadOnly", "WriteOnly":
		return role, nil
	default:
		return "", fmt.Errorf("PROBE_ROLE %q: want ReadWrite, ReadOnly or WriteOnly", role)
	}
}

// within runs f, which cannot be cancelled (sarama's producers take no
// context), and returns its error, or ctx's when ctx ends first; f then
// finishes in the background, which a probe about to exit can afford.
func within(ctx context.Context, what string, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", what, ctx.Err())
	}
}
