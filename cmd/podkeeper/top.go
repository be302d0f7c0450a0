package main

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/podkeeper/podkeeper/cgroup"
)

// StatsSummary implements api.StatsBackend from the pod cgroups. Cgroups read for the first time
// have no CPU rate yet: they are read again a second later, so a reply always has rates for the
// running pods.
func (b *lateBackend) StatsSummary() (cgroup.Summary, error) {
	m := b.get()
	if b.cg == nil {
		return cgroup.Summary{}, errors.New("usage statistics need pod cgroups (--cgroups-per-qos)")
	}
	if m == nil {
		return cgroup.Summary{}, errors.New("podkeeper is still waiting for containerd")
	}
	s := b.cg.Summary(b.node, m.Pods())
	if missingRates(s) {
		time.Sleep(time.Second)
		s = b.cg.Summary(b.node, m.Pods())
	}
	return s, nil
}

func missingRates(s cgroup.Summary) bool {
	for _, p := range s.Pods {
		if p.CPU != nil && p.CPU.UsageNanoCores == nil {
			return true
		}
	}
	return s.Node.CPU != nil && s.Node.CPU.UsageNanoCores == nil
}

func topCommand() *cli.Command {
	return &cli.Command{
		Name:  "top",
		Usage: "show CPU and memory usage",
		Subcommands: []*cli.Command{{
			Name:    "pods",
			Aliases: []string{"pod", "po"},
			Usage:   "CPU (cores) and memory (working set) of every pod, from its cgroup",
			Flags: []cli.Flag{
				&cli.BoolFlag{Name: "containers", Usage: "one line per container"},
			},
			Action: func(c *cli.Context) error {
				s, err := client(c).StatsSummary(c.Context)
				if err != nil {
					return err
				}
				printTopPods(c.App.Writer, s, c.Bool("containers"))
				return nil
			},
		}},
	}
}

// printTopPods writes kubectl top's layout: NAME CPU(cores) MEMORY(bytes) (POD NAME ... with
// containers), CPU in millicores, memory (working set) in Mi.
func printTopPods(out io.Writer, s *cgroup.Summary, containers bool) {
	pods := append([]cgroup.PodStats(nil), s.Pods...)
	sort.Slice(pods, func(i, j int) bool { return pods[i].PodRef.Name < pods[j].PodRef.Name })
	tw := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	if containers {
		fmt.Fprintln(tw, "POD\tNAME\tCPU(cores)\tMEMORY(bytes)")
		for _, p := range pods {
			for _, c := range p.Containers {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.PodRef.Name, c.Name, milliCores(c.CPU), memMi(c.Memory))
			}
		}
	} else {
		fmt.Fprintln(tw, "NAME\tCPU(cores)\tMEMORY(bytes)")
		for _, p := range pods {
			if p.CPU == nil && p.Memory == nil {
				continue // no cgroup: not running
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", p.PodRef.Name, milliCores(p.CPU), memMi(p.Memory))
		}
	}
	tw.Flush()
}

func milliCores(c *cgroup.CPUStats) string {
	if c == nil || c.UsageNanoCores == nil {
		return "<unknown>"
	}
	return fmt.Sprintf("%dm", *c.UsageNanoCores/1_000_000)
}

func memMi(m *cgroup.MemoryStats) string {
	if m == nil || m.WorkingSetBytes == nil {
		return "<unknown>"
	}
	return fmt.Sprintf("%dMi", *m.WorkingSetBytes/(1<<20))
}
