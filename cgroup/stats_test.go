package cgroup

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestReadUsageV2(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "pk", "podx")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for f, v := range map[string]string{
		"cpu.stat":       "usage_usec 2500\nuser_usec 2000\nsystem_usec 500\n",
		"memory.current": "10485760\n",
		"memory.stat":    "anon 4194304\nfile 6291456\ninactive_file 2097152\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m, err := New(Config{Root: root, Version: V2, MemoryCapacity: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	u, err := m.ReadUsage("/pk/podx")
	if err != nil {
		t.Fatal(err)
	}
	if u.CPUNanos != 2_500_000 || u.Memory != 10<<20 || u.WorkingSet != 8<<20 || u.RSS != 4<<20 {
		t.Fatalf("usage = %+v", u)
	}
}

func TestCPURate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, tc := range []struct {
		prev, cur Usage
		want      uint64
		ok        bool
	}{
		{Usage{Time: t0, CPUNanos: 0}, Usage{Time: t0.Add(time.Second), CPUNanos: 500_000_000}, 500_000_000, true},
		{Usage{Time: t0, CPUNanos: 1e9}, Usage{Time: t0.Add(2 * time.Second), CPUNanos: 3e9}, 1e9, true},
		{Usage{Time: t0, CPUNanos: 5}, Usage{Time: t0, CPUNanos: 9}, 0, false},
		{Usage{Time: t0, CPUNanos: 9}, Usage{Time: t0.Add(time.Second), CPUNanos: 5}, 0, false},
	} {
		got, ok := CPURate(tc.prev, tc.cur)
		if got != tc.want || ok != tc.ok {
			t.Errorf("CPURate = %d,%v want %d,%v", got, ok, tc.want, tc.ok)
		}
	}
}
