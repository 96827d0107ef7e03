package controllers

import (
	"github.com/go-logr/logr"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// withOperatorLogLevel raises the verbosity of the operator's logs about one resource to
// its spec.operatorLogLevel: Normal adds nothing, Debug shows V(2) messages as V(0),
// Trace V(4), TraceAll V(6), whatever the operator's global level.
func withOperatorLogLevel(log logr.Logger, level v1.LogLevel) logr.Logger {
	boost := level.Verbosity() - v1.Normal.Verbosity()
	if boost <= 0 || log.GetSink() == nil {
		return log
	}
	return logr.New(&boostedSink{LogSink: log.GetSink(), boost: boost})
}

// boostedSink logs messages of verbosity V as V minus boost.
type boostedSink struct {
	logr.LogSink
	boost int
}

func (s *boostedSink) lower(level int) int { return max(level-s.boost, 0) }

func (s *boostedSink) Enabled(level int) bool { return s.LogSink.Enabled(s.lower(level)) }

func (s *boostedSink) Info(level int, msg string, keysAndValues ...any) {
	s.LogSink.Info(s.lower(level), msg, keysAndValues...)
}

func (s *boostedSink) WithValues(keysAndValues ...any) logr.LogSink {
	return &boostedSink{LogSink: s.LogSink.WithValues(keysAndValues...), boost: s.boost}
}

func (s *boostedSink) WithName(name string) logr.LogSink {
	return &boostedSink{LogSink: s.LogSink.WithName(name), boost: s.boost}
}
