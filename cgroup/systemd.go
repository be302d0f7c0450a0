package cgroup

import (
	"context"
	"fmt"
	"os"
	"path"
	"strings"
	"time"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	"github.com/godbus/dbus/v5"
	toml "github.com/pelletier/go-toml/v2"
)

// The systemd driver: with it systemd owns the cgroup tree, so podkeeper asks systemd (over
// D-Bus) for every slice of it (the parent, the QoS classes, the pods) with the limits as unit
// properties, and runc, told SystemdCgroup, asks systemd for each container's scope. What systemd
// has no property for (hugetlb, and pids on old systemd) podkeeper then writes into the slice's
// cgroup directly, as the kubelet does. Without systemd running the driver cannot work: New says
// so at start, rather than when the first pod fails.

// SystemdRunning reports whether systemd is this machine's init, the way sd_booted(3) tells:
// runDir (normally /run/systemd/system) is a directory. The error says what runs instead.
func SystemdRunning(runDir string) error {
	if fi, err := os.Stat(runDir); err == nil && fi.IsDir() {
		return nil
	}
	init := "unknown"
	if b, err := os.ReadFile("/proc/1/comm"); err == nil {
		init = strings.TrimSpace(string(b))
	}
	return fmt.Errorf("the systemd cgroup driver needs systemd as init, but PID 1 is %q (no %s): use --cgroup-driver cgroupfs, and SystemdCgroup = false in containerd's runc options", init, runDir)
}

// SystemdCgroupFromConfig reads containerd's config (TOML) and says whether its CRI runc runtime
// uses the systemd cgroup driver (`SystemdCgroup = true` under the runc runtime's options), in
// the config layouts of containerd 1.x (version 2) and 2.x (version 3). A config that says
// nothing means cgroupfs.
func SystemdCgroupFromConfig(b []byte) (bool, error) {
	var cfg map[string]any
	if err := toml.Unmarshal(b, &cfg); err != nil {
		return false, fmt.Errorf("containerd config: %w", err)
	}
	get := func(m any, keys ...string) any {
		for _, k := range keys {
			mm, ok := m.(map[string]any)
			if !ok {
				return nil
			}
			m = mm[k]
		}
		return m
	}
	for _, plugin := range []string{"io.containerd.grpc.v1.cri", "io.containerd.cri.v1.runtime"} {
		runtimes := get(cfg, "plugins", plugin, "containerd", "runtimes")
		rts, ok := runtimes.(map[string]any)
		if !ok {
			continue
		}
		// The default runtime's options decide; "runc" when not named.
		name, _ := get(cfg, "plugins", plugin, "containerd", "default_runtime_name").(string)
		if name == "" {
			name = "runc"
		}
		if v, ok := get(rts, name, "options", "SystemdCgroup").(bool); ok {
			return v, nil
		}
	}
	return false, nil
}

// sliceUnit is a slice cgroup path's unit and its parent's: "/a.slice/a-b.slice" is a-b.slice
// in a.slice; a top slice is in "-.slice", the root.
func sliceUnit(dir string) (unit, parent string) {
	parts := strings.Split(strings.Trim(dir, "/"), "/")
	unit = parts[len(parts)-1]
	parent = "-.slice"
	if len(parts) > 1 {
		parent = parts[len(parts)-2]
	}
	return unit, parent
}

// sliceProperties are the properties of a slice unit for resources r on cgroup version v, as the
// kubelet (through runc's systemd manager) asks for them: accounting on, no default
// dependencies, the limits; v1 and v2 spell CPU and memory differently. Pure.
func sliceProperties(unit, parent string, r Resources, v Version) []sddbus.Property {
	props := []sddbus.Property{
		sddbus.PropDescription("podkeeper " + unit),
		sddbus.PropWants(parent),
		sddbus.PropSlice(parent),
		newProp("DefaultDependencies", false),
		newProp("CPUAccounting", true),
		newProp("MemoryAccounting", true),
		newProp("TasksAccounting", true),
	}
	if r.CPUShares > 0 {
		if v == V2 {
			props = append(props, newProp("CPUWeight", SharesToWeight(r.CPUShares)))
		} else {
			props = append(props, newProp("CPUShares", r.CPUShares))
		}
	}
	if r.CPUQuota > 0 && r.CPUPeriod > 0 {
		// systemd takes the quota per second of wall time, in whole percent steps (10 ms).
		perSec := uint64(r.CPUQuota) * 1000000 / r.CPUPeriod
		if perSec%10000 != 0 {
			perSec = (perSec/10000 + 1) * 10000
		}
		props = append(props, newProp("CPUQuotaPerSecUSec", perSec))
	}
	if r.Memory > 0 {
		if v == V2 {
			props = append(props, newProp("MemoryMax", uint64(r.Memory)))
		} else {
			props = append(props, newProp("MemoryLimit", uint64(r.Memory)))
		}
	}
	if r.PidsLimit > 0 {
		props = append(props, newProp("TasksMax", uint64(r.PidsLimit)))
	}
	return props
}

func newProp(name string, v any) sddbus.Property {
	return sddbus.Property{Name: name, Value: dbus.MakeVariant(v)}
}

// systemdSlices creates and updates slices through systemd's D-Bus API.
type systemdSlices struct {
	conn    *sddbus.Conn
	version Version
}

func newSystemdSlices(v Version) (*systemdSlices, error) {
	if err := SystemdRunning("/run/systemd/system"); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := sddbus.NewWithContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("the systemd cgroup driver: connect to systemd over D-Bus: %w", err)
	}
	return &systemdSlices{conn: conn, version: v}, nil
}

// ensure starts the slice of cgroup path dir with r, or sets r on it when it exists already.
func (s *systemdSlices) ensure(dir string, r Resources) error {
	unit, parent := sliceUnit(dir)
	props := sliceProperties(unit, parent, r, s.version)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan string, 1)
	_, err := s.conn.StartTransientUnitContext(ctx, unit, "replace", props, done)
	if err != nil {
		if de, ok := err.(dbus.Error); ok && de.Name == "org.freedesktop.systemd1.UnitExists" {
			// Exists: update the limits (the first four properties only say where it lives).
			if err := s.conn.SetUnitPropertiesContext(ctx, unit, true, props[4:]...); err != nil {
				return fmt.Errorf("systemd: set properties of %s: %w", unit, err)
			}
			return nil
		}
		return fmt.Errorf("systemd: start %s: %w", unit, err)
	}
	select {
	case res := <-done:
		if res != "done" {
			return fmt.Errorf("systemd: start %s: %s", unit, res)
		}
	case <-ctx.Done():
		return fmt.Errorf("systemd: start %s: %w", unit, ctx.Err())
	}
	return nil
}

// remove stops the slice of cgroup path dir (systemd removes its cgroup); a slice that is not
// loaded is not an error.
func (s *systemdSlices) remove(dir string) error {
	unit, _ := sliceUnit(dir)
	if path.Ext(unit) != ".slice" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan string, 1)
	if _, err := s.conn.StopUnitContext(ctx, unit, "replace", done); err != nil {
		if de, ok := err.(dbus.Error); ok && de.Name == "org.freedesktop.systemd1.NoSuchUnit" {
			return nil
		}
		return fmt.Errorf("systemd: stop %s: %w", unit, err)
	}
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("systemd: stop %s: %w", unit, ctx.Err())
	}
	return nil
}
