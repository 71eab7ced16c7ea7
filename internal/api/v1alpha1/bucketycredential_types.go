package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CredentialPhase is where an issued credential is in its life.
// +kubebuilder:validation:Enum=Minting;Active;Retiring
type CredentialPhase string

const (
	// CredentialMinting: the controller recorded its intent to issue the
	// principal, whose secret the service issues (IAM), and may have
	// created it on the backend; the access's Secret may not hold it yet.
	// A later pass finishes the issue with a new secret, or revokes it
	// when its access is gone.
	CredentialMinting CredentialPhase = "Minting"
	// CredentialActive: the principal is the access's, with the secret
	// whose digest the record holds. Where buckety mints the secret it is
	// recorded Active from the start: until the Secret holds that secret
	// (a crash in between), the next pass issues a new one for the same
	// principal, as for a Secret its tenant deleted.
	CredentialActive CredentialPhase = "Active"
	// CredentialRetiring: a newer credential of the access replaced this
	// one in the Secret (a rotation); it still works until retireAfter,
	// for consumers that have not reloaded the Secret, and is then
	// revoked.
	CredentialRetiring CredentialPhase = "Retiring"
)

// BucketyCredentialSpec records one principal the controller issued on a
// backend for one BucketyAccess.
type BucketyCredentialSpec struct {
	// Backend is the backend's name in buckety-controller.yaml.
	// +kubebuilder:validation:MinLength=1
	Backend string `json:"backend"`
	// Service is the backend's claim space (its `service`, by default its
	// name): one principal of one service has one record.
	// +kubebuilder:validation:MinLength=1
	Service string `json:"service"`
	// Principal is the user (Kafka SCRAM user, S3 access key) on the
	// service.
	// +kubebuilder:validation:MinLength=1
	Principal string `json:"principal"`
	// Resource is the topic or bucket the principal was granted on, so
	// that it can be revoked there after its access is gone (a bucket
	// policy names its principals).
	// +optional
	Resource string `json:"resource,omitempty"`
	// Owner is the BucketyAccess the principal was issued for.
	Owner ClaimOwner `json:"owner"`
	// BucketyUID is the UID of the Buckety the principal was granted on.
	// When that Buckety is gone (even with its finalizer removed by hand)
	// the principal is revoked, whatever state its access is in: a name
	// claimed again must not be reached by the old owner's key.
	// +optional
	BucketyUID string `json:"bucketyUID,omitempty"`
	// Claim is the BucketyClaim (by name) through which the Buckety held
	// the resource when the principal was granted. When the claim is gone
	// or changes owner, the principal is revoked.
	// +optional
	Claim string `json:"claim,omitempty"`
	// Resources are, for an access naming several Bucketies, every
	// resource the principal was granted on, each with its Buckety and
	// claim (Resource, BucketyUID and Claim are then the first's). When
	// one of those Bucketies or claims is gone, the principal is revoked.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=128
	Resources []CredentialResource `json:"resources,omitempty"`
	// Serial counts the access's credentials: 1, then one more per
	// rotation. The principal is derived from the access's UID and it.
	// +kubebuilder:validation:Minimum=1
	Serial int32 `json:"serial"`
	// Phase says whether the access's Secret holds the principal yet, or
	// no longer.
	Phase CredentialPhase `json:"phase"`
	// RetireAfter is when a Retiring credential is revoked.
	// +optional
	RetireAfter *metav1.Time `json:"retireAfter,omitempty"`
	// AccessGeneration is the access's metadata.generation when the
	// record was written. A Minting credential whose access is still at
	// it has nothing on the backend but what this issue makes, so the
	// issue creates its rights without reading them first.
	// +optional
	AccessGeneration int64 `json:"accessGeneration,omitempty"`
	// Rotation is the access's spec.rotation when the record was
	// written: the value its status.rotation takes once the Secret holds
	// this credential. A rotation asked for while this one was being
	// issued is not taken for done by it. Absent on records written by
	// earlier releases, and when spec.rotation was empty.
	// +optional
	Rotation string `json:"rotation,omitempty"`
	// Role is the access's role the principal was last granted
	// (ReadWrite when the access names none). A Retiring principal whose
	// role is wider than its access's now (the tenant narrowed it) is
	// revoked at once, not after rotationGrace. Absent on records written
	// by earlier releases, which keep their grace.
	// +optional
	Role Role `json:"role,omitempty"`
	// SecretDigest is the hex SHA-256 of the secret last asserted on the
	// backend for the principal (never the secret itself). A Secret read
	// afresh, after a restart, that still holds it is not asserted again;
	// one that holds another (edited by its tenant) is.
	// +optional
	SecretDigest string `json:"secretDigest,omitempty"`
}

// CredentialResource is one of the resources a principal of an access
// naming several Bucketies was granted on.
type CredentialResource struct {
	// Resource is the topic or bucket.
	// +kubebuilder:validation:MinLength=1
	Resource string `json:"resource"`
	// Buckety is the Buckety that holds it, as namespace/name.
	// +kubebuilder:validation:MinLength=3
	Buckety string `json:"buckety"`
	// BucketyUID is that Buckety's UID.
	// +kubebuilder:validation:MinLength=1
	BucketyUID string `json:"bucketyUID"`
	// Claim is the BucketyClaim through which it held the resource.
	// +kubebuilder:validation:MinLength=1
	Claim string `json:"claim"`
}

// BucketyCredential is the controller's own record of a principal it issued
// for an access: written before the principal is created on the backend,
// so that a crash between the two leaves a record the next pass finishes,
// or revokes when the access is gone, and so that a principal buckety did
// not record is never altered or deleted. Cluster-scoped and written only
// by the controller (tenants get no RBAC for it), like BucketyClaim; named
// by a hash of service and principal, so one principal has one record.
// The principal's secret is never here: the access's Secret is its only
// store.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,path=bucketycredentials,singular=bucketycredential,shortName=bkycred
// +kubebuilder:printcolumn:name="Backend",type=string,JSONPath=`.spec.backend`
// +kubebuilder:printcolumn:name="Principal",type=string,JSONPath=`.spec.principal`
// +kubebuilder:printcolumn:name="Owner-Namespace",type=string,JSONPath=`.spec.owner.namespace`
// +kubebuilder:printcolumn:name="Owner",type=string,JSONPath=`.spec.owner.name`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.spec.phase`
// +kubebuilder:printcolumn:name="Retire-After",type=date,JSONPath=`.spec.retireAfter`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BucketyCredential struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec BucketyCredentialSpec `json:"spec"`
}

// BucketyCredentialList is a list of BucketyCredential.
// +kubebuilder:object:root=true
type BucketyCredentialList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BucketyCredential `json:"items"`
}
