package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Reasons the controller's leader-only checks revoke a credential
// (CredentialsRevoked's reason label).
const (
	// RevokedAccessGone: the credential's access is gone (its finalizer
	// was removed by hand).
	RevokedAccessGone = "access_gone"
	// RevokedBucketyGone: the Buckety it was granted on is gone.
	RevokedBucketyGone = "buckety_gone"
	// RevokedClaimGone: the claim it was granted through is gone or owned
	// by another Buckety.
	RevokedClaimGone = "claim_gone"
	// RevokedRetired: rotated out, past its retireAfter.
	RevokedRetired = "retired"
	// RevokedRoleNarrowed: rotated out, holding a role with a right its
	// access's role no longer has.
	RevokedRoleNarrowed = "role_narrowed"
	// RevokedUnaccounted: a principal this installation issued that no
	// BucketyCredential record names (a rebuild, a record deleted by hand),
	// past the backend's credentials.orphanGrace.
	RevokedUnaccounted = "unaccounted"
)

// CredentialsRevoked counts the credentials the controller's checks
// revoked (not those revoked by an access's own deletion or rotation), per
// backend and reason; the controller's log names each principal.
var CredentialsRevoked = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "buckety_credentials_revoked_total",
	Help: "Credentials revoked by the orphan checks, by reason (access_gone, buckety_gone, claim_gone, retired, role_narrowed, unaccounted); the log names each principal.",
}, []string{"backend", "reason"})

func init() {
	ctrlmetrics.Registry.MustRegister(CredentialsRevoked)
}
