package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClaimPhase is how far a BucketyClaim's owner has come with the backend
// resource. It only moves forward: Claimed -> Creating -> Created,
// Claimed -> Adopted, or Claimed -> Adopting -> Adopted.
// +kubebuilder:validation:Enum=Claimed;Creating;Created;Adopting;Adopted
type ClaimPhase string

const (
	// ClaimClaimed: the name is reserved for the owner; nothing was written
	// to the backend on its behalf yet, so the claim can be given up freely.
	ClaimClaimed ClaimPhase = "Claimed"
	// ClaimCreating: the controller recorded its intent to create the
	// resource and may have created it. It is treated as Created: a crash
	// between the create and the next write must not turn a resource buckety
	// created into one it merely adopted.
	ClaimCreating ClaimPhase = "Creating"
	// ClaimCreated: the driver reported that it created the resource.
	ClaimCreated ClaimPhase = "Created"
	// ClaimAdopting: the resource existed before the owner claimed it and
	// the owner asked to adopt it (spec.adoption); the adoption is not
	// settled yet: nothing is written to the resource while it differs
	// from the owner's parameters, unless the owner asks to converge.
	ClaimAdopting ClaimPhase = "Adopting"
	// ClaimAdopted: the resource existed (empty) before the owner claimed it,
	// or appeared between the check and the create, or an adoption the
	// owner asked for settled. It is managed like a created resource, but
	// retentionPolicy Delete deletes it only when the backend's
	// adoption.deleteAdopted says so.
	ClaimAdopted ClaimPhase = "Adopted"
)

// ClaimOwnerLabel holds the UID of a claim's owning Buckety, so every claim
// of one Buckety can be found and released.
const ClaimOwnerLabel = "buckety.yolean.se/owner-uid"

// BucketyClaimSpec records which Buckety owns one backend resource and how
// it came to own it.
type BucketyClaimSpec struct {
	// Backend is the backend's name in buckety-controller.yaml.
	// +kubebuilder:validation:MinLength=1
	Backend string `json:"backend"`
	// ResourceName is the topic or bucket name on that backend.
	// +kubebuilder:validation:MinLength=1
	ResourceName string `json:"resourceName"`
	// Owner is the Buckety holding the claim.
	Owner ClaimOwner `json:"owner"`
	// Phase says whether buckety created the resource (only then does
	// retentionPolicy Delete delete it).
	Phase ClaimPhase `json:"phase"`
}

// ClaimOwner identifies a Buckety across deletions and re-creations.
type ClaimOwner struct {
	// Namespace and Name of the Buckety.
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// UID of the Buckety; a Buckety re-created with the same name is another
	// owner.
	UID string `json:"uid"`
}

// BucketyClaim is the controller's own record that a Buckety owns a backend
// resource. Claims are cluster-scoped and written only by the controller
// (tenants get no RBAC for them), so a claim is the record a destructive
// action trusts, never a tenant-writable status field. One claim per
// backend resource, named by a hash of backend and resource name: the API
// server's name uniqueness makes claiming atomic across controller replicas
// and leader hand-overs, whatever their caches hold.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,path=bucketyclaims,singular=bucketyclaim,shortName=bkyc
// +kubebuilder:printcolumn:name="Backend",type=string,JSONPath=`.spec.backend`
// +kubebuilder:printcolumn:name="Resource",type=string,JSONPath=`.spec.resourceName`
// +kubebuilder:printcolumn:name="Owner-Namespace",type=string,JSONPath=`.spec.owner.namespace`
// +kubebuilder:printcolumn:name="Owner",type=string,JSONPath=`.spec.owner.name`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.spec.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BucketyClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec BucketyClaimSpec `json:"spec"`
}

// BucketyClaimList is a list of BucketyClaim.
// +kubebuilder:object:root=true
type BucketyClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BucketyClaim `json:"items"`
}
