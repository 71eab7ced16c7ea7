package kadm

import "testing"

// TestPlanTakesTheBrokersFormOfAValueForItself: Kafka answers
// DescribeConfigs with a value as it parsed it, printed in its own form;
// a spec value it rewrites so is not drift, and Ensure and the sweep do
// not set it again (they did, at every sweep, for ever). A value that
// differs is still drift.
func TestPlanTakesTheBrokersFormOfAValueForItself(t *testing.T) {
	asked := map[string]string{
		"min.cleanable.dirty.ratio":      "0.50",
		"cleanup.policy":                 "compact, delete",
		"retention.ms":                   "+604800000",
		"segment.bytes":                  "0104857600",
		"unclean.leader.election.enable": "True",
		"max.compaction.lag.ms":          "9223372036854775807",
		"message.timestamp.type":         "CreateTime",
	}
	broker := map[string]string{
		"min.cleanable.dirty.ratio":      "0.5",
		"cleanup.policy":                 "compact,delete",
		"retention.ms":                   "604800000",
		"segment.bytes":                  "104857600",
		"unclean.leader.election.enable": "true",
		"max.compaction.lag.ms":          "9223372036854775807",
		"message.timestamp.type":         "CreateTime",
	}
	p := planFor(params{partitions: -1, replicationFactor: -1, configs: asked}, topicState{exists: true, dynamic: broker})
	if len(p.alters) != 0 {
		t.Errorf("values the broker printed in its own form: want no change, got %v", p.changes)
	}
	for k, v := range map[string]string{
		"min.cleanable.dirty.ratio":      "0.6",
		"cleanup.policy":                 "delete,compact",
		"retention.ms":                   "604800001",
		"unclean.leader.election.enable": "false",
		"max.compaction.lag.ms":          "9223372036854775806",
		"message.timestamp.type":         "LogAppendTime",
	} {
		drifted := map[string]string{}
		for bk, bv := range broker {
			drifted[bk] = bv
		}
		drifted[k] = v
		p := planFor(params{partitions: -1, replicationFactor: -1, configs: asked}, topicState{exists: true, dynamic: drifted})
		if len(p.alters) != 1 || p.alters[0].Name != k {
			t.Errorf("%s %q on the broker against %q asked: want it set again, got %v", k, v, asked[k], p.changes)
		}
	}
}
