package drivertest

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/Yolean/buckety-controller/drivers"
)

// Backend is an in-memory service for the test driver. Resources are names
// with parameters and a count of records; a test can make it hang, fail the
// next calls, or hold content, and reads what was called.
type Backend struct {
	mu        sync.Mutex
	resources map[string]*Stored
	hang      bool
	fail      []error
	calls     map[string]int
	// BeforeEnsure, when set, runs at the start of every Ensure, to make
	// something happen between Inspect and Ensure.
	BeforeEnsure func(name string)
	// Shortfalls are reported by every Ensure.
	Shortfalls []drivers.Shortfall

	lastResource map[string]drivers.Resource
	lastAccess   map[string]drivers.Access
}

// LastResource is the Resource the last call of op ("inspect", "ensure",
// "delete") was given.
func (b *Backend) LastResource(op string) drivers.Resource {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lastResource[op]
}

// LastAccess is the Access the last call of op ("grant", "revoke") was
// given.
func (b *Backend) LastAccess(op string) drivers.Access {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lastAccess[op]
}

func (b *Backend) saw(op string, r *drivers.Resource, a *drivers.Access) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lastResource == nil {
		b.lastResource, b.lastAccess = map[string]drivers.Resource{}, map[string]drivers.Access{}
	}
	if r != nil {
		b.lastResource[op] = *r
	}
	if a != nil {
		b.lastAccess[op] = *a
	}
}

// Stored is one resource on the Backend.
type Stored struct {
	Parameters map[string]string
	// Records is its content; non-zero means adoption is refused.
	Records int
}

// NewBackend returns an empty Backend.
func NewBackend() *Backend {
	return &Backend{resources: map[string]*Stored{}, calls: map[string]int{}}
}

// Put stores a resource as if someone created it out of band.
func (b *Backend) Put(name string, records int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.resources[name] = &Stored{Records: records}
}

// PutWith stores a resource with parameters, as if someone created and
// configured it out of band.
func (b *Backend) PutWith(name string, records int, params map[string]string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.resources[name] = &Stored{Records: records, Parameters: params}
}

// Get returns a stored resource.
func (b *Backend) Get(name string) (Stored, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.resources[name]
	if !ok {
		return Stored{}, false
	}
	return *r, true
}

// Hang makes every call block until its context ends, like a hung server.
func (b *Backend) Hang(on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.hang = on
}

// FailNext makes the next calls return these errors, one each.
func (b *Backend) FailNext(errs ...error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fail = append(b.fail, errs...)
}

// Calls counts the calls of one operation ("inspect", "ensure", "delete",
// "grant", "revoke").
func (b *Backend) Calls(op string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls[op]
}

// Unavailable is the error a hung or down Backend returns.
func Unavailable() error {
	return &drivers.UnavailableError{Backend: "test", Err: errors.New("i/o timeout")}
}

func (b *Backend) enter(ctx context.Context, op string) error {
	b.mu.Lock()
	b.calls[op]++
	hang := b.hang
	var err error
	if len(b.fail) > 0 {
		err, b.fail = b.fail[0], b.fail[1:]
	}
	b.mu.Unlock()
	if hang {
		<-ctx.Done()
		return Unavailable()
	}
	return err
}

// Inspect implements drivers.Backend.
func (b *Backend) Inspect(ctx context.Context, r drivers.Resource) (drivers.Inspection, error) {
	b.saw("inspect", &r, nil)
	if err := b.enter(ctx, "inspect"); err != nil {
		return drivers.Inspection{Exists: true, HasContent: true, Detail: "cannot tell: " + err.Error()}, err
	}
	s, ok := b.Get(r.Name)
	switch {
	case !ok:
		return drivers.Inspection{}, nil
	case s.Records > 0:
		return drivers.Inspection{Exists: true, HasContent: true, Detail: fmt.Sprintf("%s holds %d records", r.Name, s.Records)}, nil
	}
	return drivers.Inspection{Exists: true, Detail: r.Name + " is empty"}, nil
}

// Ensure implements drivers.Backend.
func (b *Backend) Ensure(ctx context.Context, r drivers.Resource) (drivers.EnsureResult, error) {
	b.saw("ensure", &r, nil)
	if err := b.enter(ctx, "ensure"); err != nil {
		return drivers.EnsureResult{}, err
	}
	if b.BeforeEnsure != nil {
		b.BeforeEnsure(r.Name)
	}
	b.mu.Lock()
	res := drivers.EnsureResult{Shortfalls: b.Shortfalls}
	s, ok := b.resources[r.Name]
	var differs bool
	if ok {
		differs = fmt.Sprint(s.Parameters) != fmt.Sprint(r.Parameters)
	}
	b.mu.Unlock()
	switch {
	case !ok && r.DryRun:
		res.Changes = []string{"created " + r.Name}
		return res, nil
	case ok && r.CreateOnly:
		return res, nil
	case ok && r.DryRun:
		if differs {
			res.Changes = []string{fmt.Sprintf("parameters %v -> %v", s.Parameters, r.Parameters)}
		}
		return res, nil
	case ok && !differs:
		return res, nil
	}
	// A write follows: a create or a parameter change.
	if r.BeforeWrite != nil {
		if err := r.BeforeWrite(ctx); err != nil {
			return res, err
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls["write"]++
	s, ok = b.resources[r.Name]
	if !ok {
		s = &Stored{}
		b.resources[r.Name] = s
		res.Created = true
		res.Changes = []string{"created " + r.Name}
	} else if fmt.Sprint(s.Parameters) != fmt.Sprint(r.Parameters) {
		res.Changes = append(res.Changes, fmt.Sprintf("parameters %v -> %v", s.Parameters, r.Parameters))
	}
	s.Parameters = r.Parameters
	return res, nil
}

// Delete implements drivers.Backend.
func (b *Backend) Delete(ctx context.Context, r drivers.Resource) error {
	b.saw("delete", &r, nil)
	if err := b.enter(ctx, "delete"); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.resources, r.Name)
	return nil
}

// Grant implements drivers.Backend: the payload names the resource.
func (b *Backend) Grant(ctx context.Context, a drivers.Access) (drivers.Grant, error) {
	b.saw("grant", nil, &a)
	if err := b.enter(ctx, "grant"); err != nil {
		return drivers.Grant{}, err
	}
	return drivers.Grant{Data: map[string][]byte{"endpoint": []byte("test://service"), "resource": []byte(a.Resource)}, PerAccess: a.Role.OrDefault() == drivers.RoleReadWrite}, nil
}

// Revoke implements drivers.Backend.
func (b *Backend) Revoke(ctx context.Context, a drivers.Access) error {
	b.saw("revoke", nil, &a)
	return b.enter(ctx, "revoke")
}

// Close implements drivers.Backend.
func (b *Backend) Close() error { return nil }
