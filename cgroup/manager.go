package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	cgroups "github.com/containerd/cgroups/v3"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Version is the cgroup hierarchy podkeeper writes to.
type Version int

const (
	VersionAuto Version = iota
	V1                  // one hierarchy per controller (also "hybrid": v1 controllers + empty cgroup2)
	V2                  // the unified hierarchy
)

func (v Version) String() string {
	switch v {
	case V1:
		return "v1"
	case V2:
		return "v2"
	}
	return "auto"
}

// DetectVersion says which hierarchy runc uses on this machine: V2 only when cgroup2 is mounted
// alone (unified mode); legacy and hybrid machines are V1.
func DetectVersion() Version {
	if cgroups.Mode() == cgroups.Unified {
		return V2
	}
	return V1
}

// Config configures a Manager.
type Config struct {
	Root    string  // hierarchy mount root; default /sys/fs/cgroup
	Version Version // VersionAuto: DetectVersion
	Layout  Layout
	// PodPidsLimit bounds the processes of every pod (the kubelet's podPidsLimit); 0: no limit.
	PodPidsLimit int64
	// MemoryCapacity is the node's memory in bytes for the Burstable oom_score_adj; 0: /proc/meminfo.
	MemoryCapacity int64
	// OOMFloor and CanLowerOOM override the detection of this process's own oom_score_adj and of
	// CAP_SYS_RESOURCE (tests). Nil: detect.
	OOMFloor    *int
	CanLowerOOM *bool
	Logger      *slog.Logger
}

// Manager owns podkeeper's pod cgroup tree: it creates a pod's cgroup with the pod-level limits
// before the sandbox starts, tells the runtime where each container's cgroup goes and with which
// limits (runc creates it), and removes the pod's cgroup once the pod is gone. Safe for
// concurrent use; EnsurePod and RemovePod are idempotent.
type Manager struct {
	cfg       Config
	canLower  bool
	floor     int
	warnOnce  sync.Once
	v1Subsys  []string
	mu        sync.Mutex
	qosReady  map[corev1.PodQOSClass]bool
	prev      map[string]Usage // last usage sample per cgroup path, for CPU rates
	memoryCap int64
	// burstable holds the Burstable pods whose cgroups exist, for the QoS cgroup's cpu.shares.
	burstable     map[types.UID]*corev1.Pod
	burstableDone uint64         // the shares last written (0: none yet)
	sd            *systemdSlices // the systemd driver's D-Bus side; nil with cgroupfs
}

// v1 controllers a pod cgroup is created in (those mounted); runc joins the same ones.
var v1Controllers = []string{"cpu", "cpuacct", "cpuset", "memory", "pids", "hugetlb", "blkio", "devices", "freezer", "net_cls", "perf_event", "systemd"}

// New prepares a Manager: detects the version, the node's memory and whether oom_score_adj may be
// lowered below this process's own.
func New(cfg Config) (*Manager, error) {
	if cfg.Root == "" {
		cfg.Root = "/sys/fs/cgroup"
	}
	if cfg.Version == VersionAuto {
		cfg.Version = DetectVersion()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Layout.Driver == "" {
		cfg.Layout.Driver = DriverCgroupfs
	}
	m := &Manager{cfg: cfg, qosReady: map[corev1.PodQOSClass]bool{}}
	if cfg.Version == V1 {
		for _, c := range v1Controllers {
			if fi, err := os.Stat(filepath.Join(cfg.Root, c)); err == nil && fi.IsDir() {
				m.v1Subsys = append(m.v1Subsys, c)
			}
		}
		if len(m.v1Subsys) == 0 {
			return nil, fmt.Errorf("cgroup v1: no controller mounted under %s", cfg.Root)
		}
	} else if _, err := os.Stat(cfg.Root); err != nil {
		return nil, fmt.Errorf("cgroup v2 root: %w", err)
	}
	if cfg.Layout.Driver == DriverSystemd {
		sd, err := newSystemdSlices(cfg.Version)
		if err != nil {
			return nil, err
		}
		m.sd = sd
	}
	m.memoryCap = cfg.MemoryCapacity
	if m.memoryCap == 0 {
		m.memoryCap, _ = MachineMemory()
	}
	if cfg.OOMFloor != nil {
		m.floor = *cfg.OOMFloor
	} else {
		m.floor = ownOOMScoreAdj()
	}
	if cfg.CanLowerOOM != nil {
		m.canLower = *cfg.CanLowerOOM
	} else {
		m.canLower = hasCapSysResource()
	}
	return m, nil
}

// Layout returns the naming of the tree.
func (m *Manager) Layout() Layout { return m.cfg.Layout }

// Version is the hierarchy in use.
func (m *Manager) Version() Version { return m.cfg.Version }

// MemoryCapacity is the node memory used for oom_score_adj.
func (m *Manager) MemoryCapacity() int64 { return m.memoryCap }

// ContainerSpec is where container id of pod goes and what runc must set: the OCI cgroupsPath,
// the container's limits, and its oom_score_adj (clamped, see OOMScoreAdj).
func (m *Manager) ContainerSpec(pod *corev1.Pod, c *corev1.Container, id string) (string, *specs.LinuxResources, int) {
	qos := QOSClass(pod)
	p := m.cfg.Layout.ContainerCgroupsPath(qos, pod.UID, id)
	if c == nil { // the sandbox: no limits of its own, the kubelet's sandbox score
		return p, nil, m.oomAdj(SandboxOOMScoreAdj)
	}
	return p, ContainerResources(pod, c).Spec(), m.oomAdj(OOMScoreAdj(pod, c, m.memoryCap))
}

func (m *Manager) oomAdj(want int) int {
	got, clamped := ClampOOMScoreAdj(want, m.floor, m.canLower)
	if clamped {
		m.warnOnce.Do(func() {
			m.cfg.Logger.Warn("no CAP_SYS_RESOURCE: oom_score_adj values below podkeeper's own are raised to it (Guaranteed and sandbox containers lose their OOM protection)",
				"floor", m.floor, "wanted", want)
		})
	}
	return got
}

// EnsurePod creates the QoS-level cgroups (once) and the pod's cgroup with the pod-level limits
// (PodResources). Calling it again updates the limits.
func (m *Manager) EnsurePod(pod *corev1.Pod) error {
	qos := QOSClass(pod)
	if err := m.ensureQOS(qos); err != nil {
		return err
	}
	if qos == corev1.PodQOSBurstable {
		// The QoS cgroup grows before the pod starts, as the kubelet's does.
		m.mu.Lock()
		if m.burstable == nil {
			m.burstable = map[types.UID]*corev1.Pod{}
		}
		m.burstable[pod.UID] = pod
		m.mu.Unlock()
		if err := m.updateBurstable(); err != nil {
			return err
		}
	}
	dir := m.cfg.Layout.PodDir(qos, pod.UID)
	if err := m.write(dir, PodResources(pod, m.cfg.PodPidsLimit)); err != nil {
		return fmt.Errorf("pod cgroup %s: %w", dir, err)
	}
	return nil
}

// SyncQOS sets the Burstable pods anew (the pods that run, after a restart or periodically, as
// the kubelet's QoS manager does) and updates the burstable cgroup's cpu.shares.
func (m *Manager) SyncQOS(pods []*corev1.Pod) error {
	m.mu.Lock()
	m.burstable = map[types.UID]*corev1.Pod{}
	for _, p := range pods {
		if QOSClass(p) == corev1.PodQOSBurstable {
			m.burstable[p.UID] = p
		}
	}
	m.mu.Unlock()
	return m.updateBurstable()
}

// updateBurstable writes the burstable QoS cgroup's cpu.shares (v2: cpu.weight) when it changed.
func (m *Manager) updateBurstable() error {
	if err := m.ensureQOS(corev1.PodQOSBurstable); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	pods := make([]*corev1.Pod, 0, len(m.burstable))
	for _, p := range m.burstable {
		pods = append(pods, p)
	}
	shares := BurstableShares(pods)
	if shares == m.burstableDone {
		return nil
	}
	dir := m.cfg.Layout.QOSDir(corev1.PodQOSBurstable)
	if err := m.write(dir, Resources{CPUShares: shares}); err != nil {
		return fmt.Errorf("cgroup %s: %w", dir, err)
	}
	m.burstableDone = shares
	return nil
}

func (m *Manager) ensureQOS(qos corev1.PodQOSClass) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.qosReady[qos] {
		return nil
	}
	if err := m.write(m.cfg.Layout.ParentDir(), Resources{}); err != nil {
		return fmt.Errorf("cgroup %s: %w", m.cfg.Layout.ParentDir(), err)
	}
	r := Resources{}
	if qos == corev1.PodQOSBestEffort {
		r.CPUShares = MinShares // the kubelet's besteffort cgroup: the smallest share
	}
	if qos != corev1.PodQOSGuaranteed {
		if err := m.write(m.cfg.Layout.QOSDir(qos), r); err != nil {
			return fmt.Errorf("cgroup %s: %w", m.cfg.Layout.QOSDir(qos), err)
		}
	}
	m.qosReady[qos] = true
	return nil
}

// RemovePod removes pod uid's cgroup (any QoS class), and container cgroups left inside it. The
// pod's processes must be gone; a cgroup that still holds some is an error (retry later).
// Removing a pod that has no cgroup is not an error.
func (m *Manager) RemovePod(uid types.UID) error {
	var errs []error
	m.mu.Lock()
	_, wasBurstable := m.burstable[uid]
	delete(m.burstable, uid)
	m.mu.Unlock()
	if wasBurstable {
		defer func() {
			if err := m.updateBurstable(); err != nil {
				m.cfg.Logger.Warn("update the burstable cgroup", "err", err)
			}
		}()
	}
	for _, qos := range []corev1.PodQOSClass{corev1.PodQOSGuaranteed, corev1.PodQOSBurstable, corev1.PodQOSBestEffort} {
		dir := m.cfg.Layout.PodDir(qos, uid)
		m.mu.Lock()
		for k := range m.prev {
			if k == dir || strings.HasPrefix(k, dir+"/") {
				delete(m.prev, k)
			}
		}
		m.mu.Unlock()
		if m.sd != nil {
			if err := m.sd.remove(dir); err != nil {
				errs = append(errs, err)
			}
		}
		for _, base := range m.bases() {
			if err := removeTree(filepath.Join(base, dir)); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// RemoveAll removes the whole tree under the parent (tests; an agent never does this while pods
// run). Missing is not an error.
func (m *Manager) RemoveAll() error {
	var errs []error
	for _, base := range m.bases() {
		if err := removeTree(filepath.Join(base, m.cfg.Layout.ParentDir())); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeTree removes a cgroup directory bottom-up (cgroup dirs are removed with rmdir; their
// files are not real files). A regular-directory tree (tests) is removed the same way.
func removeTree(dir string) error {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove cgroup %s: %w", dir, err)
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := removeTree(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	if err := os.Remove(dir); err != nil && !os.IsNotExist(err) {
		// A fake tree in a temp dir holds regular files: remove them, then the dir.
		if isCgroupFS(dir) {
			return fmt.Errorf("remove cgroup %s: %w", dir, err)
		}
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("remove %s: %w", dir, err)
		}
	}
	return nil
}

func isCgroupFS(dir string) bool { return strings.HasPrefix(dir, "/sys/fs/cgroup/") }

// bases are the directories a cgroup path is created under: every v1 controller, or the v2 root.
func (m *Manager) bases() []string {
	if m.cfg.Version == V2 {
		return []string{m.cfg.Root}
	}
	out := make([]string, 0, len(m.v1Subsys))
	for _, s := range m.v1Subsys {
		out = append(out, filepath.Join(m.cfg.Root, s))
	}
	return out
}

// Dir is where a cgroup path lies for controller (v1: "cpu", "memory"...; ignored on v2).
func (m *Manager) Dir(controller, cgroupPath string) string {
	if m.cfg.Version == V2 {
		return filepath.Join(m.cfg.Root, cgroupPath)
	}
	return filepath.Join(m.cfg.Root, controller, cgroupPath)
}

// write creates cgroup dir (and its ancestors) and writes r's non-zero values.
func (m *Manager) write(dir string, r Resources) error {
	if m.sd != nil {
		if err := m.sd.ensure(dir, r); err != nil {
			return err
		}
	}
	if m.cfg.Version == V2 {
		return m.writeV2(dir, r)
	}
	return m.writeV1(dir, r)
}

func (m *Manager) writeV1(dir string, r Resources) error {
	for _, s := range m.v1Subsys {
		p := filepath.Join(m.cfg.Root, s, dir)
		if err := os.MkdirAll(p, 0o755); err != nil {
			return err
		}
		if s == "cpuset" {
			if err := fillCpuset(filepath.Join(m.cfg.Root, s), dir); err != nil {
				return err
			}
		}
	}
	files := map[string]string{}
	if r.CPUShares > 0 {
		files["cpu/cpu.shares"] = strconv.FormatUint(r.CPUShares, 10)
	}
	if r.CPUQuota > 0 {
		files["cpu/cpu.cfs_period_us"] = strconv.FormatUint(r.CPUPeriod, 10)
		files["cpu/cpu.cfs_quota_us"] = strconv.FormatInt(r.CPUQuota, 10)
	}
	if r.Memory > 0 {
		files["memory/memory.limit_in_bytes"] = strconv.FormatInt(r.Memory, 10)
	}
	if r.PidsLimit > 0 {
		files["pids/pids.max"] = strconv.FormatInt(r.PidsLimit, 10)
	}
	for sz, v := range r.HugePages {
		files["hugetlb/hugetlb."+sz+".limit_in_bytes"] = strconv.FormatInt(v, 10)
	}
	// period before quota: the kernel checks the quota against the current period.
	for _, f := range []string{"cpu/cpu.cfs_period_us", "cpu/cpu.cfs_quota_us"} {
		if v, ok := files[f]; ok {
			if err := writeFile(m.cfg.Root, f, dir, v); err != nil {
				return err
			}
			delete(files, f)
		}
	}
	for f, v := range files {
		if err := writeFile(m.cfg.Root, f, dir, v); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(root, ctrlFile, dir, v string) error {
	ctrl, file, _ := strings.Cut(ctrlFile, "/")
	base := filepath.Join(root, ctrl)
	if _, err := os.Stat(base); err != nil {
		return fmt.Errorf("controller %s is not mounted (%s)", ctrl, file)
	}
	p := filepath.Join(base, dir, file)
	if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
		return fmt.Errorf("write %s=%s: %w", p, v, err)
	}
	return nil
}

// fillCpuset gives new v1 cpuset cgroups from the root down to dir their parent's cpus and
// mems (a cpuset cgroup with none cannot hold a process).
func fillCpuset(root, dir string) error {
	cur := root
	for _, seg := range strings.Split(strings.Trim(dir, "/"), "/") {
		parent := cur
		cur = filepath.Join(cur, seg)
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			b, err := os.ReadFile(filepath.Join(cur, f))
			if err != nil {
				if os.IsNotExist(err) {
					continue // not a real cpuset (tests)
				}
				return err
			}
			if strings.TrimSpace(string(b)) != "" {
				continue
			}
			pb, err := os.ReadFile(filepath.Join(parent, f))
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(cur, f), pb, 0o644); err != nil {
				return fmt.Errorf("write %s: %w", filepath.Join(cur, f), err)
			}
		}
	}
	return nil
}

// V2Files are the unified-hierarchy files and values r turns into.
func V2Files(r Resources) map[string]string {
	files := map[string]string{}
	if r.CPUShares > 0 {
		files["cpu.weight"] = strconv.FormatUint(SharesToWeight(r.CPUShares), 10)
	}
	if r.CPUQuota > 0 {
		files["cpu.max"] = fmt.Sprintf("%d %d", r.CPUQuota, r.CPUPeriod)
	}
	if r.Memory > 0 {
		files["memory.max"] = strconv.FormatInt(r.Memory, 10)
	}
	if r.PidsLimit > 0 {
		files["pids.max"] = strconv.FormatInt(r.PidsLimit, 10)
	}
	for sz, v := range r.HugePages {
		files["hugetlb."+sz+".max"] = strconv.FormatInt(v, 10)
	}
	return files
}

func (m *Manager) writeV2(dir string, r Resources) error {
	// Enable the controllers for the children of every ancestor, then write the values.
	cur := m.cfg.Root
	for _, seg := range strings.Split(strings.Trim(dir, "/"), "/") {
		if err := enableV2Controllers(cur); err != nil {
			return err
		}
		cur = filepath.Join(cur, seg)
		if err := os.MkdirAll(cur, 0o755); err != nil {
			return err
		}
	}
	for f, v := range V2Files(r) {
		if err := os.WriteFile(filepath.Join(cur, f), []byte(v), 0o644); err != nil {
			return fmt.Errorf("write %s=%s: %w", filepath.Join(cur, f), v, err)
		}
	}
	return nil
}

// enableV2Controllers writes "+cpu +memory +pids (+hugetlb)" to dir's cgroup.subtree_control for
// the controllers dir's cgroup.controllers offers (all four where that file is absent).
func enableV2Controllers(dir string) error {
	want := []string{"cpu", "memory", "pids", "hugetlb"}
	if b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers")); err == nil {
		avail := map[string]bool{}
		for _, c := range strings.Fields(string(b)) {
			avail[c] = true
		}
		var w []string
		for _, c := range want {
			if avail[c] {
				w = append(w, c)
			}
		}
		want = w
	}
	if len(want) == 0 {
		return nil
	}
	if b, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control")); err == nil {
		have := map[string]bool{}
		var haveList []string
		for _, c := range strings.Fields(string(b)) {
			c = strings.TrimPrefix(c, "+")
			have[c] = true
			haveList = append(haveList, c)
		}
		var w []string
		for _, c := range want {
			if !have[c] {
				w = append(w, c)
			}
		}
		if len(w) == 0 {
			return nil
		}
		want = append(haveList, w...)
	}
	line := "+" + strings.Join(want, " +")
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(line), 0o644); err != nil {
		return fmt.Errorf("enable controllers in %s: %w", dir, err)
	}
	return nil
}

// MachineMemory reads MemTotal from /proc/meminfo in bytes.
func MachineMemory() (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("meminfo: %w", err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("meminfo: no MemTotal")
}

func ownOOMScoreAdj() int {
	b, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		return 0
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return v
}

// hasCapSysResource reads the effective capability set of this process (bit 24).
func hasCapSysResource() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && caps&(1<<24) != 0
		}
	}
	return false
}
