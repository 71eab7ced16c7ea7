package kadm

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/Yolean/buckety-controller/drivers"
)

// Plans. Desired and actual state of a topic are compared in one place,
// planFor: Ensure writes what the plan says, and Sweep reports a topic as
// drifted exactly when Ensure would write.

// plan is what Ensure does to an existing topic to bring it to its
// parameters.
type plan struct {
	// growTo is the partition count to grow to; 0: none.
	growTo int32
	// alters are the config changes, in one IncrementalAlterConfigs.
	alters []kadm.AlterConfig
	// changes describes every write, one line each (EnsureResult.Changes).
	changes []string
	// drift is what Ensure reports and does not repair.
	drift *drivers.DriftError
}

// empty reports whether the plan has nothing to write or report.
func (p plan) empty() bool { return p.growTo == 0 && len(p.alters) == 0 && p.drift == nil }

// created is the state of a topic just created with want: what the request
// set. A broker default (partitions or replication factor -1) is unknown
// (0); planFor compares those only when the parameters set them, and a
// plan that would change them reads the topic first.
func created(want params) topicState {
	return topicState{exists: true, partitions: max(want.partitions, 0), replicationFactor: max(want.replicationFactor, 0), dynamic: want.configs}
}

// planFor compares a topic's state with the parameters. It is the one place
// where desired and actual state are compared: Ensure writes what it plans,
// and Sweep reports a topic as drifted exactly when Ensure would write.
func planFor(want params, st topicState) plan {
	var p plan
	if want.replicationFactor > 0 && st.replicationFactor != want.replicationFactor {
		p.drift = &drivers.DriftError{Parameter: ParamReplicationFactor, Current: strconv.Itoa(int(st.replicationFactor)), Desired: strconv.Itoa(int(want.replicationFactor)),
			Reason: "Kafka cannot change a topic's replication factor in place; reassign partitions with Kafka's tools, or recreate the topic"}
	}
	if want.partitions > 0 {
		switch {
		case st.partitions < want.partitions:
			p.growTo = want.partitions
			p.changes = append(p.changes, fmt.Sprintf("partitions %d -> %d", st.partitions, want.partitions))
		case st.partitions > want.partitions:
			p.drift = &drivers.DriftError{Parameter: ParamPartitions, Current: strconv.Itoa(int(st.partitions)), Desired: strconv.Itoa(int(want.partitions)),
				Reason: "Kafka cannot remove partitions; set partitions to at least the current count, or recreate the topic"}
		}
	}
	for _, k := range sortedKeys(want.configs) {
		v := want.configs[k]
		if cur, ok := st.dynamic[k]; !ok || !sameConfigValue(cur, v) {
			p.alters = append(p.alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: kadm.StringPtr(v)})
			if ok {
				p.changes = append(p.changes, fmt.Sprintf("config %s %q -> %q", k, cur, v))
			} else {
				p.changes = append(p.changes, fmt.Sprintf("config %s set to %q", k, v))
			}
		}
	}
	for _, k := range sortedKeys(st.dynamic) {
		if _, ok := operationalConfigs[k]; ok {
			continue // Kafka's tools own it: never reverted
		}
		if _, ok := want.configs[k]; !ok {
			p.alters = append(p.alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
			p.changes = append(p.changes, fmt.Sprintf("config %s %q removed (not in spec; broker default applies)", k, st.dynamic[k]))
		}
	}
	return p
}

// sameConfigValue reports whether the broker's value of a topic config,
// cur, is the value the spec asks for, want. Kafka answers DescribeConfigs
// with the value it parsed, printed again in its own form ("0.50" is 0.5,
// "+604800000" is 604800000, "True" is true, "compact, delete" is
// compact,delete), so comparing text alone found such a value drifted at
// every sweep and set it again, for ever.
func sameConfigValue(cur, want string) bool {
	if cur == want {
		return true
	}
	c, w := strings.TrimSpace(cur), strings.TrimSpace(want)
	if c == w {
		return true
	}
	if strings.Contains(c, ",") || strings.Contains(w, ",") {
		cs, ws := strings.Split(c, ","), strings.Split(w, ",")
		if len(cs) != len(ws) {
			return false
		}
		for i := range cs {
			if !sameConfigValue(cs[i], ws[i]) {
				return false
			}
		}
		return true
	}
	if ci, err := strconv.ParseInt(c, 10, 64); err == nil {
		wi, err := strconv.ParseInt(w, 10, 64)
		if err == nil {
			return ci == wi
		}
	}
	if cf, err := strconv.ParseFloat(c, 64); err == nil {
		wf, err := strconv.ParseFloat(w, 64)
		if err == nil {
			return cf == wf
		}
	}
	isBool := func(s string) bool { return strings.EqualFold(s, "true") || strings.EqualFold(s, "false") }
	return isBool(c) && isBool(w) && strings.EqualFold(c, w)
}
