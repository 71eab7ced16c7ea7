package drivers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
)

// Owner records. Claims, provenance and credential records live in one
// cluster's API server; a second installation pointed at the same service,
// or the same installation rebuilt from git after its etcd was lost, sees
// none of them. So buckety also keeps, on the service itself, a record of
// which installation owns each resource it created: an S3 bucket's tags, a
// Kafka backend's registry topic. Only buckety's own (admin) credentials
// can read or change it: no tenant principal is ever granted a right on it.
//
// The controller reads the record wherever a claim alone decided before:
// an existing resource whose record names another installation is never
// adopted or written; one whose record names this installation and the
// same Buckety (namespace and name) is re-attached after a rebuild; a
// retained one is adopted only with today's keys.

// OwnerState is what the owner record says about its owner's hold.
type OwnerState string

const (
	// OwnerHeld: the installation holds the resource for the Buckety named.
	OwnerHeld OwnerState = "Held"
	// OwnerRetained: the Buckety named was deleted with retentionPolicy
	// Retain; the resource is kept, and re-attached to nobody without the
	// adoption keys.
	OwnerRetained OwnerState = "Retained"
	// OwnerHandedOver: the installation gives the resource to the
	// installation named in To, whose maintainer must accept it.
	OwnerHandedOver OwnerState = "HandedOver"
)

// OwnerRecord is the record of ownership buckety keeps on the service with
// a resource.
type OwnerRecord struct {
	// Installation names the owning installation (buckety-controller.yaml
	// installation).
	Installation string `json:"installation"`
	// Namespace, Name and UID identify the owning Buckety.
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	// State is Held, Retained or HandedOver.
	State OwnerState `json:"state"`
	// To names the receiving installation of a handover.
	To string `json:"to,omitempty"`
	// Adopted: buckety adopted the resource, it did not create it. A
	// Buckety re-attached to it (a cluster rebuilt from git, a handover)
	// holds it as adopted, which retentionPolicy Delete deletes only where
	// the backend sets adoption.deleteAdopted.
	Adopted bool `json:"adopted,omitempty"`
	// ResourceID is the service's own identity of the resource the record
	// was written for, where the service gives one that a resource of the
	// same name created again does not share (a Kafka topic ID): a
	// resource deleted out of band and made again under its name by
	// someone else (a producer's auto-create, an administrator) is then
	// told from the one the record holds, and buckety neither converges,
	// drains nor deletes it. The driver fills it in and checks it (the
	// controller composes records without it, and keeps it where it
	// copies a record it read); "" in a record written before it was
	// kept, or by a driver whose service has no such identity (S3 bucket
	// tags never carry it).
	ResourceID string `json:"resourceID,omitempty"`
	// ClearedResourceID is kadm's alone: the ID of the topic found deleted
	// out of band, kept when the driver cleared it from ResourceID before
	// it created the topic again (whose answer may be lost). A broker whose
	// metadata is behind the deletion may still answer that ID: that is
	// not the Buckety's topic, and the record is not bound to it (unless
	// two reads answer it: the topic was never gone). "" once the record
	// names a topic again. The driver keeps it to itself: ReadOwner
	// answers records without it, so the controller neither compares nor
	// copies it, and WriteOwner carries it over where it carries
	// ResourceID.
	ClearedResourceID string `json:"clearedResourceID,omitempty"`
}

// String describes the record for the controller's log.
func (o OwnerRecord) String() string {
	return o.describe(fmt.Sprintf("Buckety %s/%s", o.Namespace, o.Name))
}

// StringFor describes the record for a tenant of namespace: the Buckety
// it is held for is named only when it is in that namespace. Any tenant
// may name a resource literally (spec.name), and a message naming the
// holder's namespace would tell which namespace holds which name, on this
// cluster or another (a claim's refusal says no more either).
func (o OwnerRecord) StringFor(namespace string) string {
	return o.describe(o.HolderFor(namespace))
}

// HolderFor names the Buckety the record is held for, as a tenant of
// namespace may read it (StringFor).
func (o OwnerRecord) HolderFor(namespace string) string {
	if o.Namespace == namespace {
		return fmt.Sprintf("Buckety %s/%s", o.Namespace, o.Name)
	}
	return "a Buckety of another namespace"
}

func (o OwnerRecord) describe(holder string) string {
	s := fmt.Sprintf("installation %s (%s)", o.Installation, holder)
	switch o.State {
	case OwnerRetained:
		s += ", retained"
	case OwnerHandedOver:
		s += ", handed over to installation " + o.To
	}
	if o.Adopted {
		s += ", adopted"
	}
	return s
}

// Same reports whether o and p hold the same values. ResourceID counts
// only when both carry one: it is the driver's, and a record the
// controller wants (composed without it) is the same as the one the
// driver stored with it, so a pass that finds its record in place writes
// nothing, rather than writing it again on every pass.
func (o *OwnerRecord) Same(p *OwnerRecord) bool {
	if o == nil || p == nil {
		return o == p
	}
	a, b := *o, *p
	if a.ResourceID == "" || b.ResourceID == "" {
		a.ResourceID, b.ResourceID = "", ""
	}
	return a == b
}

// OwnerRecorder is an optional capability of a Backend: keeping an owner
// record with each resource on the service.
type OwnerRecorder interface {
	// OwnerRecords reports whether this backend keeps owner records, and
	// when not, why (an S3 implementation without bucket tagging): the
	// controller then says so in a condition and keeps today's claims
	// alone. The answer may be cached; an error means the service could not
	// be asked.
	OwnerRecords(ctx context.Context) (bool, string, error)
	// ReadOwner returns the owner record of the resource r names, nil when
	// it has none (or the resource does not exist). With r.MaxAge 0 it
	// reads the service now: another installation's write made a moment
	// ago is seen. With r.MaxAge > 0 it may answer from what this backend
	// read or wrote within MaxAge.
	ReadOwner(ctx context.Context, r Resource) (*OwnerRecord, error)
	// WriteOwner makes rec the owner record of the resource r names (nil
	// removes it). It keeps whatever else the service holds with the
	// resource (a bucket's other tags). The controller has checked, with a
	// fresh ReadOwner, that the record it replaces is its own or none.
	WriteOwner(ctx context.Context, r Resource, rec *OwnerRecord) error
}

// OwnerRegistry is an optional capability of an OwnerRecorder whose
// records are kept apart from the resources they name (kadm's registry
// topic), so a record outlives its resource: a topic deleted out of band
// keeps its owner's record, and ReadOwner answers it for a resource that
// does not exist. The controller then reads the record of a missing
// resource before it creates one of that name, and another installation's
// record keeps it from taking the name over while that installation holds
// it. An OwnerRecorder that keeps its records with the resource (a
// bucket's tags) has none to read once the resource is gone, and is not
// asked: a create costs no extra request there.
type OwnerRegistry interface {
	// OwnerRecordsOutliveResources reports that the records are kept
	// apart from the resources.
	OwnerRecordsOutliveResources() bool
}

// RegistryEpochs is an optional capability of an OwnerRegistry whose
// registry can be lost apart from the resources it records (kadm's
// registry topic deleted and created again, by hand or with the cluster):
// every record is then gone at once, while the resources stand. The
// controller's drift sweep catches the registry up and, when its epoch
// moved, has every Buckety on the backend write its record again at once
// rather than at its next periodic pass (hours, where the sweep sees all
// drift), during which another installation could adopt the resource.
type RegistryEpochs interface {
	// CatchUpRegistry reads what the registry gained since this backend
	// last read it, unless that was at most maxAge ago; it finds the
	// registry created again.
	CatchUpRegistry(ctx context.Context, maxAge time.Duration) error
	// RegistryEpoch is a number that changes each time this backend found
	// its registry deleted and created again (0 until then). It reads
	// nothing.
	RegistryEpoch() uint64
}

// PrincipalLister is an optional capability of a CredentialIssuer: listing
// the principals one installation issued on the service, so that after a
// rebuild (or a BucketyCredential record deleted by hand) the principals no
// live access accounts for are revoked, and another installation's are
// never touched. A principal carries its installation's marker in its
// name (Access.Installation, see CredentialIssuer.Principal).
type PrincipalLister interface {
	// ListPrincipals returns the principals on the service whose names
	// carry installation's marker.
	ListPrincipals(ctx context.Context, installation string) ([]string, error)
}

// InstallationMarker is the short, fixed-length mark of an installation in
// the names of the principals it issues: 8 hex digits of its SHA-256.
func InstallationMarker(installation string) string {
	return shortHash(installation, 4)
}

func shortHash(s string, n int) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:n])
}
