package scale

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/Yolean/buckety-controller/test/harness"
)

// params size a run. The defaults are the bounded version `make test`
// runs; SCALE_FULL=1 (`make bench-scale`) selects issue 16's sizes; each
// knob can be set on its own:
//
//	SCALE_N               comma-separated Buckety counts, one fresh environment each (20; full 200,1000,3000)
//	SCALE_SECRETS         unrelated Secrets created before the controller starts (100; full 10000)
//	SCALE_DRIFTED         topics changed out of band (5; full 100)
//	SCALE_S3_N            s3 Bucketies on MinIO, in the first environment (3; full 100)
//	SCALE_SCOPED_N        the Ns whose environment also provisions N Bucketies on a kadm backend with per-access
//	                      SCRAM users and ACLs, compared with the unscoped figure of that N (20; full 1000)
//	SCALE_S3_SCOPED_N     accesses provisioned on MinIO with shared root keys and then with a key per access, in the
//	                      first environment, each size on its own (3; full 100,1000; empty for none)
//	SCALE_S3_IAM_N        the same on SeaweedFS, with an IAM user per access made through its IAM API (3; full 100: its
//	                      IAM costs in proportion to the users there, and 1000 do not fit the provisioning timeout;
//	                      empty for none, and then no SeaweedFS is started)
//	SCALE_S3_IAM_SWEEP_USERS credentials.sweepUsers of the IAM-user backend on SeaweedFS (0: the driver's default, 100)
//	SCALE_S3_VERSITY_N    the same on VersityGW, with a gateway user per access named in its bucket's policy (3; full
//	                      100,1000; empty for none, and then no VersityGW is started)
//	SCALE_WEBHOOK_REQS    dry-run creates timed through the API server (50; full 1000)
//	SCALE_FLOOR_OBJECTS   bare custom resources created to measure the API server's floor (100; full 2000)
//	SCALE_RECHECK         --recheck-interval of the restarted controller whose re-check is counted (3s; full 30s)
//	SCALE_MAIN_ARGS       extra flags of the first controller run and its cold start: provisioning, memory, webhook, revert
//	                      (--recheck-interval=3s; full: none, the controller's defaults)
//	SCALE_CONTROLLER_ARGS extra flags of every controller run, e.g. a sweep interval (none)
//	SCALE_CONTROLLER_ENV  extra environment of every controller run, as GOGC=50 GOMEMLIMIT=48MiB (none)
//	SCALE_REVERT_TIMEOUT  how long out-of-band changes may take to be reverted before the run fails (60s; full 7m)
//	SCALE_SHARE_REFS      the Bucketies one access names in the sharing rows (issue 54), timed against an access
//	                      naming one, on each kadm backend (16; full 128, the most an access may name; 0 for none)
//	SCALE_SHARE_REPS      accesses of each size timed one at a time in the sharing rows, the median reported (3; full 15)
//	SCALE_ONLY            "features": only issue 54's rows of new features (owner-record requests per create, the
//	                      sharing rows, the scoped phase's rebuild at SCALE_SCOPED_N, MinIO's owner records at SCALE_S3_N),
//	                      as featureRun lists them (default: every row)
//	SCALE_TABLE           also write the table to this file
//	SCALE_PROFILE_DIR     save the controller's heap profile at each N here (default: none)
type params struct {
	Ns             []int
	ScopedNs       map[int]bool
	S3ScopedNs     []int
	S3IAMNs        []int
	IAMSweepUsers  int
	S3VersityNs    []int
	Secrets        int
	Drifted        int
	S3N            int
	WebhookReqs    int
	FloorObjects   int
	Recheck        time.Duration
	MainArgs       []string
	ControllerArgs []string
	ControllerEnv  []string
	RevertTimeout  time.Duration
	ProfileDir     string
	ShareRefs      int
	ShareReps      int
	Only           string
}

func loadParams(t *testing.T) params {
	t.Helper()
	p := params{Ns: []int{20}, ScopedNs: map[int]bool{20: true}, S3ScopedNs: []int{3}, S3IAMNs: []int{3}, S3VersityNs: []int{3}, Secrets: 100, Drifted: 5, S3N: 3, WebhookReqs: 50, FloorObjects: 100,
		Recheck: 3 * time.Second, MainArgs: []string{"--recheck-interval=3s"}, RevertTimeout: 60 * time.Second, ShareRefs: 16, ShareReps: 3}
	if os.Getenv("SCALE_FULL") == "1" {
		p = params{Ns: []int{200, 1000, 3000}, ScopedNs: map[int]bool{1000: true}, S3ScopedNs: []int{100, 1000}, S3IAMNs: []int{100}, S3VersityNs: []int{100, 1000}, Secrets: 10000, Drifted: 100, S3N: 100, WebhookReqs: 1000, FloorObjects: 2000,
			Recheck: 30 * time.Second, RevertTimeout: 7 * time.Minute, ShareRefs: 128, ShareReps: 15}
	}
	if v := os.Getenv("SCALE_N"); v != "" {
		p.Ns = nil
		for _, s := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || n < 2 {
				t.Fatalf("SCALE_N=%q: want comma-separated integers of at least 2, as 200,1000,3000", v)
			}
			p.Ns = append(p.Ns, n)
		}
	}
	if v, ok := os.LookupEnv("SCALE_SCOPED_N"); ok {
		p.ScopedNs = map[int]bool{}
		for _, n := range positiveInts(t, "SCALE_SCOPED_N", v) {
			p.ScopedNs[n] = true
		}
	}
	if v, ok := os.LookupEnv("SCALE_S3_SCOPED_N"); ok {
		p.S3ScopedNs = positiveInts(t, "SCALE_S3_SCOPED_N", v)
	}
	if v, ok := os.LookupEnv("SCALE_S3_IAM_N"); ok {
		p.S3IAMNs = positiveInts(t, "SCALE_S3_IAM_N", v)
	}
	if v, ok := os.LookupEnv("SCALE_S3_VERSITY_N"); ok {
		p.S3VersityNs = positiveInts(t, "SCALE_S3_VERSITY_N", v)
	}
	harness.EnvInts(t, 0, map[string]*int{"SCALE_SECRETS": &p.Secrets, "SCALE_DRIFTED": &p.Drifted, "SCALE_S3_N": &p.S3N, "SCALE_WEBHOOK_REQS": &p.WebhookReqs, "SCALE_FLOOR_OBJECTS": &p.FloorObjects, "SCALE_SHARE_REFS": &p.ShareRefs, "SCALE_SHARE_REPS": &p.ShareReps, "SCALE_S3_IAM_SWEEP_USERS": &p.IAMSweepUsers})
	harness.EnvDurations(t, map[string]*time.Duration{"SCALE_RECHECK": &p.Recheck, "SCALE_REVERT_TIMEOUT": &p.RevertTimeout})
	if v, ok := os.LookupEnv("SCALE_MAIN_ARGS"); ok {
		p.MainArgs = strings.Fields(v)
	}
	p.ControllerArgs = strings.Fields(os.Getenv("SCALE_CONTROLLER_ARGS"))
	p.ControllerEnv = strings.Fields(os.Getenv("SCALE_CONTROLLER_ENV"))
	p.ProfileDir = os.Getenv("SCALE_PROFILE_DIR")
	switch p.Only = os.Getenv("SCALE_ONLY"); p.Only {
	case "", "features":
	default:
		t.Fatalf("SCALE_ONLY=%q: want empty (every row) or features", p.Only)
	}
	if p.ShareRefs > 128 || p.ShareReps < 1 {
		t.Fatalf("SCALE_SHARE_REFS: want 0 to 128 (the most an access may name); SCALE_SHARE_REPS: want at least 1")
	}
	if p.WebhookReqs < 2 || p.FloorObjects < 2 {
		t.Fatalf("SCALE_WEBHOOK_REQS and SCALE_FLOOR_OBJECTS: want at least 2")
	}
	return p
}

// positiveInts parses the comma-separated positive integers of the
// variable key (empty is none).
func positiveInts(t *testing.T, key, v string) []int {
	t.Helper()
	var out []int
	for _, s := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' }) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want comma-separated positive integers, or empty for none", key, v)
		}
		out = append(out, n)
	}
	return out
}

// row is one figure of the table.
type row struct {
	figure, n, value, goal, met, ratio string
}

// table collects the figures of a run.
type table struct {
	mu   sync.Mutex
	rows []row
	// noted are figures kept for a later row's ratio (the time to all
	// Ready at each N, for the linearity row), by a key of the run's
	// choosing (note, notedAs).
	noted map[string]time.Duration
}

// note records figure d under key, for a later row's ratio.
func (tb *table) note(key string, d time.Duration) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if tb.noted == nil {
		tb.noted = map[string]time.Duration{}
	}
	tb.noted[key] = d
}

// notedAs is the figure noted under key, if any.
func (tb *table) notedAs(key string) (time.Duration, bool) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	d, ok := tb.noted[key]
	return d, ok
}

// add records a figure. goal is empty when the issue sets none; met is then
// "—". ratio is empty when no floor bounds the figure.
func (tb *table) add(figure string, n int, value, goal string, met *bool, ratio string) {
	r := row{figure: figure, n: strconv.Itoa(n), value: value, goal: goal, met: "—", ratio: ratio}
	if n == 0 {
		r.n = "—"
	}
	if goal == "" {
		r.goal = "—"
	} else if met != nil {
		r.met = map[bool]string{true: "yes", false: "NO"}[*met]
	}
	if ratio == "" {
		r.ratio = "—"
	}
	tb.mu.Lock()
	tb.rows = append(tb.rows, r)
	tb.mu.Unlock()
	// Printed as it is measured, so a long run shows progress and a failed
	// one keeps what it got.
	fmt.Printf("scale: N=%s %s: %s (goal %s, met %s, ratio to floor %s)\n", r.n, r.figure, r.value, r.goal, r.met, r.ratio)
}

func (tb *table) String() string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "figure\tN\tvalue\tgoal\tmet?\tratio to floor")
	for _, r := range tb.rows {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", r.figure, r.n, r.value, r.goal, r.met, r.ratio)
	}
	if err := w.Flush(); err != nil {
		return err.Error()
	}
	return b.String()
}

// Markdown renders the table for the README.
func (tb *table) Markdown() string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	var b strings.Builder
	b.WriteString("| figure | N | value | goal | met? | ratio to floor |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, r := range tb.rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", r.figure, r.n, r.value, r.goal, r.met, r.ratio)
	}
	return b.String()
}

func ptr(b bool) *bool { return &b }

// secs formats a duration in seconds.
func secs(d time.Duration) string {
	if d < 10*time.Second {
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

// ms formats a duration in milliseconds.
func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

// ratio formats a/b.
func ratio(a, b float64) string {
	if b <= 0 {
		return ""
	}
	return fmt.Sprintf("%.1f×", a/b)
}
