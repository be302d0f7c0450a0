package runtime

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"

	clog "github.com/containerd/log"
	"github.com/sirupsen/logrus"
)

// RouteClientLog sends what containerd's client logs (through logrus, on stderr by default) to
// log, so that its lines have the agent's format: a logrus text line in the middle of the
// agent's JSON log breaks the parsers reading it. The client's level stays as set (warnings and
// errors: see registry.go); each line gets source=containerd-client and the entry's fields.
func RouteClientLog(log *slog.Logger) {
	l := clog.L.Logger
	l.SetOutput(io.Discard)
	l.ReplaceHooks(logrus.LevelHooks{})
	l.AddHook(slogHook{log: log.With("source", "containerd-client")})
}

// slogHook re-emits logrus entries through slog.
type slogHook struct{ log *slog.Logger }

func (slogHook) Levels() []logrus.Level { return logrus.AllLevels }

func (h slogHook) Fire(e *logrus.Entry) error {
	keys := make([]string, 0, len(e.Data))
	for k := range e.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	args := make([]any, 0, 2*len(keys))
	for _, k := range keys {
		v := e.Data[k]
		if err, ok := v.(error); ok {
			v = err.Error()
		} else if s, ok := v.(fmt.Stringer); ok {
			v = s.String()
		}
		args = append(args, k, v)
	}
	ctx := e.Context
	if ctx == nil {
		ctx = context.Background()
	}
	h.log.Log(ctx, slogLevel(e.Level), e.Message, args...)
	return nil
}

// slogLevel maps a logrus level onto slog's. Pure.
func slogLevel(l logrus.Level) slog.Level {
	switch {
	case l <= logrus.ErrorLevel: // panic, fatal, error
		return slog.LevelError
	case l == logrus.WarnLevel:
		return slog.LevelWarn
	case l == logrus.InfoLevel:
		return slog.LevelInfo
	default:
		return slog.LevelDebug
	}
}
