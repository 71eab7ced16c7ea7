package v1alpha1

// Event reasons, one per thing that happened. The controller records
// events.k8s.io Events on the object they concern; the note carries the
// specifics. Where an event reports what a condition reason also says, it
// reuses that reason, so the event and the condition can be matched.
const (
	// EventProvisioned (Normal, Buckety): an existing backend resource was
	// adopted, or the Buckety moved to another resource, and its status
	// records it for the first time. The note names the resource, the
	// backend, the driver and, with spec.defaultAccess, the implicit access
	// and its Secret. A resource created for a new Buckety sends no event:
	// the Provisioned condition tells it, and an event per create would be
	// an API write per Buckety.
	EventProvisioned = "Provisioned"
	// EventUpdated (Normal, Buckety): a change of spec.parameters was
	// applied to the backend resource; the note lists the changes.
	EventUpdated = "Updated"
	// EventDriftRepaired (Normal, Buckety): the backend resource had
	// drifted from spec.parameters out of band and was put back; the note
	// lists the changes.
	EventDriftRepaired = "DriftRepaired"
	// EventDriftUnrepairable (Warning, Buckety): the driver found drift it
	// will not repair (condition reason ReasonDriftUnrepairable).
	EventDriftUnrepairable = ReasonDriftUnrepairable
	// EventNameConflict (Warning, Buckety): another Buckety owns the backend
	// resource (condition reason ReasonNameConflict); reported once per
	// episode.
	EventNameConflict = ReasonNameConflict
	// EventAdoptionRefused (Warning, Buckety): the backend resource exists
	// and holds content, and is not claimed (condition reason
	// ReasonAdoptionRefused).
	EventAdoptionRefused = ReasonAdoptionRefused
	// EventAdoptionDrift (Warning, Buckety): a resource being adopted
	// differs from spec.parameters and nothing was applied (condition
	// reason ReasonAdoptionDrift); reported once per generation.
	EventAdoptionDrift = ReasonAdoptionDrift
	// EventAdoptionConverging (Normal, Buckety): spec.adoption is
	// AdoptAndConverge, and the differences in the note are being applied
	// to the adopted resource.
	EventAdoptionConverging = "AdoptionConverging"
	// EventImplicitAccessCreated (Normal, Buckety): the implicit
	// BucketyAccess of spec.defaultAccess was created after the first
	// provisioning (the first one is told by the status, or by
	// EventProvisioned for an adoption).
	EventImplicitAccessCreated = "ImplicitAccessCreated"
	// EventImplicitAccessRemoved (Normal, Buckety): the implicit
	// BucketyAccess was deleted, because spec.defaultAccess was removed or
	// an explicit BucketyAccess targets the Buckety.
	EventImplicitAccessRemoved = "ImplicitAccessRemoved"
	// EventRetained (Normal, Buckety; Warning when retentionPolicy Delete
	// could not be honoured because the resource under the name is not
	// the one the Buckety held): the Buckety was deleted and its backend
	// resource left in place; the note says why.
	EventRetained = "Retained"
	// EventDeletionProgress (Normal, Buckety): deleting the backend resource
	// takes several passes; the note counts what was removed so far.
	EventDeletionProgress = "DeletionProgress"
	// EventDeleted (Normal, Buckety): the backend resource was deleted with
	// its Buckety.
	EventDeleted = "Deleted"
	// EventQuotaReached (Warning, Buckety): status.usage reached the hard
	// quota, and the service refuses writes (condition QuotaWarning,
	// reason ReasonQuotaReached); once per episode.
	EventQuotaReached = ReasonQuotaReached
	// EventSoftQuotaReached (Warning, Buckety): status.usage reached the
	// soft quota (condition QuotaWarning, reason ReasonSoftQuotaReached);
	// once per episode.
	EventSoftQuotaReached = ReasonSoftQuotaReached
	// EventBudgetExceeded (Warning, Buckety): the namespace's budget on the
	// backend has no room for the Buckety or its growth (Ready reason
	// ReasonBudgetExceeded); once per episode.
	EventBudgetExceeded = ReasonBudgetExceeded
	// EventDrainStarted (Normal, Buckety): a drain started for a new
	// spec.drain.request; the note says what the resource held, where
	// known.
	EventDrainStarted = "DrainStarted"
	// EventDrainCompleted (Normal, Buckety): a drain found the resource
	// empty; the note says what it deleted and how long it took.
	EventDrainCompleted = "DrainCompleted"
	// EventDrainCancelled (Normal, Buckety): a drain was cancelled before
	// it completed; the note says why and what it had deleted.
	EventDrainCancelled = "DrainCancelled"
	// EventDrainStuck (Warning, Buckety): a drain deleted nothing for its
	// stuckAfter (condition Draining, reason ReasonDrainStuck); once per
	// episode.
	EventDrainStuck = ReasonDrainStuck
	// EventDrainRefused (Warning, Buckety): a drain was refused or
	// stopped by a rule (status.drain.phase Refused); the note says which.
	EventDrainRefused = ReasonDrainRefused

	// EventSecretWritten (Normal, BucketyAccess): the credentials Secret was
	// created; not reported for the first Secret of an implicit access,
	// which its Buckety's event already announced.
	EventSecretWritten = "SecretWritten"
	// EventCredentialRotated (Normal, BucketyAccess): a rotation (spec.rotation
	// changed, or the credential reached the backend's credentials.maxAge)
	// issued a new principal for the access's Secret; the note names the
	// new and the old principal, and how long the old one keeps working.
	EventCredentialRotated = "CredentialRotated"
	// EventSecretRepaired (Normal, BucketyAccess): the credentials Secret
	// did not hold the expected keys and was rewritten.
	EventSecretRepaired = "SecretRepaired"
	// EventReissuePaced (Warning, BucketyAccess): the credentials Secret
	// no longer holds the access's credential (someone other than buckety
	// changed or deleted it) soon after buckety last issued it again for
	// that reason: the next issue waits, so a Secret changed in a loop
	// does not turn into a loop of backend writes; the note says until
	// when. Reported once per wait.
	EventReissuePaced = "ReissuePaced"
	// EventCredentialRevoked (Warning, BucketyAccess): the access's role
	// was narrowed and the backend refused to grant the narrower role
	// (not a backend that did not answer: one that said no, as a bucket
	// policy with no room left does), so the key that held the wider role
	// was revoked rather than left with rights its access no longer
	// names; the note names the key, both roles and the refusal.
	EventCredentialRevoked = "CredentialRevoked"
	// EventSecretConflict (Warning, BucketyAccess): a Secret of the
	// credentials name exists and is not this access's (condition reason
	// ReasonSecretConflict); reported once per episode.
	EventSecretConflict = ReasonSecretConflict
)

// Event actions: what the controller was doing when an event happened.
const (
	// EventActionClaim: claiming the backend resource.
	EventActionClaim = "Claim"
	// EventActionProvision: checking and provisioning the backend resource.
	EventActionProvision = "Provision"
	// EventActionAdopt: settling the adoption of an existing resource.
	EventActionAdopt = "Adopt"
	// EventActionReconcile: converging the backend resource and the
	// implicit access with the spec.
	EventActionReconcile = "Reconcile"
	// EventActionDelete: deleting or retaining the backend resource.
	EventActionDelete = "Delete"
	// EventActionDrain: emptying the backend resource (spec.drain).
	EventActionDrain = "Drain"
	// EventActionWriteSecret: writing an access's credentials Secret.
	EventActionWriteSecret = "WriteSecret"
)
