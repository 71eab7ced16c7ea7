package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// BucketyAccessSpec is one consumer's access to a Buckety.
type BucketyAccessSpec struct {
	// BucketyRef is the Buckety to access: in this namespace, or in
	// another whose Buckety shares it with this one. Immutable.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.bucketyRef is immutable: create a new BucketyAccess for another Buckety"
	BucketyRef BucketyReference `json:"bucketyRef"`

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

	// BucketyGeneration is the Buckety's metadata.generation the Secret was
	// last written for; the Buckety is Ready only when every access has
	// caught up with it.
	// +optional
	BucketyGeneration int64 `json:"bucketyGeneration,omitempty"`
}

// BucketyAccess gives one consumer credentials for a Buckety, as a Secret
// with flat keys per driver (kadm: bootstrap, topic; s3: endpoint, bucket,
// region, accessKeyID, secretAccessKey).
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=bucketyaccesses,singular=bucketyaccess,shortName=bkya,categories=buckety-all
// +kubebuilder:printcolumn:name="Buckety",type=string,JSONPath=`.spec.bucketyRef.name`
// +kubebuilder:printcolumn:name="From",type=string,JSONPath=`.spec.bucketyRef.namespace`,priority=1,description="the namespace of a Buckety another namespace shares"
// +kubebuilder:printcolumn:name="Secret",type=string,JSONPath=`.spec.credentialsSecretName`
// +kubebuilder:printcolumn:name="Role",type=string,JSONPath=`.spec.role`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
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
// spec.bucketyRef.namespace, or its own.
func (a *BucketyAccess) BucketyNamespace() string {
	if a.Spec.BucketyRef.Namespace != "" {
		return a.Spec.BucketyRef.Namespace
	}
	return a.Namespace
}

// Foreign is true when the access names a Buckety of another namespace.
func (a *BucketyAccess) Foreign() bool { return a.BucketyNamespace() != a.Namespace }

// Withdrawn reports whether the access, naming another namespace's
// Buckety, holds nothing on it any more: that Buckety stopped sharing with
// it (Ready False, reason NotShared, for its current generation) and the
// controller revoked its credentials and deleted its Secret. A withdrawn
// access does not hold its Buckety's deletion back.
func (a *BucketyAccess) Withdrawn() bool {
	if !a.Foreign() || a.Status.Principal != "" || a.Status.BucketyGeneration != 0 {
		return false
	}
	c := meta.FindStatusCondition(a.Status.Conditions, ConditionReady)
	return c != nil && c.Reason == ReasonNotShared && c.ObservedGeneration == a.Generation
}
