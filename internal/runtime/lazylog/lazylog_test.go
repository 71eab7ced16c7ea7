package lazylog

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// countingCore counts the With calls zap gets (each copies the encoder).
type countingCore struct {
	zapcore.Core
	with *int
}

func (c countingCore) With(fs []zapcore.Field) zapcore.Core {
	*c.with++
	return countingCore{Core: c.Core.With(fs), with: c.with}
}

func (c countingCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

// TestWrapDefersValuesAndKeepsTheOutput: WithValues reaches zap only
// with a message logged; the message carries every pair, the name and the
// caller's file and line, as without Wrap.
func TestWrapDefersValuesAndKeepsTheOutput(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	with := 0
	l := Wrap(zapr.NewLogger(zap.New(countingCore{Core: core, with: &with}, zap.AddCaller())))

	r := l.WithName("buckety").WithValues("controller", "buckety").WithValues("namespace", "a", "name", "orders")
	r.V(1).Info("debug, not enabled")
	if with != 0 {
		t.Fatalf("want no zap With before a message is logged, got %d", with)
	}
	r.Info("reconciled", "writes", 0) // the line the caller check wants
	r.Error(errors.New("refused"), "failed")
	if with != 2 {
		t.Errorf("want one zap With per logged message, got %d", with)
	}
	entries := logs.All()
	if len(entries) != 2 {
		t.Fatalf("want 2 entries, got %d", len(entries))
	}
	for _, e := range entries {
		got := e.ContextMap()
		for k, v := range map[string]any{"controller": "buckety", "namespace": "a", "name": "orders"} {
			if got[k] != v {
				t.Errorf("%q: want %s=%v, got %v", e.Message, k, v, got)
			}
		}
		if e.LoggerName != "buckety" {
			t.Errorf("%q: want logger name buckety, got %q", e.Message, e.LoggerName)
		}
		if filepath.Base(e.Caller.File) != "lazylog_test.go" {
			t.Errorf("%q: want the caller in lazylog_test.go, got %s", e.Message, e.Caller.String())
		}
	}
	if entries[0].ContextMap()["writes"] != int64(0) {
		t.Errorf("want the message's own pair, got %v", entries[0].ContextMap())
	}

	// Siblings do not share pairs.
	a, b := l.WithValues("k", "a"), l.WithValues("k", "b")
	a.Info("a")
	b.Info("b")
	if all := logs.All(); all[2].ContextMap()["k"] != "a" || all[3].ContextMap()["k"] != "b" {
		t.Errorf("want k=a then k=b, got %v and %v", all[2].ContextMap(), all[3].ContextMap())
	}
	if Wrap(l).GetSink() != l.GetSink() {
		t.Error("want Wrap of a wrapped logger to be the logger")
	}
	if got := Wrap(logr.Discard()); got.GetSink() != nil {
		t.Error("want the discard logger left as it is")
	}
}
