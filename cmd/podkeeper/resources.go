package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	goruntime "runtime"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"

	"github.com/podkeeper/podkeeper/cgroup"
	"github.com/podkeeper/podkeeper/podrunner"
)

// resourceFlags are the `run` flags of the resources issue (settable from --config too).
func resourceFlags() []cli.Flag {
	return []cli.Flag{
		altsrc.NewBoolFlag(&cli.BoolFlag{Name: "cgroups-per-qos", Value: true, Usage: "put pods in podkeeper's cgroup tree (<parent>/{burstable,besteffort}/pod<uid>) with pod and container limits; false: containerd's default cgroups, no limits"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "cgroup-parent", Value: cgroup.DefaultParent, EnvVars: []string{"PODKEEPER_CGROUP_PARENT"}, Usage: "name of podkeeper's top cgroup"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "cgroup-driver", Value: "auto", Usage: "cgroupfs, systemd (slices, through systemd's D-Bus API), or auto: what containerd's config (--containerd-config) says with SystemdCgroup"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "containerd-config", Value: "/etc/containerd/config.toml", Usage: "the external containerd's config, read for --cgroup-driver auto"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "cgroup-root", Value: "/sys/fs/cgroup", Usage: "where the cgroup hierarchies are mounted"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "system-reserved", Usage: "resources kept for the system, e.g. cpu=500m,memory=512Mi (taken off the allocatable)"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "kube-reserved", Usage: "resources kept for podkeeper and containerd, e.g. cpu=100m,memory=256Mi"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "eviction-hard-memory", Value: "100Mi", Usage: "hard memory.available threshold, taken off the allocatable"}),
		altsrc.NewInt64Flag(&cli.Int64Flag{Name: "max-pods", Value: 110, Usage: "most pods admitted at once"}),
		altsrc.NewBoolFlag(&cli.BoolFlag{Name: "admission", Value: true, Usage: "start a pod only when its requests fit the allocatable (else Failed OutOfcpu/OutOfmemory until room frees up)"}),
		altsrc.NewInt64Flag(&cli.Int64Flag{Name: "pod-pids-limit", Value: 0, Usage: "most processes a pod may have (the kubelet's podPidsLimit); 0: no limit"}),
	}
}

// newCgroupManager builds the pod cgroup manager from the flags; nil when --cgroups-per-qos=false.
func newCgroupManager(c *cli.Context, log *slog.Logger) (*cgroup.Manager, error) {
	if !c.Bool("cgroups-per-qos") {
		return nil, nil
	}
	drv, why, err := cgroupDriver(c.String("cgroup-driver"), c.String("containerd"), c.String("containerd-config"))
	if err != nil {
		return nil, err
	}
	log.Info("cgroup driver", "driver", string(drv), "why", why)
	if c.Int64("pod-pids-limit") < 0 {
		return nil, fmt.Errorf("--pod-pids-limit %d: must be 0 or more", c.Int64("pod-pids-limit"))
	}
	m, err := cgroup.New(cgroup.Config{
		Root:         c.String("cgroup-root"),
		Layout:       cgroup.Layout{Driver: drv, Parent: c.String("cgroup-parent")},
		PodPidsLimit: c.Int64("pod-pids-limit"),
		Logger:       log,
	})
	if err != nil {
		return nil, fmt.Errorf("cgroups: %w", err)
	}
	log.Info("pod cgroups", "version", m.Version().String(), "driver", string(drv), "parent", c.String("cgroup-parent"))
	return m, nil
}

// cgroupDriver decides the cgroup driver: the flag's, or with "auto" the one containerd's runc
// runtime uses (SystemdCgroup in its config), so that podkeeper's pod slices and runc's container
// cgroups agree; podkeeper's managed containerd uses cgroupfs. It says why.
func cgroupDriver(flag, containerdMode, configPath string) (cgroup.Driver, string, error) {
	if flag != "auto" {
		d, err := cgroup.ParseDriver(flag)
		if err != nil {
			return "", "", fmt.Errorf("--cgroup-driver: %w (or auto)", err)
		}
		return d, "--cgroup-driver " + flag, nil
	}
	if containerdMode == "managed" {
		return cgroup.DriverCgroupfs, "auto: podkeeper's managed containerd uses cgroupfs", nil
	}
	b, err := os.ReadFile(configPath)
	if errors.Is(err, os.ErrNotExist) {
		return cgroup.DriverCgroupfs, "auto: no containerd config at " + configPath + " (containerd's default: cgroupfs)", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("--cgroup-driver auto: %w", err)
	}
	sd, err := cgroup.SystemdCgroupFromConfig(b)
	if err != nil {
		return "", "", fmt.Errorf("--cgroup-driver auto: %s: %w (set --cgroup-driver)", configPath, err)
	}
	if sd {
		return cgroup.DriverSystemd, "auto: SystemdCgroup = true in " + configPath, nil
	}
	return cgroup.DriverCgroupfs, "auto: " + configPath + " does not set SystemdCgroup", nil
}

// parseResourceList reads "cpu=500m,memory=512Mi" (the kubelet's --system-reserved syntax).
func parseResourceList(flag, s string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return nil, fmt.Errorf("--%s %q: want name=quantity pairs, e.g. cpu=500m,memory=512Mi", flag, s)
		}
		switch corev1.ResourceName(k) {
		case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, corev1.ResourcePods:
		default:
			return nil, fmt.Errorf("--%s: unknown resource %q (cpu, memory, ephemeral-storage, pods)", flag, k)
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("--%s %s: %w", flag, k, err)
		}
		if q.Sign() < 0 {
			return nil, fmt.Errorf("--%s %s: must not be negative", flag, k)
		}
		out[corev1.ResourceName(k)] = q
	}
	return out, nil
}

// nodeResources computes the node's capacity (this machine's CPUs and memory, --max-pods) and
// allocatable = capacity - system-reserved - kube-reserved - the hard memory.available threshold.
func nodeResources(c *cli.Context) (capacity, allocatable corev1.ResourceList, err error) {
	mem, err := cgroup.MachineMemory()
	if err != nil {
		return nil, nil, fmt.Errorf("node memory: %w", err)
	}
	capacity = corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(goruntime.NumCPU()), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(mem, resource.BinarySI),
		corev1.ResourcePods:   *resource.NewQuantity(c.Int64("max-pods"), resource.DecimalSI),
	}
	sys, err := parseResourceList("system-reserved", c.String("system-reserved"))
	if err != nil {
		return nil, nil, err
	}
	kube, err := parseResourceList("kube-reserved", c.String("kube-reserved"))
	if err != nil {
		return nil, nil, err
	}
	hard, err := resource.ParseQuantity(c.String("eviction-hard-memory"))
	if err != nil {
		return nil, nil, fmt.Errorf("--eviction-hard-memory: %w", err)
	}
	return capacity, podrunner.Allocatable(capacity, sys, kube, corev1.ResourceList{corev1.ResourceMemory: hard}), nil
}
