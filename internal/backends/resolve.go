package backends

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// Sticky is what a Buckety's status froze at first reconcile.
type Sticky struct {
	Backend     string
	Driver      string
	DriverMajor *int64
}

// Problem says why a resource's backend cannot be reconciled now.
type Problem struct {
	// Condition is the condition type it raises (BackendUnavailable or
	// DriverVersionIncompatible).
	Condition string
	// Reason and Message explain it.
	Reason, Message string
}

// Resolve finds the backend a resource reconciles against: its sticky
// backend once stamped (spec.backend before), with the same driver and a
// driver major equal to the stamped one. Both kinds report a problem with
// the same condition types and reasons.
func Resolve(set *Set, specBackend string, st Sticky) (*Entry, *Problem) {
	const (
		conditionBackend = v1.ConditionBackendUnavailable
		conditionVersion = v1.ConditionDriverVersionIncompatible
		reasonMissing    = v1.ReasonBackendNotConfigured
		reasonDriver     = v1.ReasonDriverChanged
		reasonMajor      = v1.ReasonDriverMajorMismatch
	)
	name := specBackend
	if st.Backend != "" {
		name = st.Backend
	}
	e, ok := set.Get(name)
	if !ok {
		return nil, &Problem{Condition: conditionBackend, Reason: reasonMissing,
			Message: fmt.Sprintf("backend %q is not in the controller config (backends: %v); reconciliation is paused until the maintainer restores it or migrates this resource", name, set.Names())}
	}
	if st.Driver != "" && e.Driver.Name() != st.Driver {
		return nil, &Problem{Condition: conditionBackend, Reason: reasonDriver,
			Message: fmt.Sprintf("backend %q now uses driver %s, but this resource was provisioned with driver %s; reconciliation is paused", name, e.Driver.Name(), st.Driver)}
	}
	if st.DriverMajor != nil && e.Driver.Version().Major != *st.DriverMajor {
		return nil, &Problem{Condition: conditionVersion, Reason: reasonMajor,
			Message: fmt.Sprintf("driver %s is version %s (major %d), but this resource was provisioned with major %d; reconciliation is paused and nothing is written to the backend until a compatible controller runs or the resource is migrated", e.Driver.Name(), e.Driver.Version(), e.Driver.Version().Major, *st.DriverMajor)}
	}
	return e, nil
}

// ForNamespace is e as namespace ns sees it: e itself, or a copy whose
// Config carries the limits an entry of the backend's limits.namespaces
// gives ns (config.Backend.ForNamespace). The namespace's labels are
// read through r only where an entry selects by label.
func ForNamespace(ctx context.Context, r client.Reader, e *Entry, ns string) (*Entry, error) {
	if e.Config.Limits == nil || len(e.Config.Limits.Namespaces) == 0 {
		return e, nil
	}
	var lbls map[string]string
	if e.Config.UsesNamespaceLabels() {
		n := &corev1.Namespace{}
		if err := r.Get(ctx, client.ObjectKey{Name: ns}, n); err != nil {
			return nil, fmt.Errorf("read the labels of namespace %s, which backend %s's limits.namespaces select by: %w", ns, e.Name, err)
		}
		lbls = n.Labels
	}
	cfg := e.Config.ForNamespace(ns, lbls)
	if cfg == e.Config {
		return e, nil
	}
	c := *e
	c.Config = cfg
	return &c, nil
}
