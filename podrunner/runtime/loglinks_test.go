package runtime

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestLogLinkPath(t *testing.T) {
	if got, want := logLinkPath("/var/log/containers", "web-edge1", "default", "nginx", "0123abcd.nginx.2"), "/var/log/containers/web-edge1_default_nginx-0123abcd.nginx.2.log"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	// Cut to ext4's 255 characters, ".log" included, as the kubelet cuts it.
	long := logLinkPath("/d", strings.Repeat("p", 245), "default", "c", "id")
	if base := filepath.Base(long); len(base) != 255 || !strings.HasSuffix(base, "pp_defau.log") {
		t.Errorf("long name %q (%d characters)", base, len(base))
	}
}

// Only links into the agent's own log dir whose file is gone are removed.
func TestPruneLogLinks(t *testing.T) {
	dir := t.TempDir()
	links, logs, other := filepath.Join(dir, "containers"), filepath.Join(dir, "pods"), filepath.Join(dir, "elsewhere")
	for _, d := range []string{links, filepath.Join(logs, "p"), other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	live := filepath.Join(logs, "p", "0.log")
	if err := os.WriteFile(live, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	mk := func(name, target string) {
		if err := os.Symlink(target, filepath.Join(links, name)); err != nil {
			t.Fatal(err)
		}
	}
	mk("live_default_c-1.log", live)
	mk("gone_default_c-2.log", filepath.Join(logs, "p", "1.log"))
	mk("other_default_c-3.log", filepath.Join(other, "0.log"))         // another kubelet's: left alone
	mk("prefix_default_c-4.log", filepath.Join(dir, "podsx", "0.log")) // a sibling dir, not ours
	mk("notlog", filepath.Join(logs, "p", "9.log"))
	if err := os.WriteFile(filepath.Join(links, "plain.log"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := PruneLogLinks(links, logs)
	if err != nil || n != 1 {
		t.Fatalf("removed %d, err %v; want 1", n, err)
	}
	ents, _ := os.ReadDir(links)
	var left []string
	for _, e := range ents {
		left = append(left, e.Name())
	}
	if want := []string{"live_default_c-1.log", "notlog", "other_default_c-3.log", "plain.log", "prefix_default_c-4.log"}; !slices.Equal(left, want) {
		t.Fatalf("left %v, want %v", left, want)
	}
}
