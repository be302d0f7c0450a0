package watcher

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const (
	testNode = "n1"
	timeout  = 5 * time.Second
)

// manifest is a valid single-pod manifest; image lets tests change content.
func manifest(name, image string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name +
		"\nspec:\n  containers:\n  - name: c\n    image: " + image + "\n"
}

// write replaces path's content atomically (a dotfile renamed into place), so that tests not
// about half-written files never see one, however loaded the machine.
func write(t *testing.T, path, content string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".write-"+filepath.Base(path))
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// start runs src until the test ends and returns its output channel.
func start(t *testing.T, src *DirSource) <-chan Snapshot {
	t.Helper()
	out := make(chan Snapshot)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, out) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Run returned %v, want context.Canceled", err)
			}
		case <-time.After(timeout):
			t.Error("Run did not return after cancel")
		}
	})
	return out
}

func newSource(dir string, opts ...DirOption) *DirSource {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	opts = append([]DirOption{WithDebounce(30 * time.Millisecond), WithResync(time.Hour), WithLogger(logger)}, opts...)
	return NewDirSource(dir, testNode, opts...)
}

func recv(t *testing.T, ch <-chan Snapshot) Snapshot {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(timeout):
		t.Fatal("no snapshot within timeout")
		return Snapshot{}
	}
}

// describe renders a snapshot's pods and errors compactly for comparisons:
// "pods=[default/a-n1@a.yaml] errors=[b.yaml kept]".
func describe(s Snapshot) string {
	var pods, errs []string
	for _, p := range s.Pods {
		pods = append(pods, p.Namespace+"/"+p.Name+"@"+filepath.Base(p.Annotations["podkeeper.io/manifest-path"]))
	}
	for _, e := range s.Errors {
		d := filepath.Base(e.Path)
		if e.KeptLastGood {
			d += " kept"
		}
		errs = append(errs, d)
	}
	return "pods=[" + strings.Join(pods, " ") + "] errors=[" + strings.Join(errs, " ") + "]"
}

func expect(t *testing.T, ch <-chan Snapshot, want string) Snapshot {
	t.Helper()
	s := recv(t, ch)
	if got := describe(s); got != want {
		t.Fatalf("snapshot %s\nwant     %s", got, want)
	}
	return s
}

func TestFirstSnapshot(t *testing.T) {
	t.Run("empty dir", func(t *testing.T) {
		s := expect(t, start(t, newSource(t.TempDir())), "pods=[] errors=[]")
		if s.Ignored != nil && len(s.Ignored) != 0 {
			t.Errorf("Ignored = %v", s.Ignored)
		}
	})
	t.Run("with files", func(t *testing.T) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "b.yaml"), manifest("b", "busybox"))
		write(t, filepath.Join(dir, "a.yml"), manifest("a", "busybox")+"---\n"+manifest("z", "busybox"))
		s := expect(t, start(t, newSource(dir)), "pods=[default/a-n1@a.yml default/b-n1@b.yaml default/z-n1@a.yml] errors=[]")
		if s.Pods[0].Spec.NodeName != testNode {
			t.Errorf("nodeName = %q", s.Pods[0].Spec.NodeName)
		}
	})
}

func TestCreateEditRemove(t *testing.T) {
	dir := t.TempDir()
	out := start(t, newSource(dir))
	expect(t, out, "pods=[] errors=[]")

	path := filepath.Join(dir, "a.yaml")
	write(t, path, manifest("a", "busybox:1"))
	first := expect(t, out, "pods=[default/a-n1@a.yaml] errors=[]")

	write(t, path, manifest("a", "busybox:2"))
	edited := expect(t, out, "pods=[default/a-n1@a.yaml] errors=[]")
	if edited.Pods[0].UID == first.Pods[0].UID {
		t.Error("edit did not change the UID")
	}
	if edited.Pods[0].Spec.Containers[0].Image != "busybox:2" {
		t.Errorf("image = %s", edited.Pods[0].Spec.Containers[0].Image)
	}

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	expect(t, out, "pods=[] errors=[]")
}

func TestRenameIntoPlaceIsOneChange(t *testing.T) {
	dir := t.TempDir()
	out := start(t, newSource(dir))
	expect(t, out, "pods=[] errors=[]")

	tmp := filepath.Join(dir, ".a.yaml.tmp")
	write(t, tmp, manifest("a", "busybox"))
	if err := os.Rename(tmp, filepath.Join(dir, "a.yaml")); err != nil {
		t.Fatal(err)
	}
	expect(t, out, "pods=[default/a-n1@a.yaml] errors=[]")

	// A sentinel change: had the rename produced a second snapshot, it
	// would arrive before this one.
	write(t, filepath.Join(dir, "b.yaml"), manifest("b", "busybox"))
	expect(t, out, "pods=[default/a-n1@a.yaml default/b-n1@b.yaml] errors=[]")
}

func TestHalfWrittenFileIsNotActedOn(t *testing.T) {
	dir := t.TempDir()
	out := start(t, newSource(dir, WithDebounce(300*time.Millisecond)))
	expect(t, out, "pods=[] errors=[]")

	// Write a two-pod file in two steps, the first of which is a valid
	// file by itself; only the complete file may be seen.
	f, err := os.Create(filepath.Join(dir, "a.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, part := range []string{manifest("a", "busybox"), "---\n" + manifest("b", "busybox")} {
		if _, err := f.WriteString(part); err != nil {
			t.Fatal(err)
		}
	}
	expect(t, out, "pods=[default/a-n1@a.yaml default/b-n1@a.yaml] errors=[]")
}

func TestIgnoredFiles(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	write(t, filepath.Join(dir, "a.yaml"), manifest("a", "busybox"))
	for _, name := range []string{".hidden.yaml", "x.yaml.bak", "notes.txt"} {
		write(t, filepath.Join(dir, name), manifest("ignored", "busybox"))
	}
	if err := os.Mkdir(filepath.Join(dir, "sub.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "sub.yaml", "deep.yaml"), manifest("deep", "busybox"))
	target := filepath.Join(other, "real.txt")
	write(t, target, manifest("linked", "busybox"))
	if err := os.Symlink(target, filepath.Join(dir, "link.json")); err != nil {
		t.Fatal(err)
	}

	s := expect(t, start(t, newSource(dir)), "pods=[default/a-n1@a.yaml default/linked-n1@link.json] errors=[]")
	var got []string
	for _, p := range s.Ignored {
		got = append(got, filepath.Base(p))
	}
	if want := ".hidden.yaml notes.txt sub.yaml x.yaml.bak"; strings.Join(got, " ") != want {
		t.Errorf("Ignored = %v, want %s", got, want)
	}
}

func TestBadEditKeepsLastGood(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.yaml")
	write(t, path, manifest("a", "busybox"))
	out := start(t, newSource(dir))
	good := expect(t, out, "pods=[default/a-n1@a.yaml] errors=[]")

	write(t, path, manifest("a", "busybox")+"    bogusField: 1\n")
	bad := expect(t, out, "pods=[default/a-n1@a.yaml] errors=[a.yaml kept]")
	if bad.Pods[0].UID != good.Pods[0].UID {
		t.Error("kept pod changed UID")
	}
	if msg := bad.Errors[0].Err.Error(); !strings.Contains(msg, "bogusField") {
		t.Errorf("error %q does not name the field", msg)
	}

	// A file that never decoded contributes only an error.
	write(t, filepath.Join(dir, "b.yaml"), "kind: ConfigMap\n")
	expect(t, out, "pods=[default/a-n1@a.yaml] errors=[a.yaml kept b.yaml]")

	write(t, path, manifest("a", "busybox:fixed"))
	fixed := expect(t, out, "pods=[default/a-n1@a.yaml] errors=[b.yaml]")
	if fixed.Pods[0].UID == good.Pods[0].UID {
		t.Error("fixed pod kept the old UID")
	}

	// Deleting a file removes its pods even after a bad edit.
	write(t, path, "not: [valid")
	expect(t, out, "pods=[default/a-n1@a.yaml] errors=[a.yaml kept b.yaml]")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	expect(t, out, "pods=[] errors=[b.yaml]")
}

func TestDuplicateNames(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "b.yaml"), manifest("x", "busybox:b")+"---\n"+manifest("w", "busybox"))
	write(t, filepath.Join(dir, "a.yaml"), manifest("x", "busybox:a"))
	out := start(t, newSource(dir))
	s := expect(t, out, "pods=[default/w-n1@b.yaml default/x-n1@a.yaml] errors=[b.yaml]")
	if msg := s.Errors[0].Err.Error(); !strings.Contains(msg, filepath.Join(dir, "a.yaml")) || !strings.Contains(msg, "default/x-n1") {
		t.Errorf("duplicate error %q does not name the pod and the winner", msg)
	}

	// Once the winner goes, the other file's pod takes over.
	if err := os.Remove(filepath.Join(dir, "a.yaml")); err != nil {
		t.Fatal(err)
	}
	expect(t, out, "pods=[default/w-n1@b.yaml default/x-n1@b.yaml] errors=[]")
}

func TestMissingDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pods")
	out := start(t, newSource(dir))
	expect(t, out, "pods=[] errors=[]")

	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "a.yaml"), manifest("a", "busybox"))
	expect(t, out, "pods=[default/a-n1@a.yaml] errors=[]")

	// Removing the directory removes its pods; re-creating it works again.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	expect(t, out, "pods=[] errors=[]")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "b.yaml"), manifest("b", "busybox"))
	expect(t, out, "pods=[default/b-n1@b.yaml] errors=[]")
}

func TestDirectoryRemovedAndRecreated(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pods")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "a.yaml"), manifest("a", "busybox"))
	out := start(t, newSource(dir)) // resync is an hour: events only
	expect(t, out, "pods=[default/a-n1@a.yaml] errors=[]")

	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	expect(t, out, "pods=[] errors=[]")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "b.yaml"), manifest("b", "busybox"))
	expect(t, out, "pods=[default/b-n1@b.yaml] errors=[]")
}

// scanCounter returns a hook for DirSource.onScan and a channel that
// receives one value per scan (dropping values nobody waits for).
func scanCounter() (func(), <-chan struct{}) {
	ch := make(chan struct{}, 1)
	return func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}, ch
}

func waitScans(t *testing.T, scans <-chan struct{}, n int) {
	t.Helper()
	for range n {
		select {
		case <-scans:
		case <-time.After(timeout):
			t.Fatal("no scan within timeout")
		}
	}
}

func TestResyncWithoutEvents(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.yaml")
	write(t, path, manifest("a", "busybox:1"))
	src := newSource(dir, WithResync(10*time.Millisecond))
	src.noWatch = true // every change below is seen by resync only
	hook, scans := scanCounter()
	src.onScan = hook
	out := start(t, src)
	expect(t, out, "pods=[default/a-n1@a.yaml] errors=[]")

	// Several resyncs of an unchanged directory send nothing: the next
	// snapshot received is the one with the change made after them.
	waitScans(t, scans, 3)
	write(t, filepath.Join(dir, "b.yaml"), manifest("b", "busybox"))
	expect(t, out, "pods=[default/a-n1@a.yaml default/b-n1@b.yaml] errors=[]")

	write(t, path, manifest("a", "busybox:2"))
	s := expect(t, out, "pods=[default/a-n1@a.yaml default/b-n1@b.yaml] errors=[]")
	if img := s.Pods[0].Spec.Containers[0].Image; img != "busybox:2" {
		t.Errorf("image = %s, want busybox:2", img)
	}
}

func TestResyncSeesSymlinkTargetChange(t *testing.T) {
	// fsnotify watches the directory, not where its symlinks point, so
	// only the resync notices the target changing.
	dir, other := t.TempDir(), t.TempDir()
	target := filepath.Join(other, "a.yaml")
	write(t, target, manifest("a", "busybox:1"))
	if err := os.Symlink(target, filepath.Join(dir, "a.yaml")); err != nil {
		t.Fatal(err)
	}
	out := start(t, newSource(dir, WithResync(20*time.Millisecond)))
	expect(t, out, "pods=[default/a-n1@a.yaml] errors=[]")
	write(t, target, manifest("a", "busybox:2"))
	s := expect(t, out, "pods=[default/a-n1@a.yaml] errors=[]")
	if img := s.Pods[0].Spec.Containers[0].Image; img != "busybox:2" {
		t.Errorf("image = %s, want busybox:2", img)
	}
}

func TestSnapshotsAreFresh(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.yaml"), manifest("a", "busybox"))
	src := newSource(dir, WithResync(10*time.Millisecond))
	out := start(t, src)
	s := expect(t, out, "pods=[default/a-n1@a.yaml] errors=[]")
	s.Pods[0].Spec.Containers[0].Image = "mutated" // the receiver owns it

	write(t, filepath.Join(dir, "b.yaml"), manifest("b", "busybox"))
	s = expect(t, out, "pods=[default/a-n1@a.yaml default/b-n1@b.yaml] errors=[]")
	if img := s.Pods[0].Spec.Containers[0].Image; img != "busybox" {
		t.Errorf("a later snapshot shares pods with an earlier one: image %s", img)
	}
}

func TestRunHonoursCancelWhileSending(t *testing.T) {
	src := newSource(t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, make(chan Snapshot)) }() // nobody receives
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run = %v, want context.Canceled", err)
		}
	case <-time.After(timeout):
		t.Fatal("Run blocked on send after cancel")
	}
}
