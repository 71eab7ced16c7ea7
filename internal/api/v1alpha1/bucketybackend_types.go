package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// BucketyBackend condition reasons. A BucketyBackend carries two
// condition types: Ready (positive polarity: True is the normal state),
// whether the backend serves; and Degraded (negative polarity), whether
// the probe that found it serving warned of something its operator should
// fix (drivers.Warner). Degraded True has the warning's reason, which the
// driver names (kadm: RegistryNotCompacted, an owner registry whose
// cleanup.policy lets the brokers delete ownership records;
// RegistryConfigsUnreadable, one whose configs the brokers refuse the
// backend's principal, so that this cannot be told;
// BrokersAllowWithoutACLs, brokers that let every user do what no ACL
// names, where the backend issues a user per access;
// BrokersHideAllowWithoutACLs, brokers that set that setting but do not
// report its value;
// BrokerConfigsUnreadable, brokers that refuse the backend's principal
// the read that tells); False is
// AsExpected; Unknown is NotProbed before a probe ran, NotDetermined when
// none passed yet. While the probe fails, Degraded keeps what the last
// probe that passed found.
const (
	// ReasonReachable (Ready True): the last probe reached the backend
	// with the controller's credentials.
	ReasonReachable = "Reachable"
	// ReasonEndpointUnreachable (Ready False): the last probe could not
	// reach the backend (connection refused, timeout, DNS):
	// drivers.UnavailableError.
	ReasonEndpointUnreachable = "EndpointUnreachable"
	// ReasonCredentialsInvalid (Ready False): the backend answered and
	// refused the controller's credentials or permissions:
	// drivers.AccessDeniedError.
	ReasonCredentialsInvalid = "CredentialsInvalid"
	// ReasonProbeFailed (Ready False): the backend answered the probe
	// with another error; the message has it.
	ReasonProbeFailed = "ProbeFailed"
	// ReasonKeysPerAccessUnavailable (Ready False): the backend's config
	// asks for a credential per access (s3: credentials set), and the
	// service cannot issue them now, or the service that issues them (an
	// IAM endpoint, an admin API) could not be asked; its accesses wait
	// (their own reason is ScopingUnavailable).
	ReasonKeysPerAccessUnavailable = "KeysPerAccessUnavailable"
	// ReasonNotProbed (Ready Unknown): the backend has not been probed
	// since the controller started, or its driver has no probe.
	ReasonNotProbed = "NotProbed"
)

// BucketyBackendStatus is a backend of buckety-controller.yaml as the
// controller's leader sees it: what the config says (nothing secret) and
// what its probes found.
type BucketyBackendStatus struct {
	// Driver is the backend's driver (kadm, s3).
	Driver string `json:"driver"`
	// DriverVersion is the running driver's version.
	DriverVersion string `json:"driverVersion"`
	// Implementation is the software behind the backend, where the driver
	// tells: the s3 driver's implementation (aws, r2, minio, versitygw,
	// seaweedfs; absent when the config leaves it out), kafka for kadm.
	// +optional
	Implementation string `json:"implementation,omitempty"`
	// Service is the claim space the backend's resources are claimed in
	// (the config's service, by default the backend's name).
	Service string `json:"service"`
	// KeysPerAccess is true when every access gets a credential of its
	// own on the backend (a user, a key) restricted to its role; false
	// when every access is handed the backend's own credentials (or, where
	// the config asks for a credential per access, none: see the Ready
	// reason KeysPerAccessUnavailable). Absent until the backend answered.
	// +optional
	KeysPerAccess *bool `json:"keysPerAccess,omitempty"`
	// KeysPerAccessRequired is true when the config asks for a credential
	// per access (s3: credentials set): no access then gets the backend's
	// own credentials.
	// +optional
	KeysPerAccessRequired bool `json:"keysPerAccessRequired,omitempty"`
	// AdoptionAllowed is the config's adoption.allow: Bucketies may adopt
	// existing resources that hold content.
	// +optional
	AdoptionAllowed bool `json:"adoptionAllowed,omitempty"`
	// DrainAllowed says Bucketies on the backend may set spec.drain: the
	// config's drain.allow, or its driver's default.
	// +optional
	DrainAllowed bool `json:"drainAllowed,omitempty"`
	// Limits are the config's limits per namespace.
	// +optional
	Limits *BackendLimits `json:"limits,omitempty"`
	// Budgets sums up limits for kubectl get -o wide: the budgets of one
	// namespace (Bucketies, accesses, partitions, disk, bucket quota), the
	// accesses one Buckety may have, and how many namespace overrides
	// change them; "none" without any.
	// +optional
	Budgets string `json:"budgets,omitempty"`
	// ParameterDefaults are the config's parameters: defaults merged under
	// each Buckety's spec.parameters on the backend.
	// +optional
	ParameterDefaults map[string]string `json:"parameterDefaults,omitempty"`
	// ConvergeParameters is the config's convergeParameters: a changed
	// default applies to existing Bucketies too, not only to new ones.
	// +optional
	ConvergeParameters bool `json:"convergeParameters,omitempty"`
	// Bucketies is how many Bucketies are on the backend (status.backend,
	// or spec.backend before the first reconcile), as the controller's
	// cache held them at the last write.
	Bucketies int64 `json:"bucketies"`
	// Accesses is how many BucketyAccesses name a Buckety of the backend.
	Accesses int64 `json:"accesses"`
	// LastProbeTime is when the probe whose result this status holds ran.
	// A probe that changes nothing is written at most every heartbeat
	// (5 minutes at the default probe interval), so this may lag the
	// latest probe by that much; buckety_backend_last_probe_timestamp_seconds
	// has every probe.
	// +optional
	LastProbeTime *metav1.Time `json:"lastProbeTime,omitempty"`
	// Probes is the number of the probe whose result this status holds:
	// how many times the leader has probed the backend since it started
	// (a new leader counts from 1 again). Like lastProbeTime, it is written
	// only with a change or a heartbeat; it tells one probe from the next,
	// which lastProbeTime, to the second, may not.
	// +optional
	Probes int64 `json:"probes,omitempty"`
	// ProbeInterval is how often the controller probes the backend.
	// +optional
	ProbeInterval string `json:"probeInterval,omitempty"`
	// Conditions: Ready (positive polarity), with reason Reachable,
	// EndpointUnreachable, CredentialsInvalid, ProbeFailed,
	// KeysPerAccessUnavailable or NotProbed; and Degraded (negative
	// polarity): True while the last probe that passed warned of something
	// the backend's operator should fix, with the driver's reason (kadm:
	// RegistryNotCompacted, RegistryConfigsUnreadable,
	// BrokersAllowWithoutACLs, BrokersHideAllowWithoutACLs,
	// BrokerConfigsUnreadable) and the fix in the
	// message, False (AsExpected)
	// when it warned of nothing, Unknown (NotProbed, NotDetermined) before
	// a probe passed.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// BackendLimits are a backend's limits per namespace, copied from the
// config (limits:). Absent fields: no limit.
type BackendLimits struct {
	// PerNamespace is the most Bucketies one namespace may have.
	// +optional
	PerNamespace int64 `json:"perNamespace,omitempty"`
	// AccessesPerNamespace is the most BucketyAccesses one namespace may
	// have.
	// +optional
	AccessesPerNamespace int64 `json:"accessesPerNamespace,omitempty"`
	// AccessesPerBuckety is the most BucketyAccesses one Buckety may have.
	// +optional
	AccessesPerBuckety int64 `json:"accessesPerBuckety,omitempty"`
	// Partitions is the most topic partitions one namespace may have.
	// +optional
	Partitions int64 `json:"partitions,omitempty"`
	// DiskBytes is the most disk one namespace's topics may claim, in bytes.
	// +optional
	DiskBytes int64 `json:"diskBytes,omitempty"`
	// QuotaBytes is the most bucket quota one namespace may have, in bytes.
	// +optional
	QuotaBytes int64 `json:"quotaBytes,omitempty"`
	// ParameterMax bounds integer parameters, by key.
	// +optional
	ParameterMax map[string]int64 `json:"parameterMax,omitempty"`
	// ParameterMin bounds integer parameters from below, by key.
	// +optional
	ParameterMin map[string]int64 `json:"parameterMin,omitempty"`
	// DeniedParameters are parameter keys (globs) tenants may not set.
	// +optional
	DeniedParameters []string `json:"deniedParameters,omitempty"`
	// NamespaceOverrides is how many entries of limits.namespaces give
	// some namespaces other figures (which namespaces is the platform's
	// business, not every tenant's).
	// +optional
	NamespaceOverrides int64 `json:"namespaceOverrides,omitempty"`
}

// BucketyBackend is a read-only view of one backend of the controller's
// config (buckety-controller.yaml), named as the backend, written by the
// controller's leader alone: what the config says of it (driver,
// implementation, claim scope, limits; never a credential, an endpoint or
// a file path) and whether the backend answers the leader's probes. It is
// not a source of truth: the config file is, and the leader creates one per
// configured backend, rewrites any change made by someone else, and
// deletes those of backends removed from the config. Everyone
// authenticated may read it (ClusterRole buckety-backends-view). It has no
// spec and no status subresource: the leader creates it whole, status and
// all, in one write.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,path=bucketybackends,singular=bucketybackend,shortName=bkyb
// +kubebuilder:printcolumn:name="Driver",type=string,JSONPath=`.status.driver`
// +kubebuilder:printcolumn:name="Implementation",type=string,JSONPath=`.status.implementation`
// +kubebuilder:printcolumn:name="Per-Access-Keys",type=boolean,JSONPath=`.status.keysPerAccess`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Degraded",type=string,JSONPath=`.status.conditions[?(@.type=="Degraded")].status`
// +kubebuilder:printcolumn:name="Last-Probe",type=date,JSONPath=`.status.lastProbeTime`
// +kubebuilder:printcolumn:name="Bucketies",type=integer,JSONPath=`.status.bucketies`
// +kubebuilder:printcolumn:name="Budgets",type=string,JSONPath=`.status.budgets`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BucketyBackend struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Status BucketyBackendStatus `json:"status,omitempty"`
}

// BucketyBackendList is a list of BucketyBackend.
// +kubebuilder:object:root=true
type BucketyBackendList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BucketyBackend `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, &BucketyBackend{}, &BucketyBackendList{})
		return nil
	})
}
