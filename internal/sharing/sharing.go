// Package sharing decides whether a Buckety lets a BucketyAccess of another
// namespace use its resource: the owner's consent (the Buckety's
// spec.sharing) within what the backend's configuration allows (its
// sharing block). The webhook decides with it at admission and the
// controller on every pass, so that both say the same.
package sharing

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/config"
)

// Grants reports whether one of b's spec.sharing rules lets namespace ns
// (with labels nsLabels) take role. A Buckety never shares with its own
// namespace through a rule: its own accesses need none.
func Grants(b *v1.Buckety, ns string, nsLabels map[string]string, role v1.Role) bool {
	role = orDefault(role)
	for i := range b.Spec.Sharing {
		r := &b.Spec.Sharing[i]
		if slices.Contains(r.Roles, role) && selects(r, ns, nsLabels) {
			return true
		}
	}
	return false
}

// selects reports whether rule r names namespace ns.
func selects(r *v1.SharingRule, ns string, nsLabels map[string]string) bool {
	if r.NamespaceSelector == nil {
		return r.Namespace == ns
	}
	sel, err := metav1.LabelSelectorAsSelector(r.NamespaceSelector)
	// An invalid selector (the webhook refuses one) selects nothing.
	return err == nil && sel.Matches(labels.Set(nsLabels))
}

// usesLabels reports whether a rule of b selects by label.
func usesLabels(b *v1.Buckety) bool {
	return slices.ContainsFunc(b.Spec.Sharing, func(r v1.SharingRule) bool { return r.NamespaceSelector != nil })
}

func orDefault(r v1.Role) v1.Role {
	if r == "" {
		return v1.RoleReadWrite
	}
	return r
}

// Refusal says why Buckety b, on backend be, does not let an access of
// namespace ns take role: what the owner or the platform would have to
// change. "" when it does. ownerLabels and nsLabels are the two
// namespaces' labels (read only where NeedsLabels).
//
// The owner's rules are checked first, and their refusal is the one a
// missing Buckety gets (NotShared): a tenant learns nothing of another
// namespace's Bucketies by naming them, not even whether they exist. Only
// where the owner consents does the backend's refusal say more.
func Refusal(be *config.Backend, b *v1.Buckety, ownerLabels map[string]string, ns string, nsLabels map[string]string, role v1.Role) string {
	role = orDefault(role)
	if !Grants(b, ns, nsLabels, role) {
		return NotShared(b.Namespace, b.Name, ns, role)
	}
	return be.SharingRefusal(b.Namespace, ownerLabels, ns, nsLabels)
}

// NotShared says that Buckety owner/name does not share role with
// namespace ns, and what its owner would add; the same words whether or
// not the Buckety exists.
func NotShared(owner, name, ns string, role v1.Role) string {
	role = orDefault(role)
	return fmt.Sprintf("Buckety %s/%s does not exist or does not share role %s with namespace %s: its owner adds {namespace: %s, roles: [%s]} to the Buckety's spec.sharing", owner, name, role, ns, ns, role)
}

// NeedsLabels reports whether Refusal reads namespace labels for b on be.
func NeedsLabels(be *config.Backend, b *v1.Buckety) bool {
	return be.SharingSelectsLabels() || usesLabels(b)
}

// Check is Refusal with the namespaces' labels read through r, where they
// matter.
func Check(ctx context.Context, r client.Reader, be *config.Backend, b *v1.Buckety, ns string, role v1.Role) (string, error) {
	var ownerLabels, nsLabels map[string]string
	if NeedsLabels(be, b) {
		var err error
		if ownerLabels, err = labelsOf(ctx, r, b.Namespace); err != nil {
			return "", err
		}
		if nsLabels, err = labelsOf(ctx, r, ns); err != nil {
			return "", err
		}
	}
	return Refusal(be, b, ownerLabels, ns, nsLabels, role), nil
}

// RulesRefusal is Check without a backend to judge by (its entry left the
// config, or its driver changed): what b's own spec.sharing rules say of
// namespace ns and role, "" when they let it in. The backend's sharing
// block may still refuse what the rules allow; it cannot allow what they
// refuse.
func RulesRefusal(ctx context.Context, r client.Reader, b *v1.Buckety, ns string, role v1.Role) (string, error) {
	var nsLabels map[string]string
	if usesLabels(b) {
		var err error
		if nsLabels, err = labelsOf(ctx, r, ns); err != nil {
			return "", err
		}
	}
	if !Grants(b, ns, nsLabels, orDefault(role)) {
		return NotShared(b.Namespace, b.Name, ns, role), nil
	}
	return "", nil
}

func labelsOf(ctx context.Context, r client.Reader, ns string) (map[string]string, error) {
	n := &corev1.Namespace{}
	if err := r.Get(ctx, client.ObjectKey{Name: ns}, n); err != nil {
		return nil, fmt.Errorf("read the labels of namespace %s, which sharing selects by: %w", ns, err)
	}
	return n.Labels, nil
}
