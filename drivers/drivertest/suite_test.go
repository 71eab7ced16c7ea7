package drivertest_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/drivertest"
)

// TestSuiteOnMemoryBackend runs the conformance suite on the test driver and
// its in-memory Backend: the suite's own test. The in-memory service is no
// real server, so it proves the suite's checks hold for a backend that
// keeps the contract, not that any driver does; and with per-access tokens
// it runs the credentials checks, which no driver in v1alpha1 reaches.
func TestSuiteOnMemoryBackend(t *testing.T) {
	for _, perAccess := range []bool{false, true} {
		t.Run(fmt.Sprintf("per-access %v", perAccess), func(t *testing.T) {
			d := &drivertest.Driver{}
			if perAccess {
				d.Keys = append(d.SecretKeys(), drivers.SecretKey{Name: "token", Description: "The access's own token.", Optional: true})
			}
			s := &drivertest.Suite{
				Driver: d,
				Names: []drivertest.NameCase{
					{Name: "orders"},
					{Name: "", Errs: []string{"must be 1 to 20 characters"}},
					{Name: "Orders", Errs: []string{"only lowercase letters"}},
				},
				Parameters: []drivertest.ParametersCase{
					{Name: "size", New: map[string]string{"size": "3"}},
					{Name: "not positive", New: map[string]string{"size": "0"}, Errs: []string{`spec.parameters[size]: Invalid value: "0"`}},
					{Name: "unknown and immutable", Old: map[string]string{"size": "3"}, New: map[string]string{"colour": "red"},
						Errs: []string{"spec.parameters[colour]: Unsupported value", "spec.parameters[size]: Forbidden: is immutable"}},
				},
				Accesses: []drivertest.AccessCase{
					{Name: "read-write", Role: "ReadWrite"},
					{Name: "read-only", Role: "ReadOnly", Warns: []string{"role ReadOnly is not enforced"}},
				},
				Configs: []drivertest.ConfigCase{
					{Name: "minimal", Config: &drivertest.Config{Endpoint: "test://x"}},
					{Name: "empty", Config: &drivertest.Config{Limit: -1}, Errs: []string{"config.endpoint: Required value", "config.limit: Invalid value: -1"}},
				},
				Grants: []drivertest.GrantCase{
					{Name: "read-write", Access: drivers.Access{Resource: "r1", Role: "ReadWrite"}, Want: map[string]string{"resource": "r1"}, PerAccess: true},
					{Name: "read-only", Access: drivers.Access{Resource: "r2", Role: "ReadOnly"}, Want: map[string]string{"resource": "r2"}},
				},
				Services: []drivertest.Service{{
					Name:          "memory",
					Open:          func(t *testing.T, timeout time.Duration) *drivertest.Target { return openMemory(t, timeout, perAccess) },
					Params:        map[string]string{"size": "1"},
					CreateChange:  "created %s",
					ContentDetail: "holds 1 records",
					Steps: []drivertest.Step{
						{Params: map[string]string{"size": "2"}, Changes: []string{"parameters map[size:1] -> map[size:2]"}},
						{Params: map[string]string{"size": "3"}},
					},
				}},
			}
			if perAccess {
				for i := range s.Grants {
					s.Grants[i].Want["token"] = ""
				}
			}
			s.Run(t)
		})
	}
}

// memory wraps the in-memory Backend as a server would be seen: requests
// counted as reads or writes, a timeout on each call, and optionally a token
// per access.
type memory struct {
	*drivertest.Backend
	requests *drivertest.Requests
	timeout  time.Duration

	perAccess bool
	mu        sync.Mutex
	tokens    map[string]string
}

func openMemory(t *testing.T, timeout time.Duration, perAccess bool) *drivertest.Target {
	m := &memory{Backend: drivertest.NewBackend(), timeout: timeout, perAccess: perAccess, tokens: map[string]string{},
		requests: &drivertest.Requests{IsWrite: func(op string) bool { return op == "write" }}}
	tg := &drivertest.Target{
		Backend:  m,
		Requests: m.requests,
		PutContent: func(t testing.TB, r drivers.Resource) {
			s, ok := m.Get(r.Name)
			if !ok {
				t.Fatalf("put content: %s does not exist", r.Name)
			}
			m.PutWith(r.Name, s.Records+1, s.Parameters)
		},
		Snapshot: func(_ testing.TB, r drivers.Resource) string {
			s, ok := m.Get(r.Name)
			return fmt.Sprint(ok, s)
		},
		SecretData: map[string]string{"endpoint": "test://service"},
		// A stopped server refuses connections: every call fails at once.
		Stop: func() error {
			m.FailNext(drivertest.Unavailable(), drivertest.Unavailable(), drivertest.Unavailable())
			return nil
		},
	}
	if perAccess {
		tg.UseCredentials = func(_ context.Context, a drivers.Access, data map[string][]byte) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			if tok, ok := m.tokens[principal(a)]; !ok || tok != string(data["token"]) {
				return errors.New("access denied")
			}
			return nil
		}
	}
	return tg
}

func principal(a drivers.Access) string { return a.Namespace + "/" + a.Name }

// call counts a request: a write when the stored resource changed.
func (m *memory) call(ctx context.Context, name string, op func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	before, had := m.Get(name)
	err := op(ctx)
	after, has := m.Get(name)
	if had != has || !reflect.DeepEqual(before, after) {
		m.requests.Add("write")
	} else {
		m.requests.Add("read")
	}
	return err
}

func (m *memory) Inspect(ctx context.Context, r drivers.Resource) (in drivers.Inspection, err error) {
	err = m.call(ctx, r.Name, func(ctx context.Context) error { in, err = m.Backend.Inspect(ctx, r); return err })
	return in, err
}

func (m *memory) Ensure(ctx context.Context, r drivers.Resource) (res drivers.EnsureResult, err error) {
	err = m.call(ctx, r.Name, func(ctx context.Context) error { res, err = m.Backend.Ensure(ctx, r); return err })
	return res, err
}

func (m *memory) Delete(ctx context.Context, r drivers.Resource) error {
	return m.call(ctx, r.Name, func(ctx context.Context) error { return m.Backend.Delete(ctx, r) })
}

func (m *memory) Grant(ctx context.Context, a drivers.Access) (drivers.Grant, error) {
	g, err := m.Backend.Grant(ctx, a)
	if err != nil || !m.perAccess {
		return g, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	p := principal(a)
	if _, ok := m.tokens[p]; !ok {
		m.tokens[p] = fmt.Sprintf("token-%d", len(m.tokens)+1)
	}
	g.Data["token"] = []byte(m.tokens[p])
	g.Principal = p
	return g, nil
}

func (m *memory) Revoke(ctx context.Context, a drivers.Access) error {
	if err := m.Backend.Revoke(ctx, a); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.tokens, principal(a))
	return nil
}
