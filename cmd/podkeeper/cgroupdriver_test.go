package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podkeeper/podkeeper/cgroup"
)

// --cgroup-driver auto follows the external containerd's SystemdCgroup; the managed containerd
// and a missing config mean cgroupfs; a flag value wins.
func TestCgroupDriver(t *testing.T) {
	dir := t.TempDir()
	sd := filepath.Join(dir, "sd.toml")
	fs := filepath.Join(dir, "fs.toml")
	bad := filepath.Join(dir, "bad.toml")
	_ = os.WriteFile(sd, []byte("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\n  SystemdCgroup = true\n"), 0o644)
	_ = os.WriteFile(fs, []byte("version = 2\n"), 0o644)
	_ = os.WriteFile(bad, []byte("[[["), 0o644)
	for _, tc := range []struct {
		flag, mode, config string
		want               cgroup.Driver
		why                string
	}{
		{"auto", "external", sd, cgroup.DriverSystemd, "SystemdCgroup = true in"},
		{"auto", "external", fs, cgroup.DriverCgroupfs, "does not set SystemdCgroup"},
		{"auto", "external", filepath.Join(dir, "none.toml"), cgroup.DriverCgroupfs, "no containerd config"},
		{"auto", "managed", sd, cgroup.DriverCgroupfs, "managed containerd"},
		{"cgroupfs", "external", sd, cgroup.DriverCgroupfs, "--cgroup-driver cgroupfs"},
		{"systemd", "external", fs, cgroup.DriverSystemd, "--cgroup-driver systemd"},
	} {
		d, why, err := cgroupDriver(tc.flag, tc.mode, tc.config)
		if err != nil || d != tc.want || !strings.Contains(why, tc.why) {
			t.Errorf("cgroupDriver(%s, %s, %s) = %s (%q), %v; want %s (%q)", tc.flag, tc.mode, filepath.Base(tc.config), d, why, err, tc.want, tc.why)
		}
	}
	if _, _, err := cgroupDriver("auto", "external", bad); err == nil || !strings.Contains(err.Error(), "set --cgroup-driver") {
		t.Errorf("bad config: %v", err)
	}
	if _, _, err := cgroupDriver("fancy", "external", fs); err == nil {
		t.Error("unknown driver accepted")
	}
}
