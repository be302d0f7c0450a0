package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkeeper/podkeeper/cgroup"
	"github.com/podkeeper/podkeeper/podrunner"
)

// evictionFlags are the `run` flags of node-pressure eviction (settable from --config too).
func evictionFlags() []cli.Flag {
	return []cli.Flag{
		altsrc.NewStringFlag(&cli.StringFlag{Name: "eviction-hard", Value: "memory.available<100Mi,nodefs.available<10%,imagefs.available<15%,nodefs.inodesFree<5%", Usage: "hard eviction thresholds (the kubelet's syntax); empty: none"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "eviction-soft", Usage: "soft eviction thresholds, e.g. memory.available<300Mi (each needs a grace period)"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "eviction-soft-grace-period", Usage: "grace periods of the soft thresholds, e.g. memory.available=1m30s"}),
		altsrc.NewDurationFlag(&cli.DurationFlag{Name: "eviction-monitoring-interval", Value: podrunner.EvictionMonitorInterval, Usage: "how often node pressure is observed (at most one pod is evicted per interval)"}),
		altsrc.NewDurationFlag(&cli.DurationFlag{Name: "eviction-pressure-transition-period", Value: podrunner.PressureTransitionPeriod, Usage: "how long a pressure condition stays True after its threshold stopped being met"}),
	}
}

// evictionConfig builds the eviction loop's config from the flags. imageRoot is the file system
// of containerd's images (imagefs), logDir podkeeper's (nodefs).
func evictionConfig(c *cli.Context, cg *cgroup.Manager, logDir, imageRoot string) (*podrunner.EvictionConfig, error) {
	hard, err := podrunner.ParseThresholds(c.String("eviction-hard"), "")
	if err != nil {
		return nil, fmt.Errorf("--eviction-hard: %w", err)
	}
	soft, err := podrunner.ParseThresholds(c.String("eviction-soft"), c.String("eviction-soft-grace-period"))
	if err != nil {
		return nil, fmt.Errorf("--eviction-soft: %w", err)
	}
	if len(hard) == 0 && len(soft) == 0 {
		return nil, nil
	}
	ec := &podrunner.EvictionConfig{
		Hard: hard, Soft: soft,
		Interval:   c.Duration("eviction-monitoring-interval"),
		Transition: c.Duration("eviction-pressure-transition-period"),
		Observe:    func() (map[podrunner.Signal]podrunner.Observation, error) { return observeNode(logDir, imageRoot) },
	}
	if cg != nil {
		ec.Usage = func(p *corev1.Pod) (podrunner.PodUsage, bool) {
			s := cg.PodStats(p)
			if s.Memory == nil || s.Memory.WorkingSetBytes == nil {
				return podrunner.PodUsage{}, false
			}
			u := podrunner.PodUsage{Total: int64(*s.Memory.WorkingSetBytes), Containers: map[string]int64{}}
			for _, cs := range s.Containers {
				if cs.Memory != nil && cs.Memory.WorkingSetBytes != nil {
					u.Containers[cs.Name] = int64(*cs.Memory.WorkingSetBytes)
				}
			}
			return u, true
		}
	}
	return ec, nil
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
