package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"

	clog "github.com/containerd/log"
	"github.com/sirupsen/logrus"
)

// The containerd client's log lines come out in the agent's format (here JSON), with their level,
// fields and error, and nothing on logrus's own output.
func TestRouteClientLog(t *testing.T) {
	l := clog.L.Logger
	out, hooks := l.Out, l.Hooks
	t.Cleanup(func() { l.SetOutput(out); l.ReplaceHooks(hooks) })
	var buf bytes.Buffer
	RouteClientLog(slog.New(slog.NewJSONHandler(&buf, nil)))

	clog.G(context.Background()).WithError(errors.New("snapshot x does not exist: not found")).Errorf("failed to cleanup %q", "extract-1")
	clog.G(context.Background()).WithField("host", "registry.local").Warn("retrying")
	clog.G(context.Background()).Info("dropped at the client's warn level")

	dec := json.NewDecoder(&buf)
	var got []map[string]any
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("not JSON: %v (%s)", err, buf.String())
		}
		got = append(got, m)
	}
	if len(got) != 2 {
		t.Fatalf("%d lines, want 2: %v", len(got), got)
	}
	if got[0]["level"] != "ERROR" || got[0]["msg"] != `failed to cleanup "extract-1"` || got[0]["error"] != "snapshot x does not exist: not found" || got[0]["source"] != "containerd-client" {
		t.Errorf("error line: %v", got[0])
	}
	if got[1]["level"] != "WARN" || got[1]["host"] != "registry.local" {
		t.Errorf("warning line: %v", got[1])
	}
	for lv, want := range map[logrus.Level]slog.Level{logrus.PanicLevel: slog.LevelError, logrus.FatalLevel: slog.LevelError, logrus.ErrorLevel: slog.LevelError,
		logrus.WarnLevel: slog.LevelWarn, logrus.InfoLevel: slog.LevelInfo, logrus.DebugLevel: slog.LevelDebug, logrus.TraceLevel: slog.LevelDebug} {
		if g := slogLevel(lv); g != want {
			t.Errorf("slogLevel(%s) = %s, want %s", lv, g, want)
		}
	}
}
