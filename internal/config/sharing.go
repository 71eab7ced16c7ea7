package config

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Sharing configures Buckety spec.sharing on a backend: whether owners may
// let accesses of other namespaces use their resources, and between which
// namespaces.
type Sharing struct {
	// Allow lets Bucketies on this backend set spec.sharing. Default true:
	// nothing is shared unless the owner's Buckety says so.
	Allow *bool `json:"allow,omitempty"`
	// NamespaceSelector, when set, limits sharing to namespaces with
	// these labels, on both sides: a Buckety of a namespace it does not
	// select shares with no one, and an access of a namespace it does not
	// select uses no other namespace's Buckety.
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
}

func (b *Backend) validateSharing(p *field.Path) field.ErrorList {
	if b.Sharing == nil || b.Sharing.NamespaceSelector == nil {
		return nil
	}
	if _, err := metav1.LabelSelectorAsSelector(b.Sharing.NamespaceSelector); err != nil {
		return field.ErrorList{field.Invalid(p.Child("namespaceSelector"), b.Sharing.NamespaceSelector, err.Error())}
	}
	return nil
}

// AllowsSharing reports whether Bucketies on b may set spec.sharing.
func (b *Backend) AllowsSharing() bool {
	return b.Sharing == nil || b.Sharing.Allow == nil || *b.Sharing.Allow
}

// SharingSelectsLabels reports whether sharing on b depends on namespace
// labels (sharing.namespaceSelector), so that they must be read.
func (b *Backend) SharingSelectsLabels() bool {
	return b.Sharing != nil && b.Sharing.NamespaceSelector != nil
}

// SharingRefusal says, naming the config key, why b does not let a
// Buckety of namespace owner (labels ownerLabels) share with namespace
// consumer (consumerLabels); "" when it does. The labels are read only
// where SharingSelectsLabels.
func (b *Backend) SharingRefusal(owner string, ownerLabels map[string]string, consumer string, consumerLabels map[string]string) string {
	if !b.AllowsSharing() {
		return fmt.Sprintf("backend %q does not allow sharing between namespaces: its configuration in buckety-controller.yaml sets sharing.allow: false", b.Name)
	}
	if !b.SharingSelectsLabels() {
		return ""
	}
	sel, err := metav1.LabelSelectorAsSelector(b.Sharing.NamespaceSelector)
	if err != nil {
		// Validated when the file loaded.
		return fmt.Sprintf("backend %q: sharing.namespaceSelector: %v", b.Name, err)
	}
	for _, side := range []struct {
		ns     string
		labels map[string]string
	}{{owner, ownerLabels}, {consumer, consumerLabels}} {
		if !sel.Matches(labels.Set(side.labels)) {
			return fmt.Sprintf("backend %q shares only between namespaces its sharing.namespaceSelector (%s) selects in buckety-controller.yaml, and namespace %s is not one", b.Name, sel, side.ns)
		}
	}
	return ""
}
