package runtime

import (
	"os"
	"path/filepath"
	"testing"
)

// DirUsage counts allocated blocks and inodes, a hard-linked file once, and nothing of a missing dir.
func TestDirUsage(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i) // not sparse
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "big"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(dir, "sub", "big"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	u, err := DirUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	if u.Inodes != 3 { // dir, sub, big (the link is the same inode)
		t.Errorf("inodes = %d, want 3", u.Inodes)
	}
	if u.Bytes < 1<<20 || u.Bytes > 1<<20+64<<10 {
		t.Errorf("bytes = %d, want about 1 MiB", u.Bytes)
	}
	if u, err := DirUsage(filepath.Join(dir, "missing")); err != nil || u != (DiskUsage{}) {
		t.Errorf("missing dir: %+v, %v", u, err)
	}
}

// A sandbox with a pinned namespace but no IPs (the agent died during its CNI ADD) is not to be
// trusted; with IPs, released, without a namespace (hostNetwork), or not a sandbox, it is.
func TestNetworkUnfinished(t *testing.T) {
	sb := func(kv ...string) map[string]string {
		l := map[string]string{LabelKind: "sandbox"}
		for i := 0; i+1 < len(kv); i += 2 {
			l[kv[i]] = kv[i+1]
		}
		return l
	}
	for _, tc := range []struct {
		labels map[string]string
		want   bool
	}{
		{sb(LabelNetns, "/run/netns/x"), true},
		{sb(LabelNetns, "/run/netns/x", LabelPodIPs, "10.88.0.5"), false},
		{sb(LabelNetns, "/run/netns/x", LabelNetworkReleased, "true"), false},
		{sb(), false},
		{map[string]string{LabelKind: "app", LabelNetns: "/run/netns/x"}, false},
	} {
		if got := networkUnfinished(tc.labels); got != tc.want {
			t.Errorf("networkUnfinished(%v) = %v, want %v", tc.labels, got, tc.want)
		}
	}
}
