package watcher

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkeeper/podkeeper/internal/ci"
	"github.com/podkeeper/podkeeper/manifests"
)

func configMap(name, value string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n  MODE: " + value + "\n"
}

func podByName(s Snapshot, name string) *corev1.Pod {
	for _, p := range s.Pods {
		if p.Annotations[manifests.AnnotationManifestName] == name {
			return p
		}
	}
	return nil
}

func statusOf(s Snapshot, base string) FileStatus {
	for _, f := range s.Files {
		if filepath.Base(f.Path) == base {
			return f
		}
	}
	return FileStatus{}
}

// A ConfigMap edit replaces exactly the pods whose env reads it; a pod mounting it as a volume
// keeps its UID (its files are updated in place), and so does a pod that does not use it.
func TestConfigMapEditReplacesEnvConsumersOnly(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "cfg.yaml"), configMap("cfg", "fast"))
	write(t, filepath.Join(dir, "env.yaml"), manifest("env", "busybox")+"    env:\n    - name: MODE\n      valueFrom:\n        configMapKeyRef: {name: cfg, key: MODE}\n")
	write(t, filepath.Join(dir, "from.yaml"), manifest("from", "busybox")+"    envFrom:\n    - configMapRef: {name: cfg}\n")
	write(t, filepath.Join(dir, "vol.yaml"), manifest("vol", "busybox")+"    volumeMounts:\n    - {name: c, mountPath: /c}\n  volumes:\n  - name: c\n    configMap: {name: cfg}\n")
	write(t, filepath.Join(dir, "plain.yaml"), manifest("plain", "busybox"))
	out := start(t, newSource(dir))
	before := recv(t, out)
	if len(before.ConfigMaps) != 1 || before.ConfigMaps[0].Data["MODE"] != "fast" || len(before.Errors) != 0 {
		t.Fatalf("first snapshot: configmaps %v errors %v", before.ConfigMaps, before.Errors)
	}
	if cm, ok := before.Config().ConfigMap("default", "cfg"); !ok || cm.Data["MODE"] != "fast" {
		t.Fatal("Config() does not find the ConfigMap")
	}
	if got := statusOf(before, "cfg.yaml"); got.State != StateOK || strings.Join(got.Declared, ",") != "ConfigMap default/cfg" {
		t.Errorf("cfg.yaml status = %+v", got)
	}

	write(t, filepath.Join(dir, "cfg.yaml"), configMap("cfg", "slow"))
	after := recv(t, out)
	if after.ConfigMaps[0].Data["MODE"] != "slow" {
		t.Fatalf("ConfigMap not updated: %v", after.ConfigMaps[0].Data)
	}
	for name, wantChanged := range map[string]bool{"env": true, "from": true, "vol": false, "plain": false} {
		b, a := podByName(before, name), podByName(after, name)
		if b == nil || a == nil {
			t.Fatalf("pod %s missing", name)
		}
		if changed := a.UID != b.UID; changed != wantChanged {
			t.Errorf("pod %s: UID changed=%v, want %v", name, changed, wantChanged)
		}
		if a.Annotations[manifests.AnnotationConfigHash] != string(a.UID) {
			t.Errorf("pod %s: config hash %s != UID", name, a.Annotations[manifests.AnnotationConfigHash])
		}
	}

	// A ConfigMap file that turns bad keeps its last good content: nothing is replaced.
	write(t, filepath.Join(dir, "cfg.yaml"), configMap("cfg", "slow")+"  bad key: x\n")
	kept := recv(t, out)
	if kept.ConfigMaps[0].Data["MODE"] != "slow" || podByName(kept, "env").UID != podByName(after, "env").UID {
		t.Fatal("a bad ConfigMap edit changed what runs")
	}
	if got := statusOf(kept, "cfg.yaml"); got.State != StateError || !got.KeptLastGood || len(got.Messages) == 0 {
		t.Errorf("bad cfg.yaml status = %+v", got)
	}
}

// Entries that match the name filter but cannot be read are errors, listed like bad content.
func TestUnreadableEntriesAreErrors(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "good.yaml"), manifest("good", "busybox"))
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "dangling.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("loop2.yaml", filepath.Join(dir, "loop1.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("loop1.yaml", filepath.Join(dir, "loop2.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := expect(t, start(t, newSource(dir)), "pods=[default/good-n1@good.yaml] errors=[dangling.yaml fifo.yaml loop1.yaml loop2.yaml]")
	for base, want := range map[string]string{"fifo.yaml": "FIFO", "dangling.yaml": "dangling symlink", "loop1.yaml": "too many levels of symbolic links"} {
		f := statusOf(s, base)
		if f.State != StateError || !strings.Contains(strings.Join(f.Messages, " "), want) {
			t.Errorf("%s: %+v, want an error mentioning %q", base, f, want)
		}
	}
	if f := statusOf(s, "sub.yaml"); f.State != StateIgnored || !strings.Contains(f.Messages[0], "subdirectories") {
		t.Errorf("sub.yaml: %+v", f)
	}
}

// A ConfigMap-style mount (pod.yaml -> ..data/pod.yaml, ..data -> ..<timestamp>) is updated by
// swapping the ..data symlink: that is one change, seen through fsnotify without a resync.
func TestDataSymlinkSwap(t *testing.T) {
	dir := t.TempDir()
	mkVersion := func(name, image string) {
		if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(dir, name, "pod.yaml"), manifest("a", image))
	}
	mkVersion("..2026_01", "busybox:1")
	if err := os.Symlink("..2026_01", filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..data/pod.yaml", filepath.Join(dir, "pod.yaml")); err != nil {
		t.Fatal(err)
	}
	out := start(t, newSource(dir))
	first := expect(t, out, "pods=[default/a-n1@pod.yaml] errors=[]")

	mkVersion("..2026_02", "busybox:2")
	if err := os.Symlink("..2026_02", filepath.Join(dir, "..data_tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	_ = os.RemoveAll(filepath.Join(dir, "..2026_01"))
	second := expect(t, out, "pods=[default/a-n1@pod.yaml] errors=[]")
	if second.Pods[0].UID == first.Pods[0].UID || second.Pods[0].Spec.Containers[0].Image != "busybox:2" {
		t.Fatalf("swap not seen: image %s", second.Pods[0].Spec.Containers[0].Image)
	}
	select {
	case s := <-out:
		t.Fatalf("a second snapshot for one swap: %s", describe(s))
	case <-time.After(300 * time.Millisecond):
	}
}

func TestPermissionWarningsAndStrict(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "safe.yaml"), manifest("safe", "busybox"))
	write(t, filepath.Join(dir, "world.yaml"), manifest("world", "busybox"))
	write(t, filepath.Join(dir, "user.yaml"), manifest("user", "busybox"))
	if err := os.Chmod(filepath.Join(dir, "world.yaml"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(filepath.Join(dir, "user.yaml"), 1000, 0); err != nil {
		ci.Missing(t, "cannot chown (not root?): %v", err)
	}

	s := expect(t, start(t, newSource(dir)), "pods=[default/safe-n1@safe.yaml default/user-n1@user.yaml default/world-n1@world.yaml] errors=[]")
	for base, want := range map[string]string{"safe.yaml": "", "world.yaml": "writable by every user", "user.yaml": "uid 1000"} {
		f := statusOf(s, base)
		if got := strings.Join(f.Warnings, " "); (want == "" && got != "") || !strings.Contains(got, want) {
			t.Errorf("%s warnings %q, want %q", base, got, want)
		}
	}

	strict := expect(t, start(t, newSource(dir, WithStrictPermissions(true))), "pods=[default/safe-n1@safe.yaml] errors=[user.yaml world.yaml]")
	if f := statusOf(strict, "world.yaml"); f.State != StateError || !strings.Contains(strings.Join(f.Messages, " "), "strict-permissions") {
		t.Errorf("strict world.yaml = %+v", f)
	}

	// A directory others can write makes every file unsafe.
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	s = expect(t, start(t, newSource(dir, WithStrictPermissions(true))), "pods=[] errors=[safe.yaml user.yaml world.yaml]")
	if f := statusOf(s, "safe.yaml"); !strings.Contains(strings.Join(f.Messages, " "), "manifest directory") {
		t.Errorf("safe.yaml in an unsafe dir = %+v", f)
	}
}

func TestUnsafeWriters(t *testing.T) {
	tests := []struct {
		mode     os.FileMode
		uid, gid uint32
		want     string
	}{
		{0o644, 0, 0, ""},
		{0o664, 0, 0, ""}, // group root
		{0o755, 0, 0, ""},
		{0o444, 1000, 1000, ""}, // nobody can write
		{0o646, 0, 0, "every user"},
		{0o644, 1000, 0, "uid 1000"},
		{0o664, 0, 50, "gid 50"},
		{0o1777, 0, 0, "every user"},
	}
	for _, tt := range tests {
		got := unsafeWriters(tt.mode, tt.uid, tt.gid)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("unsafeWriters(%o, %d, %d) = %q, want %q", tt.mode, tt.uid, tt.gid, got, tt.want)
		}
	}
}

func TestIgnoreReason(t *testing.T) {
	tests := map[string]string{
		"a.yaml": "", "a.yml": "", "a.json": "",
		".a.yaml": "dotfile", "..data": "dotfile", ".a.yaml.swp": "dotfile",
		"a.yaml~": "editor leftover (*~)", "a.yaml.swp": "editor leftover (*.swp)", "a.yaml.bak": "editor leftover (*.bak)",
		"a.yaml.orig": "editor leftover (*.orig)", "a.yaml.tmp": "editor leftover (*.tmp)",
		"a.yaml.dpkg-new": "package-manager leftover (*.dpkg-*)", "a.yaml.dpkg-old": "package-manager leftover (*.dpkg-*)",
		"a.yaml.rpmnew": "package-manager leftover (*.rpmnew)",
		"README":        "not a .yaml, .yml or .json file", "a.YAML": "not a .yaml, .yml or .json file",
	}
	for name, want := range tests {
		if got := IgnoreReason(name); got != want {
			t.Errorf("IgnoreReason(%q) = %q, want %q", name, got, want)
		}
	}
}

// Editing the losing file of a duplicate never disturbs the winner.
func TestDuplicateLoserEditsDoNotFlap(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.yaml"), manifest("x", "busybox:a"))
	write(t, filepath.Join(dir, "b.yaml"), manifest("x", "busybox:b"))
	out := start(t, newSource(dir))
	first := expect(t, out, "pods=[default/x-n1@a.yaml] errors=[b.yaml]")
	if f := statusOf(first, "b.yaml"); f.State != StateConflict || !strings.Contains(f.Messages[0], "which wins") {
		t.Errorf("b.yaml = %+v", f)
	}
	// The desired state does not change, so no snapshot is even sent.
	for _, img := range []string{"busybox:b2", "busybox:b3"} {
		write(t, filepath.Join(dir, "b.yaml"), manifest("x", img))
		select {
		case s := <-out:
			t.Fatalf("editing the losing file sent a snapshot: %s", describe(s))
		case <-time.After(300 * time.Millisecond):
		}
	}
	// The loser turning bad changes only its own error.
	write(t, filepath.Join(dir, "b.yaml"), "garbage: [")
	s := expect(t, out, "pods=[default/x-n1@a.yaml] errors=[b.yaml kept]")
	if s.Pods[0].UID != first.Pods[0].UID {
		t.Fatal("the winner changed")
	}
}

func TestScanDir(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.yaml"), manifest("a", "busybox"))
	write(t, filepath.Join(dir, "b.yaml"), "kind: Nope\n")
	write(t, filepath.Join(dir, "c.yaml.bak"), "")
	s := ScanDir(dir, testNode, WithLogger(newSource(dir).log))
	if got := describe(s); got != "pods=[default/a-n1@a.yaml] errors=[b.yaml]" {
		t.Fatalf("ScanDir = %s", got)
	}
	if f := statusOf(s, "c.yaml.bak"); f.State != StateIgnored {
		t.Errorf("c.yaml.bak = %+v", f)
	}
}

// A file that is bad from the start (as after an agent restart) holds the names it seems to
// declare, unless a good file declares them; a file with kept content holds nothing.
func TestHeldNames(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.yaml"), manifest("a", "busybox")+"    imagee: x\n")
	write(t, filepath.Join(dir, "b.yaml"), manifest("b", "busybox")+"    imagee: x\n")
	write(t, filepath.Join(dir, "c.yaml"), manifest("b", "busybox"))
	write(t, filepath.Join(dir, "d.yaml"), manifest("d", "busybox"))
	out := start(t, newSource(dir))
	s := expect(t, out, "pods=[default/b-n1@c.yaml default/d-n1@d.yaml] errors=[a.yaml b.yaml]")
	if got := strings.Join(s.Held, " "); got != "default/a-n1" {
		t.Fatalf("Held = %q, want default/a-n1", got)
	}
	write(t, filepath.Join(dir, "d.yaml"), manifest("d", "busybox")+"    imagee: x\n")
	s = expect(t, out, "pods=[default/b-n1@c.yaml default/d-n1@d.yaml] errors=[a.yaml b.yaml d.yaml kept]")
	if got := strings.Join(s.Held, " "); got != "default/a-n1" {
		t.Fatalf("Held = %q after a kept bad edit", got)
	}
	write(t, filepath.Join(dir, "a.yaml"), manifest("a", "busybox"))
	s = expect(t, out, "pods=[default/a-n1@a.yaml default/b-n1@c.yaml default/d-n1@d.yaml] errors=[b.yaml d.yaml kept]")
	if len(s.Held) != 0 {
		t.Fatalf("Held = %v after the fix", s.Held)
	}
}

// An emptied file is a bad edit (a save in progress, or a mistake), not a removal.
func TestEmptiedFileKeepsLastGood(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.yaml")
	write(t, path, manifest("a", "busybox"))
	write(t, filepath.Join(dir, "empty.yaml"), "")
	out := start(t, newSource(dir))
	good := expect(t, out, "pods=[default/a-n1@a.yaml] errors=[]")
	write(t, path, "")
	s := expect(t, out, "pods=[default/a-n1@a.yaml] errors=[a.yaml kept]")
	if s.Pods[0].UID != good.Pods[0].UID || !strings.Contains(s.Errors[0].Error(), "delete the file") {
		t.Fatalf("emptied: %s %v", describe(s), s.Errors[0])
	}
	write(t, path, manifest("a", "busybox:2"))
	expect(t, out, "pods=[default/a-n1@a.yaml] errors=[]")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	expect(t, out, "pods=[] errors=[]")
}
