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
