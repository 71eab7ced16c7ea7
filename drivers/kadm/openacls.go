package kadm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/Yolean/buckety-controller/drivers"
)

// ReasonBrokersAllowWithoutACLs is the warning of a backend issuing a
// user per access on a cluster whose brokers let every authenticated user
// do what no ACL names (Kafka's allow.everyone.if.no.acl.found=true): the
// BucketyBackend's Degraded reason.
const ReasonBrokersAllowWithoutACLs = "BrokersAllowWithoutACLs"

// ReasonBrokerConfigsUnreadable is the warning of a backend issuing a
// user per access whose principal the brokers refuse DescribeConfigs on
// the cluster, so that whether they let every user do what no ACL names
// cannot be told.
const ReasonBrokerConfigsUnreadable = "BrokerConfigsUnreadable"

// ReasonBrokersHideAllowWithoutACLs is the warning of a backend issuing a
// user per access on a cluster whose brokers set
// allow.everyone.if.no.acl.found in their config but do not report its
// value: Apache Kafka reports a setting it has no type for (its
// authorizer's settings are not among the broker's own) as sensitive, with
// no value, so true and false look the same.
const ReasonBrokersHideAllowWithoutACLs = "BrokersHideAllowWithoutACLs"

// allowEveryoneKey is the broker setting: with it true, a resource that no
// ACL matches is open to every user, not only to the superusers.
const allowEveryoneKey = "allow.everyone.if.no.acl.found"

// Per-access users keep tenants apart only where every resource a tenant
// must not reach carries an ACL, or the brokers deny what no ACL names
// (Kafka's default). With allow.everyone.if.no.acl.found=true on a broker,
// an access's own user, whose password its tenant holds, reaches every
// topic and group no ACL names: the owner registry (where it could write
// forged records or tombstones), and every Buckety's topic no access is
// scoped to yet. Such users are still narrower than the backend's own
// (the topics of scoped accesses carry their ACLs), so the backend keeps
// issuing them, and warns: the BucketyBackend goes Degraded, and its
// operator sets the key to false.
//
// The setting is read in the probe, at most once every
// registryConfigsEvery, from every broker the probe's metadata names (one
// DescribeConfigs each: the
// value is a broker's own static config, which a cluster-wide read does
// not show). A reading the brokers refuse is a verdict of its own
// (BrokerConfigsUnreadable, naming the ACL to grant), as the registry's
// is: a setting nobody can read must not pass for false, nor a fixed one
// stay reported once the read is refused. Any other failed reading keeps
// the last verdict; a backend that issues no per-access users is not
// read.
type openVerdict struct {
	mu      sync.Mutex
	at      time.Time
	warning drivers.Warning
}

// judgeOpenACLs reads allow.everyone.if.no.acl.found from brokers (their
// node IDs, from the probe's metadata) when the last reading is older
// than registryConfigsEvery, and keeps the verdict.
func (b *Backend) judgeOpenACLs(ctx context.Context, brokers []int32) {
	if b.cfg.sharedReason(b.name) != "" {
		return
	}
	v := &b.open
	now := b.observed.now()
	v.mu.Lock()
	due := v.at.IsZero() || now.Sub(v.at) >= registryConfigsEvery
	if due {
		v.at = now
	}
	v.mu.Unlock()
	if !due {
		return
	}
	w, err := b.brokersOpen(ctx, brokers)
	if err != nil {
		return
	}
	v.mu.Lock()
	v.warning = w
	v.mu.Unlock()
}

// openWarning is the verdict judgeOpenACLs holds.
func (b *Backend) openWarning() drivers.Warning {
	v := &b.open
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.warning
}

// brokersOpen reads allow.everyone.if.no.acl.found from brokers and says,
// as a warning, which set it true: the zero Warning when none does.
// A broker that does not report the key (Redpanda, a broker without it in
// its config) keeps Kafka's default, false; one that reports it without
// its value hides it (judgeBrokerConfigs). An error means nothing was
// judged: some broker did not answer.
func (b *Backend) brokersOpen(ctx context.Context, brokers []int32) (drivers.Warning, error) {
	if len(brokers) == 0 {
		// No broker ID: a cluster-wide read would not show the brokers'
		// own configs.
		return drivers.Warning{}, fmt.Errorf("describe broker configs: the metadata names no broker")
	}
	rcs, err := b.adm.DescribeBrokerConfigs(ctx, brokers...)
	var se *kadm.ShardErrors
	if err != nil && !errors.As(err, &se) {
		if refusedConfigs(err) {
			return b.brokerConfigsDenied(), nil
		}
		return drivers.Warning{}, b.classify(fmt.Errorf("describe broker configs: %w", err))
	}
	return b.judgeBrokerConfigs(rcs, err)
}

// judgeBrokerConfigs is brokersOpen's verdict on the brokers' answer rcs
// (err: the request's error, kadm.ShardErrors or nil). A broker that
// reports the key without a value, or as sensitive (Apache Kafka, for a
// setting it has no type for), hides it: with no broker found open, that
// is a warning of its own, since a hidden true must not pass for false.
func (b *Backend) judgeBrokerConfigs(rcs kadm.ResourceConfigs, err error) (drivers.Warning, error) {
	var open, hidden []string
	denied := refusedConfigs(err)
	for _, rc := range rcs {
		if rc.Err != nil {
			denied = denied || refusedConfigs(rc.Err)
			err = errors.Join(err, fmt.Errorf("broker %s: %w", rc.Name, rc.Err))
			continue
		}
		for _, c := range rc.Configs {
			if c.Key != allowEveryoneKey {
				continue
			}
			switch {
			case c.Value == nil || c.Sensitive:
				hidden = append(hidden, rc.Name)
			case strings.EqualFold(strings.TrimSpace(*c.Value), "true"):
				open = append(open, rc.Name)
			}
		}
	}
	switch {
	case len(open) > 0:
		// What the brokers that answered say stands; the others are
		// read again next time.
	case len(hidden) > 0:
		slices.Sort(hidden)
		return drivers.Warning{Reason: ReasonBrokersHideAllowWithoutACLs, Message: fmt.Sprintf(
			"broker %s of backend %s sets %s in its config but does not report its value (Kafka reports its authorizer's settings as sensitive), so whether it is true cannot be told: "+
				"with it true, every authenticated user, each access's own among them, may do what no ACL names, so per-access users do not keep tenants apart (a tenant's user reaches the owner registry %s and every Buckety's topic that no access is scoped to); "+
				"if it is false, remove it from the brokers' config (false is Kafka's default) and this warning goes; if it is true, set it to false, after giving any other client that relies on it the ACLs it needs",
			strings.Join(hidden, ", "), b.name, allowEveryoneKey, b.cfg.registryTopic())}, nil
	case denied:
		return b.brokerConfigsDenied(), nil
	case err != nil:
		return drivers.Warning{}, b.classify(fmt.Errorf("describe broker configs: %w", err))
	default:
		return drivers.Warning{}, nil
	}
	slices.Sort(open)
	return drivers.Warning{Reason: ReasonBrokersAllowWithoutACLs, Message: fmt.Sprintf(
		"broker %s of backend %s sets %s=true: every authenticated user, each access's own among them, may do what no ACL names on a topic or group, "+
			"so per-access users do not keep tenants apart: a tenant's user reaches the owner registry %s (and could write forged ownership records to it) and every Buckety's topic that no access is scoped to; "+
			"set %s=false on every broker (Kafka's default), after giving any other client that relies on it the ACLs it needs",
		strings.Join(open, ", "), b.name, allowEveryoneKey, b.cfg.registryTopic(), allowEveryoneKey)}, nil
}

// refusedConfigs reports whether err is the brokers refusing the
// backend's principal DescribeConfigs on the cluster.
func refusedConfigs(err error) bool {
	return errors.Is(err, kerr.ClusterAuthorizationFailed)
}

// brokerConfigsDenied is the warning of brokers that refuse the backend's
// principal the read of their configs.
func (b *Backend) brokerConfigsDenied() drivers.Warning {
	who := b.cfg.saslPrincipal()
	grant := "kafka-acls --bootstrap-server BROKER --add --allow-principal " + who + " --operation DescribeConfigs --cluster"
	return drivers.Warning{Reason: ReasonBrokerConfigsUnreadable, Message: fmt.Sprintf(
		"the brokers of backend %s refuse principal %s DescribeConfigs on the cluster, so whether they let every user do what no ACL names (%s=true) cannot be told; "+
			"with it true, per-access users would not keep tenants apart; grant it: %s",
		b.name, who, allowEveryoneKey, grant)}
}
