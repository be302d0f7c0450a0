package cgroup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
)

func TestSystemdCgroupFromConfig(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		want         bool
		bad          bool
	}{
		{"empty", "", false, false},
		{"containerd 1.x, true", `version = 2
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
    SystemdCgroup = true
`, true, false},
		{"containerd 1.x, false", `version = 2
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  SystemdCgroup = false
`, false, false},
		{"containerd 2.x, true", `version = 3
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
  SystemdCgroup = true
`, true, false},
		{"another default runtime decides", `version = 2
[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "crun"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  SystemdCgroup = true
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.crun.options]
  SystemdCgroup = false
`, false, false},
		{"commented out", `# SystemdCgroup = true
version = 2
`, false, false},
		{"not toml", "plugins = [", false, true},
	} {
		got, err := SystemdCgroupFromConfig([]byte(tc.config))
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("%s: got %v, %v; want %v (error: %v)", tc.name, got, err, tc.want, tc.bad)
		}
	}
}

func TestSliceUnit(t *testing.T) {
	l := Layout{Driver: DriverSystemd, Parent: "podkeeper"}
	for _, tc := range []struct{ dir, unit, parent string }{
		{l.ParentDir(), "podkeeper.slice", "-.slice"},
		{l.QOSDir("Burstable"), "podkeeper-burstable.slice", "podkeeper.slice"},
		{l.PodDir("BestEffort", "1234-ab"), "podkeeper-besteffort-pod1234_ab.slice", "podkeeper-besteffort.slice"},
		{l.PodDir("Guaranteed", "u"), "podkeeper-podu.slice", "podkeeper.slice"},
	} {
		u, p := sliceUnit(tc.dir)
		if u != tc.unit || p != tc.parent {
			t.Errorf("sliceUnit(%s) = %s in %s, want %s in %s", tc.dir, u, p, tc.unit, tc.parent)
		}
	}
}

// The slice properties systemd gets, per cgroup version, as data.
func TestSliceProperties(t *testing.T) {
	r := Resources{CPUShares: 512, CPUQuota: 50000, CPUPeriod: 100000, Memory: 64 << 20, PidsLimit: 256}
	show := func(props []sddbus.Property) string {
		var out []string
		for _, p := range props {
			out = append(out, p.Name+"="+p.Value.String())
		}
		return strings.Join(out, " ")
	}
	common := `Description="podkeeper podkeeper-podu.slice" Wants=["podkeeper.slice"] Slice="podkeeper.slice" DefaultDependencies=false CPUAccounting=true MemoryAccounting=true TasksAccounting=true `
	for _, tc := range []struct {
		v    Version
		r    Resources
		want string
	}{
		{V1, r, common + "CPUShares=@t 512 CPUQuotaPerSecUSec=@t 500000 MemoryLimit=@t 67108864 TasksMax=@t 256"},
		{V2, r, common + "CPUWeight=@t 20 CPUQuotaPerSecUSec=@t 500000 MemoryMax=@t 67108864 TasksMax=@t 256"},
		// 1m of CPU: systemd counts whole percents, so 10 ms per second.
		{V1, Resources{CPUQuota: 100, CPUPeriod: 100000}, common + "CPUQuotaPerSecUSec=@t 10000"},
		{V2, Resources{}, strings.TrimSpace(common)},
	} {
		if got := show(sliceProperties("podkeeper-podu.slice", "podkeeper.slice", tc.r, tc.v)); got != tc.want {
			t.Errorf("v%d %+v:\n got %s\nwant %s", tc.v, tc.r, got, tc.want)
		}
	}
}

func TestSystemdRunning(t *testing.T) {
	dir := t.TempDir()
	if err := SystemdRunning(dir); err != nil {
		t.Errorf("with %s a dir: %v", dir, err)
	}
	err := SystemdRunning(filepath.Join(dir, "missing"))
	if err == nil || !strings.Contains(err.Error(), "needs systemd as init, but PID 1 is") || !strings.Contains(err.Error(), "--cgroup-driver cgroupfs") {
		t.Errorf("without systemd: %v", err)
	}
}

// On a machine without systemd (this one: no /run/systemd/system) the systemd driver fails at
// New, with the reason; with systemd it connects.
func TestNewSystemdDriver(t *testing.T) {
	_, err := New(Config{Layout: Layout{Driver: DriverSystemd, Parent: "pk-sd-test"}})
	if _, statErr := os.Stat("/run/systemd/system"); statErr != nil {
		if err == nil || !strings.Contains(err.Error(), "needs systemd as init") {
			t.Fatalf("New with the systemd driver and no systemd: %v", err)
		}
		return
	}
	if err != nil {
		t.Fatalf("New with the systemd driver on a systemd machine: %v", err)
	}
}
