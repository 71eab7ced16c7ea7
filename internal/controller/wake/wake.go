// Package wake carries the messages that wake an object of one controller
// from outside that controller's own watches: the drift sweep and the
// usage refresh telling the Buckety controller that a resource drifted or
// a QuotaWarning changed, the credential sweep telling the access
// controller that a credential drifted, and the Buckety controller telling
// accesses that their Buckety's resource is provisioned (its status held
// for them, buckety.Held). Each message is a method named for what it
// means; each controller watches its own sources (BucketySources,
// AccessSources). The wiring makes one Channels and hands it to both
// controllers and to the leader's loops.
//
// A sender waits while the controller's buffer is full, until its context
// ends: nothing is dropped. A nil *Channels sends nothing and has no
// sources (tests that drive a reconciler directly).
package wake

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// buffer is how many messages of one kind may wait for their controller
// to take them before a sender waits.
const buffer = 64

// Channels are the wake-ups between the controllers and the leader's loops.
type Channels struct {
	drifted, quotaWarning    chan event.GenericEvent
	provisioned, credentials chan event.GenericEvent
}

// New makes the channels, each with its buffer.
func New() *Channels {
	return &Channels{
		drifted:      make(chan event.GenericEvent, buffer),
		quotaWarning: make(chan event.GenericEvent, buffer),
		provisioned:  make(chan event.GenericEvent, buffer),
		credentials:  make(chan event.GenericEvent, buffer),
	}
}

// BucketyDrifted wakes b: the drift sweep found its resource drifted.
func (c *Channels) BucketyDrifted(ctx context.Context, b *v1.Buckety) error {
	if c == nil {
		return nil
	}
	return send(ctx, c.drifted, b)
}

// QuotaWarningChanged wakes b: the usage refresh found that its
// QuotaWarning would change.
func (c *Channels) QuotaWarningChanged(ctx context.Context, b *v1.Buckety) error {
	if c == nil {
		return nil
	}
	return send(ctx, c.quotaWarning, b)
}

// ProvisionedFor wakes the accesses of b named: b's resource is
// provisioned for its generation, and the status that says so is held for
// them to read (buckety.Held), not yet written. It stops when ctx ends.
func (c *Channels) ProvisionedFor(ctx context.Context, b *v1.Buckety, accesses []string) {
	if c == nil {
		return
	}
	for _, n := range accesses {
		if send(ctx, c.provisioned, access(b.Namespace, n)) != nil {
			return
		}
	}
}

// CredentialDrifted wakes the access namespace/name: the credential sweep
// found what its principal may do differ from what it should.
func (c *Channels) CredentialDrifted(ctx context.Context, namespace, name string) error {
	if c == nil {
		return nil
	}
	return send(ctx, c.credentials, access(namespace, name))
}

// BucketySources are the Buckety controller's sources of these messages.
func (c *Channels) BucketySources() []source.Source {
	if c == nil {
		return nil
	}
	return sources(c.drifted, c.quotaWarning)
}

// AccessSources are the access controller's sources of these messages.
func (c *Channels) AccessSources() []source.Source {
	if c == nil {
		return nil
	}
	return sources(c.credentials, c.provisioned)
}

// access is the object that enqueues the access namespace/name.
func access(namespace, name string) *v1.BucketyAccess {
	return &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
}

// send hands obj to ch's controller, or returns ctx's error once it ends.
func send(ctx context.Context, ch chan<- event.GenericEvent, obj client.Object) error {
	select {
	case ch <- event.GenericEvent{Object: obj}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sources watches each of chs, enqueueing the object each message names.
func sources(chs ...chan event.GenericEvent) []source.Source {
	out := make([]source.Source, len(chs))
	for i, ch := range chs {
		out[i] = source.Channel(ch, &handler.EnqueueRequestForObject{})
	}
	return out
}
