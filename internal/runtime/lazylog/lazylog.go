// Package lazylog defers a logger's key/value pairs until something is
// logged. controller-runtime gives every reconcile a logger of its own,
// adding the object's kind, namespace, name and a reconcile ID: three
// WithValues calls, each of which zap answers by copying its encoder and
// encoding the pairs at once. Most reconciles log nothing at the enabled
// levels, so that work and its garbage (about 4 % of the controller's CPU
// in a cold start of 10,000 Bucketies, docs/performance.md) bought
// nothing. Wrap keeps the pairs in a slice and hands them to the
// underlying sink only with a message that is logged.
package lazylog

import "github.com/go-logr/logr"

// Wrap returns l with its WithValues deferred (see the package doc). The
// output is unchanged: the same pairs, names and caller.
func Wrap(l logr.Logger) logr.Logger {
	s := l.GetSink()
	if s == nil {
		return l
	}
	if _, ok := s.(*sink); ok {
		return l
	}
	// This sink's Info and Error are one frame between the caller and
	// base: base reports the caller one frame further up.
	if cd, ok := s.(logr.CallDepthLogSink); ok {
		s = cd.WithCallDepth(1)
	}
	return logr.New(&sink{base: s})
}

// sink keeps the pairs of WithValues calls (kv) for base.
type sink struct {
	base logr.LogSink
	kv   []any
}

// Init does nothing: base was initialised by the logr.New that made it,
// and told of this sink's frame by Wrap.
func (s *sink) Init(logr.RuntimeInfo) {}

func (s *sink) Enabled(level int) bool { return s.base.Enabled(level) }

func (s *sink) Info(level int, msg string, kv ...any) {
	s.materialized().Info(level, msg, kv...)
}

func (s *sink) Error(err error, msg string, kv ...any) {
	s.materialized().Error(err, msg, kv...)
}

// materialized is base with the kept pairs.
func (s *sink) materialized() logr.LogSink {
	if len(s.kv) == 0 {
		return s.base
	}
	return s.base.WithValues(s.kv...)
}

func (s *sink) WithValues(kv ...any) logr.LogSink {
	return &sink{base: s.base, kv: append(s.kv[:len(s.kv):len(s.kv)], kv...)}
}

func (s *sink) WithName(name string) logr.LogSink {
	return &sink{base: s.base.WithName(name), kv: s.kv}
}

// WithCallDepth passes a caller's extra frames on to base, when base
// reports callers.
func (s *sink) WithCallDepth(depth int) logr.LogSink {
	if cd, ok := s.base.(logr.CallDepthLogSink); ok {
		return &sink{base: cd.WithCallDepth(depth), kv: s.kv}
	}
	return s
}
