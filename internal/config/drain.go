package config

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/Yolean/buckety-controller/drivers"
)

// Drain configures Buckety spec.drain on a backend: whether tenants may
// empty their resources with it, and the pace of the drain passes where
// the Buckety does not set its own.
type Drain struct {
	// Allow lets Bucketies on this backend set spec.drain. Default: the
	// driver's (true for s3, false for kadm: a topic's records may be read
	// by consumers its owner does not know of).
	Allow *bool `json:"allow,omitempty"`
	// Interval is how long a drain that found nothing to delete waits
	// before its next pass in its first hour; a Buckety's
	// spec.drain.interval overrides it. Default 10s.
	Interval drivers.Duration `json:"interval,omitzero"`
	// SlowInterval is Interval once the drain is an hour old, as
	// StorageGrid's drain polls less often after its first hour; a
	// Buckety's spec.drain.slowInterval overrides it. Not shorter than
	// Interval. Default six times the interval.
	SlowInterval drivers.Duration `json:"slowInterval,omitzero"`
	// StuckAfter is how long a drain may go without deleting anything
	// before it reports DrainStuck with a Warning event; a Buckety's
	// spec.drain.stuckAfter overrides it. Default 30m.
	StuckAfter drivers.Duration `json:"stuckAfter,omitzero"`
}

// DefaultDrainInterval is Drain.Interval when neither the Buckety nor the
// backend sets one.
const DefaultDrainInterval = 10 * time.Second

// DefaultDrainSlowFactor is how many times the interval a drain waits once
// it is an hour old when neither the Buckety nor the backend sets a
// slowInterval.
const DefaultDrainSlowFactor = 6

// DefaultDrainStuckAfter is Drain.StuckAfter when neither the Buckety nor
// the backend sets one.
const DefaultDrainStuckAfter = 30 * time.Minute

// MinDrainInterval is the shortest drain interval accepted, from the
// Buckety or the backend: a drain that finds nothing to delete is not
// polled faster.
const MinDrainInterval = time.Second

// AllowsDrain reports whether Bucketies on b may set spec.drain: the
// backend's drain.allow, else its driver's default; never on a driver
// that cannot drain.
func (b *Backend) AllowsDrain() bool {
	pol := drivers.DrainPolicyOf(b.driver)
	if !pol.Supported {
		return false
	}
	if b.Drain != nil && b.Drain.Allow != nil {
		return *b.Drain.Allow
	}
	return pol.AllowedByDefault
}

// DrainRefusal says, naming the field and the config key, why spec.drain
// is not allowed on b; "" when it is.
func (b *Backend) DrainRefusal() string {
	pol := drivers.DrainPolicyOf(b.driver)
	switch {
	case !pol.Supported:
		return fmt.Sprintf("spec.drain is not supported on backend %q: driver %s cannot empty a resource", b.Name, b.Driver)
	case b.AllowsDrain():
		return ""
	case b.Drain != nil && b.Drain.Allow != nil:
		return fmt.Sprintf("spec.drain is not allowed on backend %q: its configuration in buckety-controller.yaml sets drain.allow: false; remove spec.drain, or ask the cluster maintainer", b.Name)
	}
	return fmt.Sprintf("spec.drain is not allowed on backend %q: driver %s does not allow drains unless the backend's configuration in buckety-controller.yaml sets drain.allow: true; remove spec.drain, or ask the cluster maintainer", b.Name, b.Driver)
}

// DrainInterval is b's drain.interval, or DefaultDrainInterval.
func (b *Backend) DrainInterval() time.Duration {
	if b.Drain != nil && b.Drain.Interval.Duration > 0 {
		return b.Drain.Interval.Duration
	}
	return DefaultDrainInterval
}

// DrainSlowInterval is b's drain.slowInterval, 0 when it sets none (the
// slow interval then follows the interval: DefaultDrainSlowFactor times
// it).
func (b *Backend) DrainSlowInterval() time.Duration {
	if b.Drain != nil {
		return b.Drain.SlowInterval.Duration
	}
	return 0
}

// SlowIntervalProblem says what is wrong with a drain's slowInterval slow
// given the interval it slows from (from names where that came from, for
// the message), "" when nothing: it must be positive and not shorter than
// the interval. The config, admission and the controller share it.
func SlowIntervalProblem(slow, interval time.Duration, from string) string {
	switch {
	case slow <= 0:
		return fmt.Sprintf("must be positive (absent: %d times the interval)", DefaultDrainSlowFactor)
	case slow < interval:
		return fmt.Sprintf("must not be shorter than the interval it slows from (%s: %s)", interval, from)
	}
	return ""
}

// DrainStuckAfter is b's drain.stuckAfter, or DefaultDrainStuckAfter.
func (b *Backend) DrainStuckAfter() time.Duration {
	if b.Drain != nil && b.Drain.StuckAfter.Duration > 0 {
		return b.Drain.StuckAfter.Duration
	}
	return DefaultDrainStuckAfter
}

// validateDrain checks the drain block. The driver is checked in
// validateDriverFields (drain.allow true on a driver that cannot drain),
// since validateFields runs before the driver resolves.
func (b *Backend) validateDrain(p *field.Path) field.ErrorList {
	d := b.Drain
	if d == nil {
		return nil
	}
	var errs field.ErrorList
	if d.Interval.Duration != 0 && d.Interval.Duration < MinDrainInterval {
		errs = append(errs, field.Invalid(p.Child("interval"), d.Interval.String(), fmt.Sprintf("must be at least %s (absent: %s)", MinDrainInterval, DefaultDrainInterval)))
	}
	if d.SlowInterval.Duration != 0 {
		from := "drain.interval"
		if d.Interval.Duration == 0 {
			from = "the default drain.interval"
		}
		if msg := SlowIntervalProblem(d.SlowInterval.Duration, b.DrainInterval(), from); msg != "" {
			errs = append(errs, field.Invalid(p.Child("slowInterval"), d.SlowInterval.String(), msg))
		}
	}
	if d.StuckAfter.Duration < 0 {
		errs = append(errs, field.Invalid(p.Child("stuckAfter"), d.StuckAfter.String(), fmt.Sprintf("must be positive (absent: %s)", DefaultDrainStuckAfter)))
	}
	return errs
}

// validateDrainDriver refuses drain.allow: true on a driver that cannot
// drain.
func (b *Backend) validateDrainDriver(p *field.Path) field.ErrorList {
	if b.Drain == nil || b.Drain.Allow == nil || !*b.Drain.Allow || b.driver == nil || drivers.DrainPolicyOf(b.driver).Supported {
		return nil
	}
	return field.ErrorList{field.Invalid(p.Child("drain", "allow"), true, fmt.Sprintf("driver %s cannot empty a resource; remove drain.allow", b.Driver))}
}
