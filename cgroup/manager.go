package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	cgroups "github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
)

// Manager creates, limits and removes pod cgroups. Containers' own cgroups (inside their pod's)
// are created by runc from the OCI spec's cgroupsPath; Manager only owns the pod and QoS levels.
//
// Contract: EnsurePod is idempotent (it re-applies the limits); RemovePod removes whatever is
// left of the pod's cgroup in any QoS level and is a no-op when nothing is. Both are safe to call
// from several pod workers at once (each touches only its own pod's directories).
type Manager struct {
	Tree Tree
	// Root is the cgroup mount: /sys/fs/cgroup (v1: the controllers' mounts under it).
	Root string
	// Unified: the cgroup v2 hierarchy is the one that holds controllers.
	Unified bool
}

// NewManager detects the host's cgroup mode. On a hybrid host (cgroup v1 controllers with an
// empty cgroup2 at /sys/fs/cgroup/unified) podkeeper uses v1, as runc does.
func NewManager(t Tree) *Manager {
	return &Manager{Tree: t, Root: "/sys/fs/cgroup", Unified: cgroups.Mode() == cgroups.Unified}
}

// EnsurePod creates the pod's cgroup (and its QoS level) with the pod-level limits and returns
// its path. With the systemd driver the slices are left to systemd (runc asks for them).
func (m *Manager) EnsurePod(pod *corev1.Pod, pidsLimit int64) (string, error) {
	q := QOSClass(pod)
	p := m.Tree.PodPath(string(pod.UID), q)
	if m.Tree.Driver == Systemd {
		return p, nil
	}
	res := PodResources(pod, pidsLimit)
	if q == corev1.PodQOSBestEffort {
		shares := MinShares
		if err := m.apply(m.Tree.QOSPath(q), &specs.LinuxResources{CPU: &specs.LinuxCPU{Shares: &shares}}); err != nil {
			return "", err
		}
	}
	if err := m.apply(p, res); err != nil {
		return "", err
	}
	return p, nil
}

func (m *Manager) apply(p string, res *specs.LinuxResources) error {
	if m.Unified {
		return WriteV2(m.Root, p, res)
	}
	cg, err := cgroup1.Load(cgroup1.StaticPath(p), cgroup1.WithHierarchy(m.hierarchy))
	if err != nil {
		cg, err = cgroup1.New(cgroup1.StaticPath(p), res, cgroup1.WithHierarchy(m.hierarchy))
		if err != nil {
			return fmt.Errorf("create cgroup %s: %w", p, err)
		}
		return nil
	}
	if err := cg.Update(res); err != nil {
		return fmt.Errorf("update cgroup %s: %w", p, err)
	}
	return nil
}

// hierarchy is the v1 subsystems podkeeper manages (the ones a pod's limits and usage need).
func (m *Manager) hierarchy() ([]cgroup1.Subsystem, error) {
	all, err := cgroup1.Default()
	if err != nil {
		return nil, err
	}
	keep := []cgroup1.Name{cgroup1.Cpu, cgroup1.Cpuacct, cgroup1.Memory, cgroup1.Pids, cgroup1.Hugetlb, cgroup1.Cpuset}
	var out []cgroup1.Subsystem
	for _, s := range all {
		if slices.Contains(keep, s.Name()) {
			out = append(out, s)
		}
	}
	return out, nil
}

// RemovePod removes the pod's cgroup wherever it is. Directories still holding processes fail.
func (m *Manager) RemovePod(uid string) error {
	if m.Tree.Driver == Systemd {
		return nil
	}
	var errs []error
	for _, p := range m.Tree.AllPodPaths(uid) {
		if m.Unified {
			if err := removeTree(filepath.Join(m.Root, p)); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		cg, err := cgroup1.Load(cgroup1.StaticPath(p), cgroup1.WithHierarchy(m.hierarchy))
		if err != nil {
			continue // not in this QoS level
		}
		if err := cg.Delete(); err != nil {
			errs = append(errs, fmt.Errorf("remove cgroup %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// removeTree removes a cgroup v2 directory and its empty children (rmdir, deepest first).
func removeTree(dir string) error {
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Remove(dirs[i]); err != nil && !errors.Is(err, fs.ErrNotExist) {
			// a real cgroupfs refuses removing interface files' dirs only when busy; a test
			// tree has plain files: remove them too.
			if err2 := os.RemoveAll(dirs[i]); err2 != nil {
				return fmt.Errorf("remove cgroup %s: %w", dirs[i], err)
			}
		}
	}
	return nil
}

// WriteV2 creates the cgroup v2 directory root/p, enables the controllers res needs in every
// ancestor's cgroup.subtree_control (from root down), and writes res's files (V2Files).
func WriteV2(root, p string, res *specs.LinuxResources) error {
	files := V2Files(res)
	var ctrls []string
	for f := range files {
		c, _, _ := strings.Cut(f, ".")
		if !slices.Contains(ctrls, c) {
			ctrls = append(ctrls, c)
		}
	}
	slices.Sort(ctrls)
	dir := root
	for _, part := range strings.Split(strings.Trim(p, "/"), "/") {
		if len(ctrls) > 0 {
			line := "+" + strings.Join(ctrls, " +")
			if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(line), 0o644); err != nil {
				return fmt.Errorf("enable controllers in %s: %w", dir, err)
			}
		}
		dir = filepath.Join(dir, part)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create cgroup %s: %w", dir, err)
		}
	}
	names := make([]string, 0, len(files))
	for f := range files {
		names = append(names, f)
	}
	slices.Sort(names)
	for _, f := range names {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(files[f]), 0o644); err != nil {
			return fmt.Errorf("write %s/%s: %w", dir, f, err)
		}
	}
	return nil
}

// OOMScoreAdjFloor is the lowest oom_score_adj this process may give its children: its own
// when it lacks CAP_SYS_RESOURCE (lowering it needs that capability: runc fails with EPERM),
// else -1000. ok reports whether a floor applies.
func OOMScoreAdjFloor() (floor int, restricted bool) {
	if hasCapSysResource() {
		return -1000, false
	}
	b, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		return 0, true
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, true
	}
	return v, true
}

// hasCapSysResource reads CapEff of /proc/self/status (CAP_SYS_RESOURCE is bit 24).
func hasCapSysResource() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && caps&(1<<24) != 0
		}
	}
	return false
}

// OOMKills is how many processes the kernel's OOM killer killed in the cgroup at p (relative to
// the hierarchy root): v1 memory.oom_control's oom_kill, v2 memory.events' oom_kill. 0 when the
// cgroup or the counter does not exist.
func (m *Manager) OOMKills(p string) int {
	file, key := filepath.Join(m.Root, "memory", p, "memory.oom_control"), "oom_kill"
	if m.Unified {
		file = filepath.Join(m.Root, p, "memory.events")
	}
	if m.Tree.Driver == Systemd {
		return 0 // the scope's path is systemd's; the OOM event covers it
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+" "); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}
