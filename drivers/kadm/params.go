package kadm

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/Yolean/buckety-controller/drivers"
)

// Driver-known parameter keys.
const (
	// ParamPartitions is the topic's partition count: grows in place, never
	// shrinks.
	ParamPartitions = "partitions"
	// ParamReplicationFactor is the topic's replication factor: set at
	// creation, immutable.
	ParamReplicationFactor = "replicationFactor"
	// ConfigPrefix prefixes Kafka topic configs passed through unmodified.
	ConfigPrefix = "config."
)

var knownKeys = []string{ParamPartitions, ParamReplicationFactor}

// configNameRE is the shape of a Kafka config name.
var configNameRE = regexp.MustCompile(`^[a-z][a-z0-9]*([._-][a-z0-9]+)*$`)

// overlapping are config names that would duplicate a driver-known key.
var overlapping = map[string]string{
	"num.partitions":             ParamPartitions,
	"partitions":                 ParamPartitions,
	"replication.factor":         ParamReplicationFactor,
	"default.replication.factor": ParamReplicationFactor,
}

// Ownership of a topic's dynamic configs. buckety owns a topic's partition
// count (grow only, when the spec sets it) and every dynamic (per-topic)
// config on it: the spec's config.* keys are SET, and any other dynamic
// topic config is DELETEd so the broker default applies. The one exception
// is operationalConfigs: configs that Kafka's own tooling sets on a topic
// while it operates on the cluster and removes when it is done. buckety never
// sets, changes or deletes them, and rejects them as parameters, because
// reverting them mid-operation breaks that operation (removing the
// replication throttles during a reassignment lets the move saturate the
// brokers' network, which is what the throttle is there to prevent).
//
// The list is Apache Kafka's topic configs that tools write at run time, from
// the topic-config reference: only the two replication throttles.
// Deliberately not on it: confluent.placement.constraints and the other
// confluent.* topic configs (an operator's or tenant's intent, like any
// other config; Confluent's self-balancing moves replicas with the same two
// throttles), and remote.storage.enable / local.retention.* (tiered-storage
// intent, set by people, not by tools).
var operationalConfigs = map[string]string{
	"leader.replication.throttled.replicas":   "set by kafka-reassign-partitions --throttle and by Cruise Control while partitions move, and removed by them when the move completes",
	"follower.replication.throttled.replicas": "set by kafka-reassign-partitions --throttle and by Cruise Control while partitions move, and removed by them when the move completes",
}

// OperationalConfigs lists, sorted, the Kafka topic configs buckety never
// sets, changes or deletes (see operationalConfigs).
func OperationalConfigs() []string {
	out := make([]string, 0, len(operationalConfigs))
	for k := range operationalConfigs {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// apacheTopicConfigs are the topic-level configs of Apache Kafka 4.x. A
// config outside this list is passed through (Redpanda and Confluent have
// their own) but earns an admission warning, because it may be a typo.
var apacheTopicConfigs = map[string]bool{
	"cleanup.policy": true, "compression.type": true, "compression.gzip.level": true,
	"compression.lz4.level": true, "compression.zstd.level": true,
	"delete.retention.ms": true, "file.delete.delay.ms": true, "flush.messages": true,
	"flush.ms": true, "follower.replication.throttled.replicas": true,
	"index.interval.bytes": true, "leader.replication.throttled.replicas": true,
	"local.retention.bytes": true, "local.retention.ms": true, "max.compaction.lag.ms": true,
	"max.message.bytes": true, "message.downconversion.enable": true,
	"message.timestamp.after.max.ms": true, "message.timestamp.before.max.ms": true,
	"message.timestamp.difference.max.ms": true, "message.timestamp.type": true,
	"min.cleanable.dirty.ratio": true, "min.compaction.lag.ms": true, "min.insync.replicas": true,
	"preallocate": true, "remote.log.copy.disable": true, "remote.log.delete.on.disable": true,
	"remote.storage.enable": true, "retention.bytes": true, "retention.ms": true,
	"segment.bytes": true, "segment.index.bytes": true, "segment.jitter.ms": true,
	"segment.ms": true, "unclean.leader.election.enable": true,
	"message.format.version": true,
}

// cautions are configs that are mutable but can lose data or availability;
// they are accepted with an admission warning that says why.
var cautions = map[string]string{
	"cleanup.policy":                 "changing cleanup.policy changes which records the broker deletes (delete vs compact); existing data may be removed",
	"retention.ms":                   "lowering retention.ms deletes records older than the new value at the next log cleanup",
	"retention.bytes":                "lowering retention.bytes deletes the oldest segments beyond the new size",
	"min.insync.replicas":            "min.insync.replicas above the replication factor makes every acks=all produce fail",
	"unclean.leader.election.enable": "unclean leader election can lose acknowledged records",
	"remote.storage.enable":          "tiered storage cannot simply be turned off again: Kafka requires remote.log.delete.on.disable, which deletes the remote data",
}

// params is the parsed form of spec.parameters.
type params struct {
	partitions        int32 // -1: not set
	replicationFactor int16 // -1: not set
	configs           map[string]string
	// operational are spec keys naming operational configs (admitted
	// before they were refused): never applied, reported as shortfalls.
	operational []string
}

// parseParams parses parameters without reporting problems; call
// validateParams first.
func parseParams(in map[string]string) params {
	p := params{partitions: -1, replicationFactor: -1, configs: map[string]string{}}
	for k, v := range in {
		switch {
		case k == ParamPartitions:
			if n, err := strconv.ParseInt(v, 10, 32); err == nil {
				p.partitions = int32(n)
			}
		case k == ParamReplicationFactor:
			if n, err := strconv.ParseInt(v, 10, 16); err == nil {
				p.replicationFactor = int16(n)
			}
		case strings.HasPrefix(k, ConfigPrefix):
			name := strings.TrimPrefix(k, ConfigPrefix)
			if _, ok := operationalConfigs[name]; ok {
				p.operational = append(p.operational, k)
				continue
			}
			p.configs[name] = v
		}
	}
	sort.Strings(p.operational)
	return p
}

// shortfalls reports the spec's operational keys, which are never applied.
func (p params) shortfalls() []drivers.Shortfall {
	var out []drivers.Shortfall
	for _, k := range p.operational {
		name := strings.TrimPrefix(k, ConfigPrefix)
		out = append(out, drivers.Shortfall{Parameter: k, Message: operationalMessage(name, operationalConfigs[name]) + "; remove it from spec.parameters"})
	}
	return out
}

// validateParams checks parameters; old is nil on create.
func validateParams(fp *field.Path, old, new map[string]string) (warnings []string, errs field.ErrorList) {
	keys := make([]string, 0, len(new))
	for k := range new {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := new[k]
		kp := fp.Key(k)
		switch {
		case k == ParamPartitions:
			if n, err := strconv.ParseInt(v, 10, 32); err != nil || n <= 0 || v != strconv.FormatInt(n, 10) {
				errs = append(errs, field.Invalid(kp, v, "must be a positive integer, as \"12\""))
			}
		case k == ParamReplicationFactor:
			if n, err := strconv.ParseInt(v, 10, 16); err != nil || n <= 0 || v != strconv.FormatInt(n, 10) {
				errs = append(errs, field.Invalid(kp, v, "must be a positive integer up to 32767, as \"3\""))
			}
		case strings.HasPrefix(k, ConfigPrefix):
			name := strings.TrimPrefix(k, ConfigPrefix)
			if !configNameRE.MatchString(name) {
				errs = append(errs, field.Invalid(kp, k, "after \"config.\" must come a Kafka topic config name: lowercase letters and digits separated by '.', '_' or '-', as config.retention.ms"))
				continue
			}
			if known, ok := overlapping[name]; ok {
				errs = append(errs, field.Invalid(kp, k, fmt.Sprintf("duplicates the driver parameter %q; use %s instead", known, known)))
				continue
			}
			if why, ok := operationalConfigs[name]; ok {
				errs = append(errs, field.Invalid(kp, k, operationalMessage(name, why)))
				continue
			}
			if !apacheTopicConfigs[name] {
				if near := nearTopicConfig(name); near != "" {
					// A misspelt config: the broker would refuse it at
					// the create, and a limit on it would bound nothing.
					errs = append(errs, field.NotSupported(kp, k, []string{ConfigPrefix + near}))
					continue
				}
				warnings = append(warnings, fmt.Sprintf("%s: %q is not an Apache Kafka topic config; it is passed to the broker as is, which rejects it if it does not know it", kp, name))
			}
			if c, ok := cautions[name]; ok && old != nil && old[k] != v {
				warnings = append(warnings, fmt.Sprintf("%s: %s", kp, c))
			}
		default:
			errs = append(errs, field.NotSupported(kp, k, append(append([]string{}, knownKeys...), "config.<kafka topic config>")))
		}
	}
	if old == nil {
		return warnings, errs
	}
	// A removed key goes back to the broker's default (the plan deletes
	// the topic's own value): removing retention.ms: "-1" deletes records
	// past the default's seven days, removing cleanup.policy: compact
	// turns deletion on for a changelog.
	for _, k := range slices.Sorted(maps.Keys(old)) {
		c, ok := cautions[strings.TrimPrefix(k, ConfigPrefix)]
		if _, kept := new[k]; ok && !kept && strings.HasPrefix(k, ConfigPrefix) {
			warnings = append(warnings, fmt.Sprintf("%s: removed (was %q), so the broker's default applies: %s", fp.Key(k), old[k], c))
		}
	}
	if ov, nv := old[ParamReplicationFactor], new[ParamReplicationFactor]; ov != nv {
		errs = append(errs, field.Forbidden(fp.Key(ParamReplicationFactor), fmt.Sprintf("is immutable after creation (was %s, now %s): Kafka cannot change a topic's replication factor in place", orUnset(ov), orUnset(nv))))
	}
	ov, nv := old[ParamPartitions], new[ParamPartitions]
	on, oerr := strconv.Atoi(ov)
	nn, nerr := strconv.Atoi(nv)
	switch {
	case oerr == nil && nerr == nil && nn < on:
		errs = append(errs, field.Forbidden(fp.Key(ParamPartitions), fmt.Sprintf("can only grow (was %d, now %d): Kafka cannot remove partitions", on, nn)))
	case oerr == nil && nv == "":
		// Removing the key would leave the topic its partitions while
		// its budget counted the broker's default.
		errs = append(errs, field.Forbidden(fp.Key(ParamPartitions), fmt.Sprintf("cannot be removed once set (was %d): Kafka cannot remove partitions, so the topic keeps them; keep partitions: %q or more", on, ov)))
	}
	return warnings, errs
}

// operationalMessage is the admission error for an operational config.
func operationalMessage(name, why string) string {
	return fmt.Sprintf("%s is an operational config that buckety never sets or removes: it is %s. Leave it to those tools", name, why)
}

func orUnset(s string) string {
	if s == "" {
		return "unset"
	}
	return s
}

// nearTopicConfig is the Apache Kafka topic config name that name, which
// is not one, is a misspelling of: at most two edits away (a letter left
// out, added or changed, '_' for '.'), "" when none is, or when name is
// too short for two edits to tell a typo from another config. A broker's
// own configs (Redpanda's redpanda.*, Confluent's confluent.*) are far
// from every Apache name, and are passed on as before.
func nearTopicConfig(name string) string {
	if len(name) < 8 {
		return ""
	}
	const far = 3
	best, bestD := "", far
	for c := range apacheTopicConfigs {
		if d := editDistance(name, c, far); d < bestD || d == bestD && d < far && c < best {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, or max when it is
// max or more.
func editDistance(a, b string, max int) int {
	if d := len(a) - len(b); d >= max || -d >= max {
		return max
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		low := cur[0]
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
			low = min(low, cur[j])
		}
		if low >= max {
			return max
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], max)
}
