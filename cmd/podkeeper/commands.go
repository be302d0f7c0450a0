package main

import (
	"errors"
	"fmt"
	"os/signal"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/podkeeper/podkeeper/podrunner/api"
	"github.com/podkeeper/podkeeper/podrunner/runtime"
)

func client(c *cli.Context) *api.Client {
	return api.NewClient(c.String("api-socket"))
}

var namespaceFlags = []cli.Flag{
	&cli.StringFlag{Name: "namespace", Aliases: []string{"n"}, Usage: "namespace (default: any)"},
	&cli.BoolFlag{Name: "all-namespaces", Aliases: []string{"A"}, Usage: "show the NAMESPACE column"},
}

func getCommand() *cli.Command {
	return &cli.Command{
		Name:  "get",
		Usage: "list resources",
		Subcommands: []*cli.Command{{
			Name:      "pods",
			Aliases:   []string{"pod", "po"},
			Usage:     "list pods: NAME READY STATUS RESTARTS AGE",
			ArgsUsage: "[NAME]",
			Flags: append([]cli.Flag{
				&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "wide, json, yaml or name"},
				&cli.StringFlag{Name: "selector", Aliases: []string{"l"}, Usage: "label selector (app=web, tier in (a,b), !canary)"},
				&cli.BoolFlag{Name: "watch", Aliases: []string{"w"}, Usage: "after the list, print a row each time a pod changes"},
				&cli.DurationFlag{Name: "watch-interval", Value: time.Second, Usage: "how often --watch asks the agent", Hidden: true},
			}, namespaceFlags...),
			Action:       getPodsAction,
			BashComplete: completePods,
		}, getManifestsCommand(), {
			Name:  "events",
			Usage: "list events",
			Action: func(c *cli.Context) error {
				l, err := client(c).Events(c.Context, "")
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(c.App.Writer, 0, 8, 3, ' ', 0)
				defer tw.Flush()
				fmt.Fprintln(tw, "LAST SEEN\tTYPE\tREASON\tOBJECT\tMESSAGE")
				now := time.Now()
				for _, e := range l.Items {
					fmt.Fprintf(tw, "%s\t%s\t%s\tpod/%s\t%s\n", age(e.LastTimestamp, now), e.Type, e.Reason, e.InvolvedObject.Name, e.Message)
				}
				return nil
			},
		}},
	}
}

func describeCommand() *cli.Command {
	return &cli.Command{
		Name:  "describe",
		Usage: "show details of a resource",
		Subcommands: []*cli.Command{{
			Name:         "pod",
			Aliases:      []string{"pods", "po"},
			Usage:        "show a pod: spec summary, conditions, container states and events",
			ArgsUsage:    "NAME",
			Flags:        namespaceFlags[:1],
			BashComplete: completePods,
			Action: func(c *cli.Context) error {
				if c.NArg() != 1 {
					return errors.New("usage: podkeeper describe pod NAME")
				}
				cl := client(c)
				p, err := cl.Pod(c.Context, c.String("namespace"), c.Args().First())
				if err != nil {
					return err
				}
				ev, err := cl.Events(c.Context, string(p.UID))
				if err != nil {
					return err
				}
				describePod(c.App.Writer, p, ev.Items, time.Now())
				return nil
			},
		}, describeNodeCommand()},
	}
}

func logsCommand() *cli.Command {
	return &cli.Command{
		Name:      "logs",
		Usage:     "print a container's output",
		ArgsUsage: "POD",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "container", Aliases: []string{"c"}, Usage: "container name (default: the only one)"},
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep streaming new output"},
			&cli.BoolFlag{Name: "previous", Aliases: []string{"p"}, Usage: "the previous instance of the container"},
			&cli.BoolFlag{Name: "timestamps", Usage: "prefix each line with its RFC3339Nano timestamp"},
			&cli.Int64Flag{Name: "tail", Value: -1, Usage: "only the last N lines (-1: all)"},
			&cli.DurationFlag{Name: "since", Usage: "only lines newer than this (e.g. 5m)"},
			&cli.StringFlag{Name: "since-time", Usage: "only lines from this time on (RFC3339, e.g. 2026-12-07T05:00:00Z); not with --since"},
			&cli.Int64Flag{Name: "limit-bytes", Usage: "stop after this many bytes of output (0: no limit)"},
			&cli.BoolFlag{Name: "all-containers", Usage: "every container of the pod (init containers first; with -f all at once)"},
			&cli.BoolFlag{Name: "prefix", Usage: "prefix each line with [pod/NAME/CONTAINER]"},
			namespaceFlags[0],
		},
		BashComplete: completePods,
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return errors.New("usage: podkeeper logs POD [-c CONTAINER] [-f] [--previous]")
			}
			ctx, stop := signal.NotifyContext(c.Context, syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			o := api.LogOptions{
				Container: c.String("container"), Previous: c.Bool("previous"), Follow: c.Bool("follow"),
				Timestamps: c.Bool("timestamps"), Tail: c.Int64("tail"), Since: c.Duration("since"),
				LimitBytes: c.Int64("limit-bytes"),
			}
			if v := c.String("since-time"); v != "" {
				if o.Since != 0 {
					return errors.New("only one of --since-time and --since may be used")
				}
				t, err := time.Parse(time.RFC3339, v)
				if err != nil {
					return fmt.Errorf("--since-time: %w", err)
				}
				o.SinceTime = t
			}
			if o.LimitBytes < 0 {
				return fmt.Errorf("--limit-bytes must be positive, not %d", o.LimitBytes)
			}
			if c.Bool("all-containers") {
				if o.Container != "" {
					return errors.New("--all-containers and -c are mutually exclusive")
				}
				return allContainerLogs(ctx, client(c), c.String("namespace"), c.Args().First(), o, c.Bool("prefix"), c.App.Writer)
			}
			if c.Bool("prefix") {
				p, err := client(c).Pod(ctx, c.String("namespace"), c.Args().First())
				if err != nil {
					return err
				}
				if o.Container == "" {
					if o.Container, err = api.DefaultContainer(p); err != nil {
						return err
					}
				}
				lw := &lineWriter{mu: &sync.Mutex{}, out: c.App.Writer, prefix: []byte(fmt.Sprintf("[pod/%s/%s] ", p.Name, o.Container))}
				defer lw.flush()
				return client(c).Logs(ctx, p.Namespace, p.Name, o, lw)
			}
			return client(c).Logs(ctx, c.String("namespace"), c.Args().First(), o, c.App.Writer)
		},
	}
}

func imageCommand() *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "containerd-address", Value: "/run/containerd/containerd.sock", Usage: "containerd socket"},
		&cli.StringFlag{Name: "containerd-namespace", Value: "podkeeper", Usage: "containerd namespace"},
	}
	dial := dialImages
	return &cli.Command{
		Name:  "image",
		Usage: "manage images on the node (talks to containerd directly)",
		Subcommands: []*cli.Command{{
			Name:      "import",
			Usage:     "import OCI-layout or docker-archive tarballs (.tar, .tar.gz)",
			ArgsUsage: "FILE...",
			Flags:     flags,
			Action: func(c *cli.Context) error {
				if c.NArg() == 0 {
					return errors.New("usage: podkeeper image import FILE...")
				}
				rt, err := dial(c)
				if err != nil {
					return err
				}
				defer rt.Close()
				for _, f := range c.Args().Slice() {
					names, err := rt.ImportFile(c.Context, f)
					if err != nil {
						return err
					}
					for _, n := range names {
						fmt.Fprintf(c.App.Writer, "imported %s\n", n)
					}
				}
				return nil
			},
		}, {
			Name:  "ls",
			Usage: "list images",
			Flags: flags,
			Action: func(c *cli.Context) error {
				rt, err := dial(c)
				if err != nil {
					return err
				}
				defer rt.Close()
				imgs, err := rt.ListImages(c.Context)
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(c.App.Writer, 0, 8, 3, ' ', 0)
				defer tw.Flush()
				fmt.Fprintln(tw, "IMAGE\tID\tSIZE\tAGE")
				for _, im := range imgs {
					id := im.ID
					if len(id) > 19 {
						id = id[:19]
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", im.Name, id, humanBytes(im.Size), duration.HumanDuration(time.Since(im.CreatedAt)))
				}
				return nil
			},
		}, imagePullCommand(flags), imageRmCommand(flags)},
	}
}

// dialImages connects to containerd for the image commands.
func dialImages(c *cli.Context) (*runtime.Runtime, error) {
	return runtime.Dial(c.Context, runtime.Config{
		Address: c.String("containerd-address"), Namespace: c.String("containerd-namespace"),
		RegistryConfigDir: c.String("registry-config-dir"), DockerConfig: c.String("docker-config"),
	})
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1fGiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1fKiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}
