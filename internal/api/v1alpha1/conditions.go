package v1alpha1

// Condition types. Each kind's set, with the polarity of each type, is
// declared once in BucketyConditions and BucketyAccessConditions below; the
// controller sets every declared type on every object (Unknown where it
// could not determine it), and the metrics and docs read the declaration.
// Ready follows kstatus, so `kubectl wait --for=condition=Ready` and generic
// tooling read it correctly.
const (
	// ConditionReady is True when the backend resource and every access
	// Secret are in sync with metadata.generation.
	ConditionReady = "Ready"
	// ConditionReconciling is True while the controller is still working
	// toward metadata.generation (kstatus).
	ConditionReconciling = "Reconciling"
	// ConditionBackendUnavailable is True when the resource's backend is no
	// longer in the controller config (or changed driver), or cannot be
	// reached. Reconciliation of the backend pauses.
	ConditionBackendUnavailable = "BackendUnavailable"
	// ConditionDriverVersionIncompatible is True when the running driver's
	// major version differs from status.driverMajor. Reconciliation pauses
	// and nothing is written to the backend.
	ConditionDriverVersionIncompatible = "DriverVersionIncompatible"
	// ConditionParameterDrift is True when the backend differs from
	// spec.parameters in a way the driver will not repair in place, such as
	// a partition count that would have to shrink.
	ConditionParameterDrift = "ParameterDrift"
	// ConditionBlockedByAccesses is True while deletion of a Buckety waits
	// for the BucketyAccess objects that reference it; the message names
	// them.
	ConditionBlockedByAccesses = "BlockedByAccesses"
	// ConditionScopingNotImplemented is True when the issued credentials are
	// not restricted to the requested role or access parameters (v1alpha1:
	// every access receives the backend's credentials).
	ConditionScopingNotImplemented = "ScopingNotImplemented"
	// ConditionProvisioned (Buckety only, positive polarity) is True when the
	// backend resource exists and matches spec.parameters. Accesses wait for
	// it; Ready additionally waits for every access's Secret.
	ConditionProvisioned = "Provisioned"
	// ConditionDegraded is True when the backend resource works but the
	// backend did not apply some parameter (it answered NotImplemented).
	// Ready is False meanwhile (reason ParameterNotApplied): a resource
	// without a parameter its tenant asked for is not in sync.
	ConditionDegraded = "Degraded"
	// ConditionQuotaWarning (Buckety only) is True when the resource's
	// measured usage (status.usage) has reached its soft quota (reason
	// SoftQuotaReached) or its hard quota (reason QuotaReached). Nothing is
	// refused because of it: the service enforces a hard quota, and a soft
	// quota only warns.
	ConditionQuotaWarning = "QuotaWarning"
	// ConditionDraining (Buckety only) is True while a drain
	// (spec.drain) empties the backend resource: reason Draining while it
	// makes progress, DrainStuck when it deleted nothing for
	// spec.drain.stuckAfter. The message shows the progress. Ready stays
	// True meanwhile: the resource exists and is usable.
	ConditionDraining = "Draining"
)

// Polarity says which status of a condition type is the normal one.
type Polarity string

const (
	// Positive: True is the normal, good state (Ready, Provisioned).
	Positive Polarity = "Positive"
	// Negative: True means a problem or work in progress (abnormal-true,
	// kstatus' convention for everything but Ready).
	Negative Polarity = "Negative"
)

// ConditionDecl declares one condition type a kind carries.
// +kubebuilder:object:generate=false
type ConditionDecl struct {
	// Type is the condition type.
	Type string
	// Polarity says which status is the normal one.
	Polarity Polarity
	// TrueMeans says, in one line for the people reading `kubectl
	// describe`, what status True means. README's condition table is
	// generated from it (buckety-release docs).
	TrueMeans string
	// AlwaysFalse marks a type the kind carries only because the spec's
	// catalog is shared by both kinds: it is always False, reason
	// NotApplicable.
	AlwaysFalse bool
}

// The declaration of each condition type, once: its polarity and what True
// means. The two kinds' sets below are made of these.
var (
	declReady = ConditionDecl{Type: ConditionReady, Polarity: Positive,
		TrueMeans: "the backend resource and every access Secret are in sync with this generation"}
	declReconciling = ConditionDecl{Type: ConditionReconciling, Polarity: Negative,
		TrueMeans: "the controller is still working toward this generation"}
	declBackendUnavailable = ConditionDecl{Type: ConditionBackendUnavailable, Polarity: Negative,
		TrueMeans: "the backend left the config, changed driver, or cannot be reached"}
	declDriverVersionIncompatible = ConditionDecl{Type: ConditionDriverVersionIncompatible, Polarity: Negative,
		TrueMeans: "the running driver's major differs from `status.driverMajor`; nothing is written"}
	declParameterDrift = ConditionDecl{Type: ConditionParameterDrift, Polarity: Negative,
		TrueMeans: "the backend differs from `spec.parameters` in a way the driver will not repair"}
	declBlockedByAccesses = ConditionDecl{Type: ConditionBlockedByAccesses, Polarity: Negative,
		TrueMeans: "deletion waits for the accesses the message names"}
	declScopingNotImplemented = ConditionDecl{Type: ConditionScopingNotImplemented, Polarity: Negative,
		TrueMeans: "credentials are broader than the role and parameters ask for"}
	declProvisioned = ConditionDecl{Type: ConditionProvisioned, Polarity: Positive,
		TrueMeans: "the backend resource exists and matches the spec; accesses wait for it"}
	declDegraded = ConditionDecl{Type: ConditionDegraded, Polarity: Negative,
		TrueMeans: "the backend did not apply a requested parameter (`Ready` is False meanwhile), or keeps no owner record with the resource (`OwnerRecordsUnavailable`: ownership is kept in this cluster only)"}
	declQuotaWarning = ConditionDecl{Type: ConditionQuotaWarning, Polarity: Negative,
		TrueMeans: "the measured usage (`status.usage`) reached the soft or the hard quota"}
	declDraining = ConditionDecl{Type: ConditionDraining, Polarity: Negative,
		TrueMeans: "a drain (`spec.drain`) is emptying the resource (reason `DrainStuck`: nothing deleted for `stuckAfter`); `status.drain` has the progress"}
)

// notApplicable is d as a kind carries it that it does not apply to.
func notApplicable(d ConditionDecl) ConditionDecl {
	d.AlwaysFalse = true
	return d
}

// BucketyConditions is every condition type of a Buckety, in the order the
// controller writes them.
var BucketyConditions = []ConditionDecl{
	declBackendUnavailable,
	declDriverVersionIncompatible,
	declParameterDrift,
	declDegraded,
	declBlockedByAccesses,
	declScopingNotImplemented,
	declQuotaWarning,
	declDraining,
	declProvisioned,
	declReady,
	declReconciling,
}

// BucketyAccessConditions is every condition type of a BucketyAccess, in
// the order the controller writes them. ParameterDrift and
// BlockedByAccesses are always False (NotApplicable): the spec's catalog is
// shared by both kinds.
var BucketyAccessConditions = []ConditionDecl{
	declBackendUnavailable,
	declDriverVersionIncompatible,
	notApplicable(declParameterDrift),
	notApplicable(declBlockedByAccesses),
	declScopingNotImplemented,
	declReady,
	declReconciling,
}

// Condition reasons. Each condition's message carries the specifics.
const (
	// ReasonReconciled: everything is in sync (Ready=True).
	ReasonReconciled = "Reconciled"
	// ReasonProgressing: work toward the current generation is under way.
	ReasonProgressing = "Progressing"
	// ReasonAsExpected: an abnormal-true condition is False.
	ReasonAsExpected = "AsExpected"
	// ReasonNotDetermined: the controller could not determine the condition
	// in this reconcile (Unknown).
	ReasonNotDetermined = "NotDetermined"

	// ReasonTemplateUnresolvable: spec.name cannot be resolved (syntax or a
	// missing label or backend default).
	ReasonTemplateUnresolvable = "TemplateUnresolvable"
	// ReasonInvalidName: the resolved name breaks the driver's name rules.
	ReasonInvalidName = "InvalidName"
	// ReasonInvalidParameters: spec.parameters fail the driver's validation.
	ReasonInvalidParameters = "InvalidParameters"
	// ReasonAdoptionRefused: the backend resource already exists and holds
	// content, so it is not claimed.
	ReasonAdoptionRefused = "AdoptionRefused"
	// ReasonOwnedElsewhere: the backend resource's owner record names
	// another buckety installation (or another Buckety of this one), so it
	// is never adopted or written, whatever spec.adoption says. The
	// message names the owner.
	ReasonOwnedElsewhere = "OwnedElsewhere"
	// ReasonResourceReplaced: the backend resource under the Buckety's
	// name is not the one it held: on S3, a bucket with no owner record at
	// all where the Buckety's claim records that its record was on it
	// (deleted out of band and created again by someone outside buckety,
	// or restored without its tags); on kadm, a topic whose ID is not the
	// one its owner record names (deleted out of band and created again
	// under the name). Nothing is written to it, nothing granted, and its
	// accesses' credentials are revoked, as for OwnedElsewhere: it may be
	// another's data. The message names the resource and the way out.
	ReasonResourceReplaced = "ResourceReplaced"
	// ReasonServiceChanged: the Buckety's backend reaches another service
	// than the one its claim records its resource on (spec.serviceID of
	// the BucketyClaim: a Kafka cluster's ID), as after its seedBrokers
	// were pointed at another cluster. Nothing is written there, nothing
	// granted, nothing drained, and a deletion leaves it, as
	// retentionPolicy Retain would; the accesses keep their Secrets as
	// they are (revoking would write on the wrong service). The message
	// names the backend, both identities and the way out. Ready and
	// Provisioned are False with it, BackendUnavailable True.
	ReasonServiceChanged = "ServiceChanged"
	// ReasonInstallationMismatch: the backend resource's owner record
	// names this very Buckety (its UID) under another installation name:
	// the installation was renamed without formerInstallations, or its
	// name is mistyped. Nothing is written to the resource, and its
	// accesses keep their credentials, until the config names it again.
	ReasonInstallationMismatch = "InstallationMismatch"
	// ReasonHandedOver: the backend hands its resources over to another
	// installation (ownership.handOverTo); nothing more is written to this
	// one from this installation.
	ReasonHandedOver = "HandedOver"
	// ReasonOwnerRecordsUnavailable: the backend keeps no owner record with
	// its resources (an S3 service without bucket tagging): ownership is
	// kept only in this cluster (Degraded).
	ReasonOwnerRecordsUnavailable = "OwnerRecordsUnavailable"
	// ReasonAdoptionDrift: the backend resource already existed (no
	// Buckety created it) and differs from spec.parameters; nothing is
	// written to it until the parameters match, or until both the backend
	// (adoption.allow) and the tenant (spec.adoption: AdoptAndConverge) ask
	// to converge it. The message lists the differences.
	ReasonAdoptionDrift = "AdoptionDrift"
	// ReasonNameConflict: another Buckety already owns the backend resource.
	ReasonNameConflict = "NameConflict"
	// ReasonLimitExceeded: the namespace already has as many Bucketies on
	// the backend as the backend's limits.perNamespace allows (a Buckety),
	// or as many accesses as limits.accessesPerNamespace or, on its
	// Buckety, limits.accessesPerBuckety allows (an access); this one
	// waits until one of them is deleted.
	ReasonLimitExceeded = "LimitExceeded"
	// ReasonBudgetExceeded: the namespace's budget on the backend
	// (limits.partitions, diskBytes or quotaBytes) has no room for what
	// this Buckety asks for; the message says what the namespace uses,
	// what this one asks for and the budget. A new resource is not
	// created; an existing one keeps what it has and does not grow.
	ReasonBudgetExceeded = "BudgetExceeded"
	// ReasonSoftQuotaReached: status.usage reached the soft quota
	// (QuotaWarning).
	ReasonSoftQuotaReached = "SoftQuotaReached"
	// ReasonQuotaReached: status.usage reached the hard quota, which the
	// service enforces: writes are refused (QuotaWarning).
	ReasonQuotaReached = "QuotaReached"
	// ReasonBelowQuota: usage is below every quota, or no quota is set
	// (QuotaWarning False).
	ReasonBelowQuota = "BelowQuota"
	// ReasonUsageUnknown: the usage has not been measured (QuotaWarning
	// False while the resource has a quota).
	ReasonUsageUnknown = "UsageUnknown"
	// ReasonDraining: a drain is deleting the resource's content
	// (Draining True).
	ReasonDraining = "Draining"
	// ReasonDrainStuck: a drain deleted nothing for its stuckAfter
	// (Draining True); the message says what the last pass found.
	ReasonDrainStuck = "DrainStuck"
	// ReasonDrained: the last drain completed (Draining False).
	ReasonDrained = "Drained"
	// ReasonDrainCancelled: the last drain was cancelled (Draining False).
	ReasonDrainCancelled = "DrainCancelled"
	// ReasonDrainRefused: the last drain requested was refused or stopped
	// by a rule (Draining False); the message says which.
	ReasonDrainRefused = "DrainRefused"
	// ReasonNoDrain: no drain was requested (Draining False).
	ReasonNoDrain = "NoDrain"
	// ReasonSecretConflict: a Secret with the credentials name exists and
	// was not created by buckety; it is never overwritten.
	ReasonSecretConflict = "SecretConflict"
	// ReasonPrincipalConflict: the principal buckety would issue for the
	// access exists on the backend and buckety did not create it (or it
	// is recorded for another access); it is never altered or deleted.
	ReasonPrincipalConflict = "PrincipalConflict"

	// ReasonBackendNotConfigured: the backend is not in the controller
	// config, or its driver changed.
	ReasonBackendNotConfigured = "BackendNotConfigured"
	// ReasonBackendUnreachable: the backend could not be reached.
	ReasonBackendUnreachable = "BackendUnreachable"
	// ReasonBackendError: the backend answered a request with an error.
	ReasonBackendError = "BackendError"
	// ReasonDriverMajorMismatch: the running driver's major differs from
	// status.driverMajor.
	ReasonDriverMajorMismatch = "DriverMajorMismatch"
	// ReasonDriftUnrepairable: the driver reported drift it will not repair.
	ReasonDriftUnrepairable = "DriftUnrepairable"
	// ReasonParameterNotApplied: the backend does not support a parameter
	// (it answered NotImplemented); the resource is usable without it.
	ReasonParameterNotApplied = "ParameterNotApplied"
	// ReasonAccessesExist: BucketyAccess objects still reference the Buckety.
	ReasonAccessesExist = "AccessesExist"
	// ReasonCredentialsNotScoped: credentials are the backend's shared ones.
	ReasonCredentialsNotScoped = "CredentialsNotScoped"
	// ReasonScopingUnavailable: the backend's config asks for a credential
	// per access and the backend cannot issue one now (an admin API that
	// answers 501, a server release too old to trust): the access's
	// Secret is kept as it is, a new access gets none, and the backend's
	// own credentials are never written instead.
	ReasonScopingUnavailable = "ScopingUnavailable"
	// ReasonCredentialKept: the backend no longer issues a credential per
	// access (its maintainer removed credentials), and the access keeps
	// the one of its own that its Secret holds, neither rotated nor
	// repaired, until the access is deleted.
	ReasonCredentialKept = "CredentialKept"
	// ReasonDeleting: the backend resource is being deleted; the message
	// shows progress.
	ReasonDeleting = "Deleting"
	// ReasonBucketyNotFound: an access references a Buckety that does not
	// exist.
	ReasonBucketyNotFound = "BucketyNotFound"
	// ReasonBucketyNotReady: an access waits for its Buckety's backend
	// resource.
	ReasonBucketyNotReady = "BucketyNotReady"
	// ReasonNotShared: an access names a Buckety of another namespace that
	// does not share it with the access's namespace and role (its
	// spec.sharing, within the backend's sharing configuration), or no
	// longer does: the access holds no credential and no Secret.
	ReasonNotShared = "NotShared"
	// ReasonBackendAccessDenied: the backend refused the controller's
	// credentials or permissions.
	ReasonBackendAccessDenied = "BackendAccessDenied"
	// ReasonAccessesNotReady: the backend resource is provisioned, but some
	// access Secrets are not in sync yet.
	ReasonAccessesNotReady = "AccessesNotReady"
	// ReasonDriverChanged: the backend of this name now uses another driver
	// than status.driver.
	ReasonDriverChanged = "DriverChanged"
	// ReasonInvalidAccess: the access's role or parameters fail the driver's
	// validation, or its name is too long to label its Secret
	// (MaxAccessNameLength).
	ReasonInvalidAccess = "InvalidAccess"
	// ReasonNotApplicable: the condition type does not apply to this kind.
	ReasonNotApplicable = "NotApplicable"
	// ReasonPaused: reconciliation is paused by another condition.
	ReasonPaused = "Paused"
)

// Labels the controller sets.
const (
	// ManagedByLabel marks Secrets written by buckety
	// (app.kubernetes.io/managed-by=buckety); the controller caches only
	// these.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// ManagedByValue is ManagedByLabel's value.
	ManagedByValue = "buckety"
	// AccessLabel names the BucketyAccess a Secret belongs to.
	AccessLabel = "buckety.yolean.se/access"
)
