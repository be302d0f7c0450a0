package watcher

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A manifest broken while the agent was down: the next agent decodes the copy of its last good
// content, so the pod keeps its spec (KeptLastGood) instead of being held unmanaged.
func TestLastGoodCopySurvivesRestart(t *testing.T) {
	dir, store := t.TempDir(), filepath.Join(t.TempDir(), "last-good")
	path := filepath.Join(dir, "a.yaml")
	write(t, path, manifest("a", "busybox"))
	write(t, filepath.Join(dir, "b.yaml"), manifest("b", "busybox"))
	first := ScanDir(dir, testNode, WithLastGoodDir(store))
	if got := describe(first); got != "pods=[default/a-n1@a.yaml default/b-n1@b.yaml] errors=[]" {
		t.Fatalf("first scan: %s", got)
	}
	if fi, err := os.Stat(store); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("store dir: %v %v", fi, err)
	}
	copyFile := filepath.Join(store, lastGoodName(path))
	if fi, err := os.Stat(copyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("copy of a.yaml: %v %v", fi, err)
	}

	// "Agent down": a.yaml gets a typo, b.yaml is removed.
	write(t, path, manifest("a", "busybox")+"    imagee: x\n")
	if err := os.Remove(filepath.Join(dir, "b.yaml")); err != nil {
		t.Fatal(err)
	}
	second := ScanDir(dir, testNode, WithLastGoodDir(store))
	if got := describe(second); got != "pods=[default/a-n1@a.yaml] errors=[a.yaml kept]" {
		t.Fatalf("after restart: %s", got)
	}
	if second.Pods[0].UID != first.Pods[0].UID || len(second.Held) != 0 {
		t.Fatalf("kept pod UID %s (was %s), held %v", second.Pods[0].UID, first.Pods[0].UID, second.Held)
	}
	if _, err := os.Stat(filepath.Join(store, lastGoodName(filepath.Join(dir, "b.yaml")))); !os.IsNotExist(err) {
		t.Fatalf("copy of b.yaml (removed while down) not pruned: %v", err)
	}

	// Without the store the same restart only holds the name.
	if s := ScanDir(dir, testNode); describe(s) != "pods=[] errors=[a.yaml]" || strings.Join(s.Held, " ") != "default/a-n1" {
		t.Fatalf("without a store: %s held %v", describe(s), s.Held)
	}

	// An emptied file after a restart is a bad edit too.
	write(t, path, "")
	if s := ScanDir(dir, testNode, WithLastGoodDir(store)); describe(s) != "pods=[default/a-n1@a.yaml] errors=[a.yaml kept]" {
		t.Fatalf("emptied while down: %s", describe(s))
	}

	// A copy that belongs to another path (name collision, hand edit) is not used.
	if err := os.WriteFile(copyFile, []byte("# last good content of /elsewhere\n"+manifest("z", "busybox")), 0o600); err != nil {
		t.Fatal(err)
	}
	write(t, path, manifest("a", "busybox")+"    imagee: x\n")
	if s := ScanDir(dir, testNode, WithLastGoodDir(store)); describe(s) != "pods=[] errors=[a.yaml]" {
		t.Fatalf("foreign copy used: %s", describe(s))
	}
}

// Removing a manifest removes its copy.
func TestLastGoodCopyRemovedWithTheFile(t *testing.T) {
	dir, store := t.TempDir(), filepath.Join(t.TempDir(), "last-good")
	path := filepath.Join(dir, "a.yaml")
	write(t, path, manifest("a", "busybox"))
	out := start(t, newSource(dir, WithLastGoodDir(store)))
	expect(t, out, "pods=[default/a-n1@a.yaml] errors=[]")
	copyFile := filepath.Join(store, lastGoodName(path))
	if _, err := os.Stat(copyFile); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	expect(t, out, "pods=[] errors=[]")
	if _, err := os.Stat(copyFile); !os.IsNotExist(err) {
		t.Fatalf("copy kept after the manifest was removed: %v", err)
	}
}
