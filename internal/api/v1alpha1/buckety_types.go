package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// RetentionPolicy says what happens to the backend resource when its Buckety
// is deleted.
// +kubebuilder:validation:Enum=Retain;Delete
type RetentionPolicy string

const (
	// RetentionRetain leaves the backend resource in place. The default: no
	// data is lost by deleting a Kubernetes object.
	RetentionRetain RetentionPolicy = "Retain"
	// RetentionDelete deletes the backend resource, and everything in it,
	// but only when buckety created it.
	RetentionDelete RetentionPolicy = "Delete"
)

// Role is what an access may do with the resource. In v1alpha1 every role
// receives the same credentials; drivers report that as
// ScopingNotImplemented instead of treating ReadOnly as ReadWrite silently.
// +kubebuilder:validation:Enum=ReadWrite;ReadOnly;WriteOnly
type Role string

const (
	// RoleReadWrite may read and write.
	RoleReadWrite Role = "ReadWrite"
	// RoleReadOnly may only read (consume, get, list).
	RoleReadOnly Role = "ReadOnly"
	// RoleWriteOnly may only write (produce, put).
	RoleWriteOnly Role = "WriteOnly"
)

// Adoption says whether a Buckety may take over a backend resource that
// already exists and holds content. It is one of two keys: the backend must
// also allow adoption (adoption.allow in buckety-controller.yaml).
// +kubebuilder:validation:Enum=Refuse;Adopt;AdoptAndConverge
type Adoption string

const (
	// AdoptionRefuse (the default, also when the field is omitted) never
	// takes over a resource that holds content: the Buckety reports
	// AdoptionRefused. An existing empty resource is adopted once it
	// matches spec.parameters, never converged: until then the Buckety
	// reports AdoptionDrift.
	AdoptionRefuse Adoption = "Refuse"
	// AdoptionAdopt takes over an existing resource, content and all, but
	// writes nothing to it while it differs from spec.parameters: the
	// Buckety reports the differences (Ready=False, reason AdoptionDrift)
	// until the parameters match or the field becomes AdoptAndConverge.
	AdoptionAdopt Adoption = "Adopt"
	// AdoptionAndConverge takes over an existing resource and converges it
	// to spec.parameters, announcing the changes in an AdoptionConverging
	// event before applying them. It is the only way buckety changes a
	// resource it did not create, and needs the backend's adoption.allow.
	AdoptionAndConverge Adoption = "AdoptAndConverge"
)

// Adopts reports whether a asks to take over a resource that holds content.
func (a Adoption) Adopts() bool { return a == AdoptionAdopt || a == AdoptionAndConverge }

// Provenance records whether buckety created the backend resource or took
// over an existing one. retentionPolicy Delete deletes only what buckety
// created, unless the backend sets adoption.deleteAdopted.
// +kubebuilder:validation:Enum=Created;Adopted
type Provenance string

const (
	// ProvenanceCreated means the controller created the backend resource.
	ProvenanceCreated Provenance = "Created"
	// ProvenanceAdopted means the backend resource existed before this
	// Buckety claimed it: empty, or (with spec.adoption) holding content.
	ProvenanceAdopted Provenance = "Adopted"
)

// BucketySpec is the desired backend resource.
// +kubebuilder:validation:XValidation:rule="has(self.name) == has(oldSelf.name) && (!has(self.name) || self.name == oldSelf.name)",message="spec.name is immutable: the backend resource name is resolved once; create a new Buckety to use another name"
type BucketySpec struct {
	// Backend names a backend defined in the controller's config file
	// (buckety-controller.yaml); it determines the driver. Immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.backend is immutable: create a new Buckety to move to another backend"
	Backend string `json:"backend"`

	// Name is a template for the backend resource name (topic, bucket),
	// resolved at first reconcile and frozen in status.backendResourceName.
	// Defaults to ${name}, this object's metadata.name. References:
	// ${name}, ${namespace}, ${label['key']} and ${backend.key} (the
	// backend's defaults in the controller config). Immutable.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Name string `json:"name,omitempty"`

	// Parameters configure the backend resource; keys and values are
	// validated per driver (see the driver's parameters.schema.json).
	// Mutable per key as the driver allows; the controller reconciles
	// changes and out-of-band drift to the backend. Omitted keys mean the
	// backend's own defaults.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 253 && size(self[k]) <= 4096)",message="spec.parameters: keys are at most 253 characters and values at most 4096"
	Parameters map[string]string `json:"parameters,omitempty"`

	// RetentionPolicy is what happens to the backend resource when this
	// Buckety is deleted: Retain (default) keeps it, Delete removes it and
	// its content if buckety created it.
	// +optional
	// +kubebuilder:default=Retain
	RetentionPolicy RetentionPolicy `json:"retentionPolicy,omitempty"`

	// DefaultAccess is a single-consumer shortcut: the controller
	// materialises a BucketyAccess with this object's name, labelled
	// buckety.yolean.se/implicit=true. It is removed when defaultAccess is
	// removed or when any explicit BucketyAccess targets this Buckety.
	// +optional
	DefaultAccess *DefaultAccess `json:"defaultAccess,omitempty"`

	// Adoption says whether this Buckety may take over a backend resource
	// that already exists and holds content (the tenant's key; the backend
	// must also allow it with adoption.allow, or admission rejects the
	// field; both keys are checked again on every pass until the adoption
	// settles). Refuse (default) reports AdoptionRefused, and adopts an
	// existing empty resource only once it matches spec.parameters. Adopt takes the
	// resource over but writes nothing to it while it differs from
	// spec.parameters: Ready=False, reason AdoptionDrift, lists the
	// differences until the parameters match (or this field becomes
	// AdoptAndConverge); the adoption is then settled and the resource is
	// managed like any other. AdoptAndConverge takes it over and applies
	// spec.parameters at once, announcing the changes in an event first.
	// Mutable: changing Adopt to AdoptAndConverge is how a tenant accepts
	// the reported changes; once the adoption is settled the field has no
	// effect. An adopted resource is deleted by retentionPolicy Delete only
	// when the backend sets adoption.deleteAdopted.
	// +optional
	Adoption Adoption `json:"adoption,omitempty"`

	// Drain empties the backend resource and keeps it: every object
	// (versions, delete markers and unfinished uploads) of a bucket, every
	// record of a topic (DeleteRecords up to each partition's high
	// watermark). A drain runs once for each new spec.drain.request;
	// status.drain reports its progress. Removing spec.drain, or changing
	// the request, cancels a drain that has not completed. Allowed where
	// the backend's drain.allow (buckety-controller.yaml) allows it:
	// by default on S3, not on Kafka. A Buckety created with spec.drain
	// does not drain until the request changes (so a Buckety re-applied
	// from Git or a backup does not empty its resource again).
	// +optional
	Drain *DrainSpec `json:"drain,omitempty"`

	// Sharing lets BucketyAccesses in other namespaces use this Buckety's
	// resource: each rule names namespaces (by name, or by a label
	// selector) and the roles they may take. Nothing is shared without a
	// rule. An access in another namespace names this Buckety with
	// spec.bucketyRef.namespace; it is admitted, and keeps its rights, only
	// while a rule here allows its namespace and role and the backend's
	// sharing configuration (buckety-controller.yaml) allows both
	// namespaces. Removing a rule revokes the rights it gave at the
	// accesses' next pass. status.sharedWith lists who holds access.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Sharing []SharingRule `json:"sharing,omitempty"`
}

// SharingRule allows namespaces a set of roles on a Buckety.
// +kubebuilder:validation:XValidation:rule="has(self.__namespace__) != has(self.namespaceSelector)",message="set exactly one of namespace and namespaceSelector"
type SharingRule struct {
	// Namespace is a namespace whose accesses may use the Buckety.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace,omitempty"`
	// NamespaceSelector selects the namespaces, by their labels, whose
	// accesses may use the Buckety. An empty selector selects every
	// namespace.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	// Roles are the roles those namespaces' accesses may take.
	// +required
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=3
	Roles []Role `json:"roles"`
}

// DrainSpec asks for a drain of the backend resource.
type DrainSpec struct {
	// Request names this drain: any token (a date, a ticket, a commit).
	// A value status.drain does not record yet starts a new drain; the
	// same value again does nothing.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Request string `json:"request"`

	// StuckAfter is how long the drain may go without deleting anything
	// before it reports Draining reason DrainStuck and a Warning event.
	// Default: the backend's drain.stuckAfter, else 30m. Each duration
	// here is a Go duration of at most 15 characters, at most 6 digits
	// before each unit (so none overflows: 999999h999999h is the most).
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Pattern=`^[-+]?(0|(([0-9]{1,6}(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`
	StuckAfter *metav1.Duration `json:"stuckAfter,omitempty"`

	// Interval is how long a drain pass that found nothing to delete
	// waits before the next in the drain's first hour; a pass that
	// deleted something is followed at once. Default: the backend's
	// drain.interval, else 10s. At least 1s.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Pattern=`^[-+]?(0|(([0-9]{1,6}(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`
	Interval *metav1.Duration `json:"interval,omitempty"`

	// SlowInterval is Interval once the drain is an hour old. Default:
	// the backend's drain.slowInterval, else six times the interval.
	// Not shorter than the interval.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Pattern=`^[-+]?(0|(([0-9]{1,6}(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`
	SlowInterval *metav1.Duration `json:"slowInterval,omitempty"`
}

// DrainPhase is where a drain is.
// +kubebuilder:validation:Enum=Draining;Drained;Cancelled;Refused
type DrainPhase string

const (
	// DrainPhaseDraining: passes delete content until one finds the
	// resource empty.
	DrainPhaseDraining DrainPhase = "Draining"
	// DrainPhaseDrained: a pass found the resource empty; the drain is
	// complete (content written since is kept).
	DrainPhaseDrained DrainPhase = "Drained"
	// DrainPhaseCancelled: spec.drain was removed or its request changed
	// before the drain completed, or status recorded a drain no
	// spec.drain asked for; nothing more is deleted.
	DrainPhaseCancelled DrainPhase = "Cancelled"
	// DrainPhaseRefused: the drain was not started, or was stopped,
	// because the backend does not allow it (drain.allow), its driver
	// cannot drain, buckety does not hold the resource, or the request
	// was present when the Buckety was created; status.drain.message
	// says which.
	DrainPhaseRefused DrainPhase = "Refused"
)

// DrainStatus is the progress of the last drain requested.
type DrainStatus struct {
	// Request is the spec.drain.request this status is about.
	Request string `json:"request"`
	// Phase is Draining, Drained, Cancelled or Refused.
	Phase DrainPhase `json:"phase"`
	// UID is the metadata.uid of the Buckety the drain started on. A
	// status restored from a backup onto a new object names another, and
	// its drain is refused, not resumed: it would empty what was written
	// since the backup.
	// +optional
	UID types.UID `json:"uid,omitempty"`
	// Message says why a drain was cancelled or refused, or what its last
	// pass failed on.
	// +optional
	Message string `json:"message,omitempty"`
	// StartTime is when the drain started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// CompletionTime is when it reached Drained, Cancelled or Refused.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// LastProgressTime is when a pass last deleted something (the start
	// time until then); DrainStuck is measured from it.
	// +optional
	LastProgressTime *metav1.Time `json:"lastProgressTime,omitempty"`
	// LastPassTime is when a pass last asked the backend to delete.
	// +optional
	LastPassTime *metav1.Time `json:"lastPassTime,omitempty"`
	// Initial is what the resource held when the drain started, where
	// known: from the backend's usage report when it was measured after
	// the drain started, or from the first pass (deleted plus remaining);
	// failing both, what the drain deleted, once it completes.
	// +optional
	Initial *DrainContent `json:"initial,omitempty"`
	// Current is what the resource held after the last pass, where that
	// pass could tell (a topic always; a bucket when the pass finished
	// its listing).
	// +optional
	Current *DrainContent `json:"current,omitempty"`
	// Deleted is what the drain's passes deleted so far.
	Deleted DrainContent `json:"deleted"`
	// Passes is how many drain passes asked the backend to delete.
	// +optional
	Passes int64 `json:"passes,omitempty"`
	// Requests is how many requests those passes made to the service.
	// +optional
	Requests int64 `json:"requests,omitempty"`
	// Earlier are the requests this Buckety handled before Request, the
	// most recent last (at most MaxEarlierDrains): a request among them
	// set again (a Git revert of the commit that asked for the next one)
	// is refused, not drained again.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Earlier []string `json:"earlier,omitempty"`
}

// MaxEarlierDrains bounds DrainStatus.Earlier.
const MaxEarlierDrains = 16

// DrainContent is an amount of content: objects (a bucket's object
// versions, delete markers and uploads) or records (a topic's offsets
// between its low and high watermarks), and bytes where known.
type DrainContent struct {
	// Objects are a bucket's objects or a topic's records, where known.
	// +optional
	Objects *int64 `json:"objects,omitempty"`
	// Bytes, where the service tells them.
	// +optional
	Bytes *int64 `json:"bytes,omitempty"`
}

// DefaultAccess describes the implicit BucketyAccess of a Buckety.
type DefaultAccess struct {
	// Role of the implicit access. Defaults to ReadWrite.
	// +optional
	// +kubebuilder:default=ReadWrite
	Role Role `json:"role,omitempty"`

	// CredentialsSecretName is the Secret the implicit access writes,
	// in this namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	CredentialsSecretName string `json:"credentialsSecretName"`

	// SecretFormats of the implicit access: shapes of the same credentials
	// added to its Secret besides the default keys (see
	// BucketyAccess.spec.secretFormats).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$`
	SecretFormats []string `json:"secretFormats,omitempty"`
}

// BucketyStatus is what the controller observed and decided.
type BucketyStatus struct {
	// The list is atomic, not a map keyed by type: only the controller
	// writes status, always the whole list, so per-condition field
	// ownership would only cost every status write about 1.5 KB of
	// managedFields and a fifth of its API-server time
	// (docs/performance.md, "Conditions as one atomic list").
	// +listType=atomic

	// Conditions: Ready, Reconciling, BackendUnavailable,
	// DriverVersionIncompatible, ParameterDrift, Degraded,
	// BlockedByAccesses, ScopingNotImplemented, QuotaWarning, Draining,
	// Provisioned.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Backend is spec.backend as resolved at first reconcile. Sticky.
	// +optional
	Backend string `json:"backend,omitempty"`

	// Driver is the driver of that backend at first reconcile. Sticky.
	// +optional
	Driver string `json:"driver,omitempty"`

	// DriverMajor is the driver's major version at first reconcile. Sticky:
	// a controller whose driver major differs pauses reconciliation with
	// DriverVersionIncompatible.
	// +optional
	DriverMajor *int64 `json:"driverMajor,omitempty"`

	// DriverBuildVersion is the full SemVer of the driver that last
	// reconciled this resource. Informational.
	// +optional
	DriverBuildVersion string `json:"driverBuildVersion,omitempty"`

	// BackendResourceName is spec.name resolved: the topic or bucket name on
	// the backend. Sticky.
	// +optional
	BackendResourceName string `json:"backendResourceName,omitempty"`

	// Provenance is Created when buckety created the backend resource and
	// Adopted when it claimed an existing one. Sticky.
	// +optional
	Provenance Provenance `json:"provenance,omitempty"`

	// ObservedGeneration is the metadata.generation that has been fully
	// reconciled: backend resource and every access Secret in sync.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Usage is what the backend resource holds, as its service last
	// reported it; refreshed once per usage interval (the controller's
	// --usage-interval). Absent until first measured, and on services that
	// cannot tell.
	// +optional
	Usage *Usage `json:"usage,omitempty"`

	// ParameterDefaults are the backend's parameter defaults in effect
	// under spec.parameters: the effective parameters (effectiveParameters)
	// are spec.parameters merged over them (a key the spec sets wins).
	// Every default is recorded, the ones the spec overrides too, so that
	// removing an override falls back to its recorded default. Recorded
	// when the resource is first provisioned, and kept (a changed default
	// applies to new Bucketies only) unless the backend converges its
	// defaults (convergeParameters in buckety-controller.yaml).
	// +optional
	ParameterDefaults map[string]string `json:"parameterDefaults,omitempty"`

	// EffectiveParameters are the parameters the controller last
	// provisioned the resource with: spec.parameters merged over
	// parameterDefaults (a key the spec sets wins), with the location
	// parameters the resource was claimed with. Only the keys set in
	// either, not the service's own defaults. Written with
	// parameterDefaults when the resource is provisioned; shown by kubectl
	// describe and read by the QUOTA and PUBLIC columns. For reading only:
	// the controller never reads it back.
	// +optional
	EffectiveParameters map[string]string `json:"effectiveParameters,omitempty"`

	// Drain is the progress of the last drain spec.drain requested.
	// +optional
	Drain *DrainStatus `json:"drain,omitempty"`

	// SharedWith lists the BucketyAccesses of other namespaces that hold
	// access to this Buckety's resource (spec.sharing), and the role each
	// holds: their names only, never their credentials.
	// +optional
	SharedWith *SharedWith `json:"sharedWith,omitempty"`
}

// Usage is a backend resource's measured usage.
type Usage struct {
	// Bytes stored: a bucket's object bytes; a topic's log bytes summed
	// over its partitions (one replica each, as retention.bytes counts).
	Bytes int64 `json:"bytes"`
	// Objects in a bucket.
	// +optional
	Objects *int64 `json:"objects,omitempty"`
	// Partitions of a topic.
	// +optional
	Partitions *int64 `json:"partitions,omitempty"`
	// EndOffsets is a topic's end offsets summed over its partitions: the
	// records written to it since it was created.
	// +optional
	EndOffsets *int64 `json:"endOffsets,omitempty"`
	// MeasuredAt is when the service measured it (MinIO reports from its
	// own periodic scan, so this may be older than the refresh).
	MeasuredAt metav1.Time `json:"measuredAt"`
	// Source says how it was measured: DescribeLogDirs, minio data usage,
	// ListObjectsV2.
	// +optional
	Source string `json:"source,omitempty"`
}

// Buckety is a named, individually configurable resource on a backing
// service: a Kafka topic or an S3 bucket.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=bucketies,singular=buckety,shortName=bky,categories=buckety-all
// +kubebuilder:printcolumn:name="Backend",type=string,JSONPath=`.spec.backend`
// +kubebuilder:printcolumn:name="Resource",type=string,JSONPath=`.status.backendResourceName`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Used",type=integer,format=int64,JSONPath=`.status.usage.bytes`,description="bytes the resource holds, as last measured"
// +kubebuilder:printcolumn:name="Quota",type=string,JSONPath=`.status.effectiveParameters.quota`,priority=1,description="hard quota of the bucket in effect (status.effectiveParameters)"
// +kubebuilder:printcolumn:name="Public",type=string,JSONPath=`.status.effectiveParameters.anonymousRead`,description="anonymous read of the bucket in effect (status.effectiveParameters)"
// +kubebuilder:printcolumn:name="Drain",type=string,JSONPath=`.status.drain.phase`,priority=1,description="phase of the last drain requested"
// +kubebuilder:printcolumn:name="Shared",type=integer,JSONPath=`.status.sharedWith.accesses`,priority=1,description="accesses of other namespaces (spec.sharing)"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Buckety struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec BucketySpec `json:"spec"`
	// +optional
	Status BucketyStatus `json:"status,omitempty"`
}

// BucketyList is a list of Buckety.
// +kubebuilder:object:root=true
type BucketyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Buckety `json:"items"`
}

// SharedWith is who holds access to a shared Buckety.
type SharedWith struct {
	// Accesses is how many BucketyAccesses of other namespaces name this
	// Buckety.
	Accesses int32 `json:"accesses"`
	// Holders are those accesses, sorted, at most MaxSharedHolders of
	// them: the first ones by namespace and name.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	Holders []SharedHolder `json:"holders,omitempty"`
}

// MaxSharedHolders bounds status.sharedWith.holders.
const MaxSharedHolders = 100

// SharedHolder is one access of another namespace to a shared Buckety.
type SharedHolder struct {
	// Namespace and Name name the BucketyAccess.
	Namespace string `json:"namespace"`
	// Name of the BucketyAccess.
	Name string `json:"name"`
	// Role the access asks for.
	Role Role `json:"role"`
	// Granted is true while the owner's sharing allows the access: false
	// for an access admitted under a rule since withdrawn.
	Granted bool `json:"granted"`
}
