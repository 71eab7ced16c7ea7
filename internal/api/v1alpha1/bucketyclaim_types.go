package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClaimPhase is how far a BucketyClaim's owner has come with the backend
// resource: Created (recorded before the create), or Adopting -> Adopted;
// Claimed first for a claim taken over from a deleted owner. Created moves
// to Adopting only in the pass that recorded it, when the create found the
// resource made by someone else meanwhile (nothing was written to it).
// Creating is what older controllers recorded before the create (and
// Created after it); it is treated as Created.
// +kubebuilder:validation:Enum=Claimed;Creating;Created;Adopting;Adopted
type ClaimPhase string

const (
	// ClaimClaimed: the name is reserved for the owner; nothing was written
	// to the backend on its behalf yet, so the claim can be given up freely.
	ClaimClaimed ClaimPhase = "Claimed"
	// ClaimCreating: an older controller recorded its intent to create the
	// resource and may have created it. It is treated as Created (and
	// advanced to it): a crash between the create and the next write must
	// not turn a resource buckety created into one it merely adopted.
	ClaimCreating ClaimPhase = "Creating"
	// ClaimCreated: buckety creates the resource: recorded after the
	// adoption check found it missing and before the create, so a crash in
	// between cannot turn it into a resource buckety merely adopted. A
	// create the backend refuses outright made nothing: the claim is
	// Claimed again.
	ClaimCreated ClaimPhase = "Created"
	// ClaimAdopting: the resource existed before the owner claimed it; the
	// adoption is not settled yet: nothing is written to the resource while
	// it differs from the owner's parameters, unless both the backend
	// (adoption.allow) and the owner (spec.adoption AdoptAndConverge) ask
	// to converge it.
	ClaimAdopting ClaimPhase = "Adopting"
	// ClaimAdopted: the resource existed before the owner claimed it (or
	// appeared between the check and the create), and its adoption settled:
	// it matched the owner's parameters, or both keys asked to converge it.
	// It is managed like a created resource, but retentionPolicy Delete
	// deletes it only when the backend's adoption.deleteAdopted says so.
	ClaimAdopted ClaimPhase = "Adopted"
)

// ClaimOwnerLabel holds the UID of a claim's owning Buckety, so every claim
// of one Buckety can be found and released.
const ClaimOwnerLabel = "buckety.yolean.se/owner-uid"

// ClaimServiceUnprovenAnnotation ("true") marks a claim without
// spec.serviceID whose owner record the controller wrote itself on a
// service that reports an identity: that record, read back later (by this
// process, another replica or after a restart), proves nothing of which
// service the claim's resource is on (an upgrade rolled out together with
// the backend pointed at another cluster writes it there), so the claim
// is never stamped from it.
const ClaimServiceUnprovenAnnotation = "buckety.yolean.se/service-unproven"

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
	// Service is the claim space the claim was made in: the backend's
	// `service` in buckety-controller.yaml (by default its name). One
	// resource of one service has one claim, whichever backend names it.
	// Absent on claims made before services existed (their space is the
	// backend's name).
	// +optional
	Service string `json:"service,omitempty"`
	// Location holds the owner's parameters that select where the resource
	// lives (those its driver declares, as an R2 bucket's jurisdiction),
	// as they were when the claim was made. Every later backend call,
	// deletion included, is made with them, whatever the Buckety's
	// parameters say by then. A resource made with none of them set
	// records the one key "(none)".
	// +optional
	Location map[string]string `json:"location,omitempty"`
	// Budgeted is what the resource counts against its namespace's budget
	// on the backend (limits.partitions, diskBytes, quotaBytes), recorded
	// when the claim is made and before the resource grows, while the
	// namespace's budget is checked: the controller sums the claims, which
	// only it writes, so concurrent passes cannot each spend the same room.
	// Absent where the backend has no such budget (the owner's parameters
	// count instead).
	// +optional
	Budgeted *Budgeted `json:"budgeted,omitempty"`
	// Retained records that the resource stays on the backend after the
	// Buckety that wrote to it was deleted without deleting it
	// (retentionPolicy Retain, or a resource it may not delete), or lost
	// its finalizer: the claim stays, and keeps counting against that
	// Buckety's namespace (limits.perNamespace and its budgets), until a
	// cluster maintainer releases it (kubectl delete bucketyclaim) or a
	// new Buckety takes the resource over under the usual adoption rules.
	// A takeover keeps the record until the new owner has written to the
	// resource; one refused or given up reverts the claim to it.
	// +optional
	Retained *ClaimRetained `json:"retained,omitempty"`
	// OwnerRecorded records that the owner's record was written on the
	// resource itself (a bucket's tags), or read back from it naming the
	// owner, on a backend that keeps its owner records with the resources
	// (S3; not kadm, whose registry is kept apart). Such a record goes
	// with its resource: a resource of this name found later with no
	// record at all is not the one recorded (it was deleted out of band
	// and created again by someone else, or restored without its tags),
	// and buckety does not write its record to it, grant on it, drain it
	// or delete it; the owner reports it (ResourceReplaced). A cluster maintainer who knows
	// it is the owner's resource clears this field (kubectl patch
	// bucketyclaim NAME --type merge -p '{"spec":{"ownerRecorded":null}}')
	// to have buckety take it as it is; otherwise the resource is deleted
	// or renamed on the backend, and buckety creates the owner's again.
	// Cleared when the claim is taken over, its phase goes back to
	// Claimed or Adopting (the resource it is decided for is another), or
	// its owner creates the resource again.
	// +optional
	OwnerRecorded bool `json:"ownerRecorded,omitempty"`
	// ServiceID is the identity of the service the claim's resource was
	// created or adopted on, as its backend reports it (a Kafka cluster's
	// ID; backends whose driver cannot tell leave it out): recorded when
	// the claim is made, or, on a claim made before the field, once a
	// pass has read the owner's record on the resource there. A pass that
	// finds the backend reaching a service of another identity (its
	// seedBrokers pointed at another cluster) writes nothing on it: no
	// create, no parameter, no owner record, no grant, no drain, no
	// delete; the owner reports it (ServiceChanged). When the move is
	// intended and the resources were copied to the new service, a
	// cluster maintainer clears this field (kubectl patch bucketyclaim
	// NAME --type merge -p '{"spec":{"serviceID":null}}'); otherwise the
	// backend is pointed back.
	// +optional
	ServiceID string `json:"serviceID,omitempty"`
}

// ClaimRetained is the Buckety a resource was retained from.
type ClaimRetained struct {
	// Since is when the resource was retained.
	Since metav1.Time `json:"since"`
	// Owner is the Buckety that wrote to the resource, now deleted.
	Owner ClaimOwner `json:"owner"`
	// Phase is that owner's claim phase.
	Phase ClaimPhase `json:"phase"`
	// RecordUnmarked is true when the owner record on the backend still
	// holds the resource for that Buckety, not marked retained: its
	// backend was missing from buckety-controller.yaml when the Buckety
	// was deleted. A later Buckety of the same namespace and name takes it
	// as retained all the same (the adoption rules apply) and marks the
	// record then.
	// +optional
	RecordUnmarked bool `json:"recordUnmarked,omitempty"`
	// Backend, Service, Location and Budgeted are the claim's own fields
	// as that Buckety left them, recorded when another Buckety takes the
	// claim over: a takeover that is refused or given up before it writes
	// to the resource restores them with the owner, so what the resource
	// counts against the namespace it was retained from is what it
	// counted before, not what the Buckety that tried to take it asked
	// for. Absent on records made before they were kept.
	// +optional
	Backend string `json:"backend,omitempty"`
	// Service is the claim's service as that Buckety left it.
	// +optional
	Service string `json:"service,omitempty"`
	// Location is the claim's location as that Buckety left it.
	// +optional
	Location map[string]string `json:"location,omitempty"`
	// Budgeted is what the resource counted as that Buckety left it.
	// +optional
	Budgeted *Budgeted `json:"budgeted,omitempty"`
}

// Budgeted is what one resource counts against its namespace's budget.
type Budgeted struct {
	// Partitions of a topic.
	// +optional
	Partitions int64 `json:"partitions,omitempty"`
	// DiskBytes a topic may hold: (retention.bytes + segment.bytes +
	// max.message.bytes when it sets it) × partitions.
	// +optional
	DiskBytes int64 `json:"diskBytes,omitempty"`
	// QuotaBytes is a bucket's hard quota.
	// +optional
	QuotaBytes int64 `json:"quotaBytes,omitempty"`
}

// BucketyClaimStatus is what the controller observed about a claim.
type BucketyClaimStatus struct {
	// OwnerGoneSince is when the controller found the owning Buckety gone
	// while the claim remained: its finalizer was removed by hand, so
	// buckety never released the claim or applied its retentionPolicy. The
	// resource is left as it is. A new Buckety that resolves to the same
	// resource takes the claim over (after its adoption check). A
	// maintainer may delete the claim to release what it counts; the
	// owner record on the backend then still keeps the name for that
	// Buckety until the maintainer removes it too.
	// +optional
	OwnerGoneSince *metav1.Time `json:"ownerGoneSince,omitempty"`
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
// +kubebuilder:printcolumn:name="Owner-Gone",type=date,JSONPath=`.status.ownerGoneSince`
// +kubebuilder:printcolumn:name="Retained",type=date,JSONPath=`.spec.retained.since`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:subresource:status
type BucketyClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BucketyClaimSpec   `json:"spec"`
	Status BucketyClaimStatus `json:"status,omitempty"`
}

// BucketyClaimList is a list of BucketyClaim.
// +kubebuilder:object:root=true
type BucketyClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BucketyClaim `json:"items"`
}
