package v1alpha1

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// BucketyReference points at a Buckety: in the access's own namespace, or
// in another namespace whose Buckety shares it (spec.sharing).
type BucketyReference struct {
	// Namespace of the Buckety; omitted, the access's own. A Buckety of
	// another namespace must allow this namespace and the access's role
	// in its spec.sharing.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace,omitempty"`
	// Name of the Buckety.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// BucketyAccessSpec is one consumer's access to a Buckety, or to several.
// +kubebuilder:validation:XValidation:rule="has(self.bucketyRef) != has(self.bucketyRefs)",message="spec: set exactly one of bucketyRef (one Buckety) and bucketyRefs (several)"
// +kubebuilder:validation:XValidation:rule="has(self.bucketyRefs) == has(oldSelf.bucketyRefs)",message="spec.bucketyRef and spec.bucketyRefs are immutable: create a new BucketyAccess for other Bucketies"
type BucketyAccessSpec struct {
	// BucketyRef is the Buckety to access: in this namespace, or in
	// another whose Buckety shares it with this one. Immutable. Exactly
	// one of bucketyRef and bucketyRefs is set.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.bucketyRef is immutable: create a new BucketyAccess for another Buckety"
	BucketyRef BucketyReference `json:"bucketyRef,omitzero"`

	// BucketyRefs are several Bucketies of one backend to access with one
	// credential, each in this namespace or in another whose Buckety
	// shares it with this one; the controller config bounds how many
	// (limits.bucketyRefsPerAccess, at most 128). The Secret then names
	// every resource (topics and topic.<buckety>, buckets and
	// bucket.<buckety>; <namespace>_<name> for another namespace's) and
	// has no topic or bucket key. Immutable.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=128
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.bucketyRefs is immutable: create a new BucketyAccess for other Bucketies"
	BucketyRefs []BucketyReference `json:"bucketyRefs,omitempty"`

	// CredentialsSecretName is the Secret, in this namespace, that receives
	// the flat connection keys. Immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.credentialsSecretName is immutable: create a new BucketyAccess to write another Secret"
	CredentialsSecretName string `json:"credentialsSecretName"`

	// Role is what the consumer may do. Defaults to ReadWrite. Enforced on
	// a backend that issues credentials per access; elsewhere every role
	// gets the same credentials, reported as ScopingNotImplemented.
	// +optional
	// +kubebuilder:default=ReadWrite
	Role Role `json:"role,omitempty"`

	// Parameters are driver-specific access options, such as a Kafka
	// consumer-group prefix. Validated per driver.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 253 && size(self[k]) <= 4096)",message="spec.parameters: keys are at most 253 characters and values at most 4096"
	Parameters map[string]string `json:"parameters,omitempty"`

	// Rotation asks for a new credential on a backend that issues one per
	// access: set it, or change it, to any new value (a date, a counter).
	// The controller issues a new principal, writes it to the Secret, and
	// revokes the previous one after the backend's
	// credentials.rotationGrace, so a consumer that reloads its Secret
	// meanwhile never fails to authenticate. status.rotation records the
	// value honoured. No effect where credentials are not scoped.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Rotation string `json:"rotation,omitempty"`

	// SecretFormats adds shapes of the same credentials to the Secret,
	// besides its default keys, for clients that read a file or variables
	// of their own: kadm java (client.properties, sasl.jaas.config,
	// bootstrap.servers) and librdkafka (librdkafka.config); s3 aws-env
	// (AWS_* variables), aws-files (credentials and config), obc
	// (BUCKET_* and AWS_* keys of ObjectBucketClaims) and rclone
	// (rclone.conf). Validated per driver. Every shape is rewritten with
	// the default keys, at once, when the credentials change.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$`
	SecretFormats []string `json:"secretFormats,omitempty"`
}

// BucketyAccessStatus is what the controller observed and decided.
type BucketyAccessStatus struct {
	// The list is atomic, not a map keyed by type: only the controller
	// writes status, always the whole list, so per-condition field
	// ownership would only cost every status write about 1.5 KB of
	// managedFields and a fifth of its API-server time
	// (docs/performance.md, "Conditions as one atomic list").
	// +listType=atomic

	// Conditions: Ready, Reconciling, BackendUnavailable,
	// DriverVersionIncompatible, ScopingNotImplemented.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Principal is the backend-side identity of these credentials, when the
	// driver issues one.
	// +optional
	Principal string `json:"principal,omitempty"`

	// ObservedGeneration is the metadata.generation whose Secret is in sync.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Rotation is the spec.rotation value the current credential was
	// issued for.
	// +optional
	Rotation string `json:"rotation,omitempty"`

	// Secret is the version of the Secret spec.credentialsSecretName that
	// the controller last wrote, or read holding what it should: a
	// controller that starts finds a Secret still at this version (its
	// cache holds Secrets' metadata) already verified, and reads nothing.
	// Not recorded for an access with a credential of its own (a user or
	// key per access), whose Secret may hold a password its tenant chose.
	// +optional
	Secret *SecretVersion `json:"secret,omitempty"`

	// BucketyGeneration is the Buckety's metadata.generation the Secret was
	// last written for; the Buckety is Ready only when every access has
	// caught up with it.
	// +optional
	BucketyGeneration int64 `json:"bucketyGeneration,omitempty"`

	// Backend is the backend the access's Secret was last written for: a
	// grant holds its place under the access limits on that backend only,
	// not on another one a Buckety of the same name was made again on (its
	// finalizer stripped, deleted and applied again).
	// +optional
	Backend string `json:"backend,omitempty"`

	// BucketyUID is the metadata.uid of the Buckety the Secret was last
	// written for (the first, for an access naming several): a Buckety
	// deleted with its finalizer removed and made again under its name
	// starts at generation 1 again, and is not Ready on the Secret of the
	// one before.
	// +optional
	BucketyUID types.UID `json:"bucketyUID,omitempty"`

	// BucketyGenerations are, for an access naming several Bucketies,
	// each one's metadata.generation the Secret was last written for,
	// keyed by namespace/name (BucketyGeneration is the first's). Written
	// whole, by the controller alone: to the API server one field, not
	// one per Buckety, on every status write.
	// +optional
	// +mapType=atomic
	// +kubebuilder:validation:MaxProperties=128
	BucketyGenerations map[string]int64 `json:"bucketyGenerations,omitempty"`

	// Withdrawn lists, for an access naming several Bucketies, those of
	// other namespaces that no longer share with it (namespace/name): its
	// credential holds nothing on them and its Secret does not name them,
	// and they do not wait for it to be deleted.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=128
	Withdrawn []string `json:"withdrawn,omitempty"`
}

// SecretVersion is one version of an access's Secret, as the controller
// wrote or read it.
type SecretVersion struct {
	// UID is the Secret's metadata.uid.
	// +kubebuilder:validation:MaxLength=64
	UID string `json:"uid"`

	// ResourceVersion is the Secret's metadata.resourceVersion then.
	// +kubebuilder:validation:MaxLength=64
	ResourceVersion string `json:"resourceVersion"`

	// Digest is a SHA-256, in hex, of the access's UID and the Secret's
	// data then: what the controller compares with the data it would
	// write. The data itself is never in status.
	// +kubebuilder:validation:MaxLength=64
	Digest string `json:"digest"`
}

// BucketyAccess gives one consumer credentials for a Buckety, as a Secret
// with flat keys per driver (kadm: bootstrap, topic; s3: endpoint, bucket,
// region, accessKeyID, secretAccessKey).
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=bucketyaccesses,singular=bucketyaccess,shortName=bkya,categories=buckety-all
// +kubebuilder:printcolumn:name="Buckety",type=string,JSONPath=`.spec.bucketyRef.name`
// +kubebuilder:printcolumn:name="Bucketies",type=string,JSONPath=`.spec.bucketyRefs[*].name`,description="the Bucketies of an access naming several"
// +kubebuilder:printcolumn:name="From",type=string,JSONPath=`.spec.bucketyRef.namespace`,priority=1,description="the namespace of a Buckety another namespace shares"
// +kubebuilder:printcolumn:name="Secret",type=string,JSONPath=`.spec.credentialsSecretName`
// +kubebuilder:printcolumn:name="Role",type=string,JSONPath=`.spec.role`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Not-Scoped",type=string,JSONPath=`.status.conditions[?(@.type=="ScopingNotImplemented")].status`,priority=1,description="True: the credentials are broader than the role and parameters (the backend's own); the ScopingNotImplemented condition says why"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BucketyAccess struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec BucketyAccessSpec `json:"spec"`
	// +optional
	Status BucketyAccessStatus `json:"status,omitempty"`
}

// BucketyAccessList is a list of BucketyAccess.
// +kubebuilder:object:root=true
type BucketyAccessList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BucketyAccess `json:"items"`
}

// BucketyNamespace is the namespace of the Buckety the access names: its
// spec.bucketyRef.namespace, or its own. For an access naming several, the
// first's.
func (a *BucketyAccess) BucketyNamespace() string {
	return a.RefNamespace(a.FirstRef())
}

// Foreign is true when the access names a Buckety of another namespace
// (for an access naming several, when its first is).
func (a *BucketyAccess) Foreign() bool { return a.BucketyNamespace() != a.Namespace }

// Several is true when the access names several Bucketies
// (spec.bucketyRefs), even one.
func (a *BucketyAccess) Several() bool { return len(a.Spec.BucketyRefs) > 0 }

// Refs returns the Bucketies the access names: spec.bucketyRefs, or
// spec.bucketyRef alone.
func (a *BucketyAccess) Refs() []BucketyReference {
	if a.Several() {
		return a.Spec.BucketyRefs
	}
	return []BucketyReference{a.Spec.BucketyRef}
}

// FirstRef is the Buckety the access names, or the first of several.
func (a *BucketyAccess) FirstRef() BucketyReference {
	if a.Several() {
		return a.Spec.BucketyRefs[0]
	}
	return a.Spec.BucketyRef
}

// RefNamespace is the namespace of the Buckety r names: its namespace, or
// the access's own.
func (a *BucketyAccess) RefNamespace(r BucketyReference) string {
	if r.Namespace != "" {
		return r.Namespace
	}
	return a.Namespace
}

// RefKey names the Buckety r names in the Secret's per-resource keys: its
// name, or <namespace>_<name> for another namespace's (a name holds no
// underscore, so two Bucketies never share a key).
func (a *BucketyAccess) RefKey(r BucketyReference) string {
	if ns := a.RefNamespace(r); ns != a.Namespace {
		return ns + "_" + r.Name
	}
	return r.Name
}

// AnyForeign is true when the access names a Buckety of another
// namespace, among several or alone.
func (a *BucketyAccess) AnyForeign() bool {
	for _, r := range a.Refs() {
		if a.RefNamespace(r) != a.Namespace {
			return true
		}
	}
	return false
}

// Withdrawn reports whether the access, naming another namespace's
// Buckety, holds nothing on it any more: that Buckety stopped sharing with
// it (Ready False, reason NotShared) and the controller revoked its
// credentials and deleted its Secret. A withdrawn access does not hold its
// Buckety's deletion back.
//
// Whatever generation of the access the condition was written for: the
// Buckety an access names is immutable, and what holds rights is its
// principal and Secret, both gone. A consumer changing its spec.rotation
// faster than a pass kept its access from counting as withdrawn, and the
// owner's deletion waiting for as long as it kept writing.
func (a *BucketyAccess) Withdrawn() bool {
	if a.Several() || !a.Foreign() || a.Status.Principal != "" || a.Status.BucketyGeneration != 0 {
		return false
	}
	c := meta.FindStatusCondition(a.Status.Conditions, ConditionReady)
	return c != nil && c.Reason == ReasonNotShared
}

// WithdrawnFrom reports whether the access holds nothing on Buckety
// namespace/name any more, which stopped sharing with it: Withdrawn, or
// for an access naming several, listed in status.withdrawn.
func (a *BucketyAccess) WithdrawnFrom(namespace, name string) bool {
	if !a.Several() {
		return a.Withdrawn()
	}
	return slices.Contains(a.Status.Withdrawn, namespace+"/"+name)
}

// SecretUIDOf is the metadata.uid of Buckety namespace/name that the
// access's Secret was last written for: "" before it was, when a release
// that did not record it wrote it, or for an access naming several, but
// the first (each one's UID would make every write of an access naming
// 128 Bucketies 6 KiB larger).
func (a *BucketyAccess) SecretUIDOf(namespace, name string) types.UID {
	if refs := a.Refs(); !a.Several() || (len(refs) > 0 && a.RefNamespace(refs[0]) == namespace && refs[0].Name == name) {
		return a.Status.BucketyUID
	}
	return ""
}

// SecretGenerationOf is the metadata.generation of Buckety
// namespace/name that the access's Secret was last written for: 0 before
// it was.
func (a *BucketyAccess) SecretGenerationOf(namespace, name string) int64 {
	if !a.Several() {
		return a.Status.BucketyGeneration
	}
	return a.Status.BucketyGenerations[namespace+"/"+name]
}
