package watcher

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A manifest renamed into place is complete: it is acted on after a short settle, without
// waiting for the debounce. A manifest written in place still waits for the full debounce.
func TestRenamedManifestSkipsTheDebounce(t *testing.T) {
	dir := t.TempDir()
	// With an hour's debounce and resync, only the rename fast path can deliver a change.
	out := start(t, newSource(dir, WithDebounce(time.Hour)))
	expect(t, out, "pods=[] errors=[]")

	write(t, filepath.Join(dir, "a.yaml"), manifest("a", "busybox")) // temp dotfile + rename
	expect(t, out, "pods=[default/a-n1@a.yaml] errors=[]")

	// Replacing a known manifest by rename is atomic too.
	write(t, filepath.Join(dir, "a.yaml"), manifest("a", "busybox:2"))
	s := expect(t, out, "pods=[default/a-n1@a.yaml] errors=[]")
	if img := s.Pods[0].Spec.Containers[0].Image; img != "busybox:2" {
		t.Fatalf("image = %q, want the renamed content", img)
	}

	// Written in place: no snapshot before the debounce (an hour), even with a rename after it.
	if err := os.WriteFile(filepath.Join(dir, "b.yaml"), []byte(manifest("b", "busybox")), 0o644); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "c.yaml"), manifest("c", "busybox"))
	select {
	case s := <-out:
		t.Fatalf("snapshot %s sent before the debounce after an in-place write", describe(s))
	case <-time.After(time.Second):
	}
}
