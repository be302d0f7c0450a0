package runtime

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestRanMark(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "pods", "uid-1", "containers", "c")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{LabelTermMsgFile: filepath.Join(dir, "2"+termMsgSuffix)}
	want := filepath.Join(dir, "2-ran")
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   string
	}{
		{"an instance's termination message file", labels, want},
		{"no termination message file (a sandbox)", map[string]string{}, ""},
		{"a file outside the root's pods", map[string]string{LabelTermMsgFile: "/etc/2" + termMsgSuffix}, ""},
		{"a file of another name", map[string]string{LabelTermMsgFile: filepath.Join(dir, "2-other")}, ""},
	} {
		if got := ranMarkPath(root, tc.labels); got != tc.want {
			t.Errorf("%s: ranMarkPath = %q, want %q", tc.name, got, tc.want)
		}
	}

	r := &Runtime{cfg: Config{RootDir: root}, log: slog.New(slog.NewTextHandler(io.Discard, nil)), ranWake: make(chan struct{}, 1)}
	created := time.Now().Add(-time.Minute)
	if ranMarked(root, labels, created) {
		t.Fatal("marked before markRan")
	}
	r.markRan("id-1", labels)
	if !ranMarked(root, labels, created) || !ranMarked(root, labels, time.Time{}) {
		t.Fatalf("not marked after markRan (%s)", want)
	}
	// A mark older than the container is an earlier container's of the same name.
	if ranMarked(root, labels, time.Now().Add(time.Minute)) {
		t.Error("a mark older than its container counts")
	}
	// The directory is queued for its sync, which the background loop does and forgets.
	if len(r.ranPending) != 1 || r.ranPending[0] != dir {
		t.Errorf("pending syncs %v, want [%s]", r.ranPending, dir)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.syncRanMarks(ctx); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.mu.Lock()
		n := len(r.ranPending)
		r.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("pending syncs never taken")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done

	removeRanMark(root, labels)
	if _, err := os.Stat(want); !os.IsNotExist(err) {
		t.Errorf("mark still there after removeRanMark: %v", err)
	}
	// A sandbox (no termination message file) is never marked, and nothing is written.
	r.markRan("sandbox", map[string]string{})
	if ranMarked(root, map[string]string{}, time.Time{}) {
		t.Error("a sandbox reads as marked")
	}
}
