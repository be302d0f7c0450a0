package main

import (
	"fmt"
	"log/slog"

	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"

	"github.com/podkeeper/podkeeper/cgroup"
)

// resourceFlags are the `run` flags of the resources issue (settable from --config too).
func resourceFlags() []cli.Flag {
	return []cli.Flag{
		altsrc.NewBoolFlag(&cli.BoolFlag{Name: "cgroups-per-qos", Value: true, Usage: "put pods in podkeeper's cgroup tree (<parent>/{burstable,besteffort}/pod<uid>) with pod and container limits; false: containerd's default cgroups, no limits"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "cgroup-parent", Value: cgroup.DefaultParent, Usage: "name of podkeeper's top cgroup"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "cgroup-driver", Value: string(cgroup.DriverCgroupfs), Usage: "cgroupfs or systemd (slices; match containerd's SystemdCgroup setting)"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "cgroup-root", Value: "/sys/fs/cgroup", Usage: "where the cgroup hierarchies are mounted"}),
		altsrc.NewInt64Flag(&cli.Int64Flag{Name: "pod-pids-limit", Value: 0, Usage: "most processes a pod may have (the kubelet's podPidsLimit); 0: no limit"}),
	}
}

// newCgroupManager builds the pod cgroup manager from the flags; nil when --cgroups-per-qos=false.
func newCgroupManager(c *cli.Context, log *slog.Logger) (*cgroup.Manager, error) {
	if !c.Bool("cgroups-per-qos") {
		return nil, nil
	}
	drv, err := cgroup.ParseDriver(c.String("cgroup-driver"))
	if err != nil {
		return nil, fmt.Errorf("--cgroup-driver: %w", err)
	}
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
