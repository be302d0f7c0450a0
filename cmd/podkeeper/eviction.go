package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkeeper/podkeeper/cgroup"
	"github.com/podkeeper/podkeeper/podrunner"
	"github.com/podkeeper/podkeeper/podrunner/runtime"
)

// evictionFlags are the `run` flags of node-pressure eviction (settable from --config too).
func evictionFlags() []cli.Flag {
	return []cli.Flag{
		altsrc.NewStringFlag(&cli.StringFlag{Name: "eviction-hard", Value: "memory.available<100Mi,nodefs.available<10%,imagefs.available<15%,nodefs.inodesFree<5%", Usage: "hard eviction thresholds (the kubelet's syntax); empty: none"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "eviction-soft", Usage: "soft eviction thresholds, e.g. memory.available<300Mi (each needs a grace period)"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "eviction-soft-grace-period", Usage: "grace periods of the soft thresholds, e.g. memory.available=1m30s"}),
		altsrc.NewDurationFlag(&cli.DurationFlag{Name: "eviction-monitoring-interval", Value: podrunner.EvictionMonitorInterval, Usage: "how often node pressure is observed (at most one pod is evicted per interval)"}),
		altsrc.NewDurationFlag(&cli.DurationFlag{Name: "eviction-pressure-transition-period", Value: podrunner.PressureTransitionPeriod, Usage: "how long a pressure condition stays True after its threshold stopped being met"}),
		altsrc.NewBoolFlag(&cli.BoolFlag{Name: "local-storage-capacity-isolation", Value: true, Usage: "evict a pod over its ephemeral-storage limits or an emptyDir over its sizeLimit (checked every eviction monitoring interval)"}),
	}
}

// evictionConfig builds the eviction loop's config from the flags. imageRoot is the file system
// of containerd's images (imagefs), logDir podkeeper's (nodefs).
func evictionConfig(c *cli.Context, cg *cgroup.Manager, rt *runtime.Runtime, logDir, imageRoot string) (*podrunner.EvictionConfig, error) {
	hard, err := podrunner.ParseThresholds(c.String("eviction-hard"), "")
	if err != nil {
		return nil, fmt.Errorf("--eviction-hard: %w", err)
	}
	soft, err := podrunner.ParseThresholds(c.String("eviction-soft"), c.String("eviction-soft-grace-period"))
	if err != nil {
		return nil, fmt.Errorf("--eviction-soft: %w", err)
	}
	isolation := c.Bool("local-storage-capacity-isolation")
	if len(hard) == 0 && len(soft) == 0 && !isolation {
		return nil, nil
	}
	ec := &podrunner.EvictionConfig{
		Hard: hard, Soft: soft,
		Interval:   c.Duration("eviction-monitoring-interval"),
		Transition: c.Duration("eviction-pressure-transition-period"),
		Observe:    func() (map[podrunner.Signal]podrunner.Observation, error) { return observeNode(logDir, imageRoot) },
	}
	u := podUsage{cg: cg, rt: rt, logDir: logDir}
	ec.Usage = u.usage
	if isolation {
		ec.LocalStorage = u.localStorage
		ec.Release = func(p *corev1.Pod) error { return rt.RemoveEmptyDirs(string(p.UID)) }
	}
	return ec, nil
}

// podUsage reads what a pod uses of the resource under pressure, for the eviction ranking.
type podUsage struct {
	cg     *cgroup.Manager // nil: no memory or process usage
	rt     *runtime.Runtime
	logDir string
}

func (u podUsage) usage(p *corev1.Pod, s podrunner.Signal) (podrunner.PodUsage, bool) {
	switch s {
	case podrunner.SignalMemoryAvailable:
		if u.cg == nil {
			return podrunner.PodUsage{}, false
		}
		st := u.cg.PodStats(p)
		if st.Memory == nil || st.Memory.WorkingSetBytes == nil {
			return podrunner.PodUsage{}, false
		}
		out := podrunner.PodUsage{Total: int64(*st.Memory.WorkingSetBytes), Containers: map[string]int64{}}
		for _, cs := range st.Containers {
			if cs.Memory != nil && cs.Memory.WorkingSetBytes != nil {
				out.Containers[cs.Name] = int64(*cs.Memory.WorkingSetBytes)
			}
		}
		return out, true
	case podrunner.SignalPIDAvailable:
		if u.cg == nil {
			return podrunner.PodUsage{}, false
		}
		n, err := u.cg.PodProcesses(p)
		return podrunner.PodUsage{Total: n}, err == nil
	default:
		d, ok := u.disk(p)
		if !ok {
			return podrunner.PodUsage{}, false
		}
		pick := func(x runtime.DiskUsage) int64 {
			if s == podrunner.SignalNodeFsInodesFree {
				return x.Inodes
			}
			return x.Bytes
		}
		out := podrunner.PodUsage{Total: pick(d.volumes), Containers: map[string]int64{}}
		for name, c := range d.containers {
			out.Containers[name] = pick(c)
			out.Total += pick(c)
		}
		return out, true
	}
}

// localStorage is what the pod wrote, for its local storage limits: per running container, per
// disk-backed emptyDir with a sizeLimit, and all its local volumes. What cannot be measured is left
// out (LocalStorageViolation does not check it) and the rest is still checked: an emptyDir over its
// sizeLimit is evicted even while a container's writable layer cannot be read. The pod's total is
// then a lower bound, which can miss an eviction but never makes one up.
func (u podUsage) localStorage(p *corev1.Pod) (podrunner.LocalStorageUsage, bool) {
	d, _ := u.disk(p)
	out := podrunner.LocalStorageUsage{Volumes: d.volumes.Bytes, Containers: map[string]int64{}, EmptyDirs: map[string]int64{}}
	for name, c := range d.containers {
		out.Containers[name] = c.Bytes
	}
	for _, v := range p.Spec.Volumes {
		if v.EmptyDir == nil || v.EmptyDir.SizeLimit == nil || v.EmptyDir.Medium == corev1.StorageMediumMemory {
			continue
		}
		e, err := u.rt.EmptyDirUsage(string(p.UID), v.Name)
		if err != nil {
			slog.Warn("cannot measure an emptyDir for its sizeLimit", "pod", p.Namespace+"/"+p.Name, "volume", v.Name, "err", err)
			continue
		}
		out.EmptyDirs[v.Name] = e.Bytes
	}
	return out, true
}

type podDisk struct {
	containers map[string]runtime.DiskUsage // writable layer + logs, per running container (sidecars too)
	volumes    runtime.DiskUsage            // emptyDir and generated files
}

// disk is what the pod has written, as the kubelet counts ephemeral storage: each container's
// writable layer and logs, and the pod's local volumes. complete is false when a part could not
// be measured (logged); it is then left out (volumes: zero), the rest is measured all the same.
func (u podUsage) disk(p *corev1.Pod) (d podDisk, complete bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d = podDisk{containers: map[string]runtime.DiskUsage{}}
	complete = true
	pod := p.Namespace + "/" + p.Name
	var err error
	if d.volumes, err = u.rt.PodVolumesUsage(string(p.UID)); err != nil {
		slog.Warn("cannot measure a pod's volumes", "pod", pod, "err", err)
		d.volumes, complete = runtime.DiskUsage{}, false
	}
	logs := filepath.Join(u.logDir, fmt.Sprintf("%s_%s_%s", p.Namespace, p.Name, p.UID))
	for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.ContainerStatuses...), p.Status.InitContainerStatuses...) {
		_, id, ok := strings.Cut(cs.ContainerID, "://")
		if !ok || cs.State.Running == nil {
			continue
		}
		layer, err := u.rt.WritableLayerUsage(ctx, id)
		if err != nil {
			slog.Warn("cannot measure a container's writable layer", "pod", pod, "container", cs.Name, "err", err)
			complete = false
			continue
		}
		lg, err := runtime.DirUsage(filepath.Join(logs, cs.Name))
		if err != nil {
			slog.Warn("cannot measure a container's logs", "pod", pod, "container", cs.Name, "err", err)
			complete = false
			continue
		}
		d.containers[cs.Name] = layer.Add(lg)
	}
	return d, complete
}

// observeNode reads the eviction signals: memory.available is /proc/meminfo's MemAvailable (of
// MemTotal), nodefs and imagefs from statfs, pid.available is pid_max minus the processes running.
// What cannot be read is left out (and reported).
func observeNode(nodefs, imagefs string) (map[podrunner.Signal]podrunner.Observation, error) {
	out := map[podrunner.Signal]podrunner.Observation{}
	var errs []string
	if avail, err := cgroup.MemAvailable(); err == nil {
		if total, err := cgroup.MachineMemory(); err == nil {
			out[podrunner.SignalMemoryAvailable] = podrunner.Observation{avail, total}
		}
	} else {
		errs = append(errs, err.Error())
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(nodefs, &fs); err == nil {
		out[podrunner.SignalNodeFsAvailable] = podrunner.Observation{int64(fs.Bavail) * int64(fs.Bsize), int64(fs.Blocks) * int64(fs.Bsize)}
		out[podrunner.SignalNodeFsInodesFree] = podrunner.Observation{int64(fs.Ffree), int64(fs.Files)}
	} else {
		errs = append(errs, fmt.Sprintf("statfs %s: %v", nodefs, err))
	}
	if err := unix.Statfs(imagefs, &fs); err == nil {
		out[podrunner.SignalImageFsAvailable] = podrunner.Observation{int64(fs.Bavail) * int64(fs.Bsize), int64(fs.Blocks) * int64(fs.Bsize)}
	} else {
		errs = append(errs, fmt.Sprintf("statfs %s: %v", imagefs, err))
	}
	if max, err := os.ReadFile("/proc/sys/kernel/pid_max"); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(max)), 10, 64); err == nil {
			if ents, err := os.ReadDir("/proc"); err == nil {
				var procs int64
				for _, e := range ents {
					if _, err := strconv.Atoi(e.Name()); err == nil {
						procs++
					}
				}
				out[podrunner.SignalPIDAvailable] = podrunner.Observation{n - procs, n}
			}
		}
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("observe node: %s", strings.Join(errs, "; "))
	}
	return out, nil
}

// pressureConditions are the node's pressure conditions from the eviction loop.
func pressureConditions(m *podrunner.Manager, since time.Time) map[corev1.NodeConditionType]podrunner.ConditionState {
	out := map[corev1.NodeConditionType]podrunner.ConditionState{}
	if m != nil {
		out = m.NodeConditions()
	}
	for _, c := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure} {
		s := out[c]
		if s.Since.IsZero() {
			s.Since = since
		}
		out[c] = s
	}
	return out
}
