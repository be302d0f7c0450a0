package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"

	"github.com/podkeeper/podkeeper/manifests"
	"github.com/podkeeper/podkeeper/podrunner/api"
	"github.com/podkeeper/podkeeper/podrunner/runtime"
	"github.com/podkeeper/podkeeper/watcher"
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
				&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "wide, json or yaml"},
			}, namespaceFlags...),
			Action: func(c *cli.Context) error {
				list, err := client(c).Pods(c.Context)
				if err != nil {
					return err
				}
				ns := c.String("namespace")
				var items []corev1.Pod
				for _, p := range list.Items {
					if ns != "" && p.Namespace != ns {
						continue
					}
					if n := c.Args().First(); n != "" && p.Name != n && p.Annotations[manifests.AnnotationManifestName] != n {
						continue
					}
					items = append(items, p)
				}
				if n := c.Args().First(); n != "" && len(items) == 0 {
					return fmt.Errorf("pod %s not found", n)
				}
				list.Items = items
				switch o := c.String("output"); o {
				case "json":
					enc := json.NewEncoder(c.App.Writer)
					enc.SetIndent("", "  ")
					return enc.Encode(list)
				case "yaml":
					b, err := yaml.Marshal(list)
					if err != nil {
						return err
					}
					_, err = c.App.Writer.Write(b)
					return err
				case "", "wide":
					if len(items) == 0 {
						fmt.Fprintln(c.App.ErrWriter, "No resources found.")
					} else {
						printPodTable(c.App.Writer, items, o == "wide", c.Bool("all-namespaces"), time.Now())
					}
				default:
					return fmt.Errorf("unknown output format %q (want wide, json or yaml)", o)
				}
				if errs, err := client(c).ManifestErrors(c.Context); err == nil {
					for _, e := range errs {
						fmt.Fprintf(c.App.ErrWriter, "warning: %s\n", e.Error)
					}
				}
				return nil
			},
		}, {
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
			Name:      "pod",
			Aliases:   []string{"pods", "po"},
			Usage:     "show a pod: spec summary, conditions, container states and events",
			ArgsUsage: "NAME",
			Flags:     namespaceFlags[:1],
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
			namespaceFlags[0],
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return errors.New("usage: podkeeper logs POD [-c CONTAINER] [-f] [--previous]")
			}
			ctx, stop := signal.NotifyContext(c.Context, syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return client(c).Logs(ctx, c.String("namespace"), c.Args().First(), api.LogOptions{
				Container: c.String("container"), Previous: c.Bool("previous"), Follow: c.Bool("follow"),
				Timestamps: c.Bool("timestamps"), Tail: c.Int64("tail"), Since: c.Duration("since"),
			}, c.App.Writer)
		},
	}
}

func imageCommand() *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "containerd-address", Value: "/run/containerd/containerd.sock", Usage: "containerd socket"},
		&cli.StringFlag{Name: "containerd-namespace", Value: "podkeeper", Usage: "containerd namespace"},
	}
	dial := func(c *cli.Context) (*runtime.Runtime, error) {
		return runtime.Dial(c.Context, runtime.Config{Address: c.String("containerd-address"), Namespace: c.String("containerd-namespace")})
	}
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
		}},
	}
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

func validateCommand() *cli.Command {
	return &cli.Command{
		Name:      "validate",
		Usage:     "check manifest files or directories offline, as the agent would read them",
		ArgsUsage: "PATH...",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "node-name", Value: hostname(), Usage: "node name used for static pod names"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return errors.New("usage: podkeeper validate PATH...")
			}
			bad := 0
			for _, arg := range c.Args().Slice() {
				files, err := manifestFiles(arg)
				if err != nil {
					fmt.Fprintf(c.App.ErrWriter, "%s: %v\n", arg, err)
					bad++
					continue
				}
				for _, f := range files {
					data, err := os.ReadFile(f)
					if err == nil {
						var pods []*corev1.Pod
						if pods, err = manifests.DecodeFile(f, data, c.String("node-name")); err == nil {
							fmt.Fprintf(c.App.Writer, "%s: ok (%d pods)\n", f, len(pods))
							continue
						}
					}
					bad++
					fmt.Fprintln(c.App.ErrWriter, err)
				}
			}
			if bad > 0 {
				return cli.Exit(fmt.Sprintf("%d bad file(s)", bad), 1)
			}
			return nil
		},
	}
}

// manifestFiles expands a path: a file as is, a directory to the files the agent would read.
func manifestFiles(path string) ([]string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() || !watcher.IsManifestName(e.Name()) {
			continue
		}
		out = append(out, filepath.Join(path, e.Name()))
	}
	sort.Strings(out)
	return out, nil
}
