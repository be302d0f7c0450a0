package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/podkeeper/podkeeper/manifests"
	"github.com/podkeeper/podkeeper/podrunner/api"
	"github.com/podkeeper/podkeeper/watcher"
)

func validateCommand() *cli.Command {
	return &cli.Command{
		Name:  "validate",
		Usage: "check manifest files or directories offline, as the agent would read them (no containerd needed)",
		Description: "A directory is judged as the agent judges it: only *.yaml, *.yml and *.json files, duplicates\n" +
			"across files (the first by name wins), unreadable entries, unsafe permissions. Exits 1 when any\n" +
			"file is bad (or, with --strict-permissions, unsafe).",
		ArgsUsage: "PATH...",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "node-name", Value: hostname(), Usage: "node name used for static pod names"},
			&cli.BoolFlag{Name: "strict-permissions", Usage: "treat manifests a non-root user or group can write as errors"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return errors.New("usage: podkeeper validate PATH...")
			}
			bad := 0
			for _, arg := range c.Args().Slice() {
				files, err := validatePath(arg, c.String("node-name"), c.Bool("strict-permissions"))
				if err != nil {
					fmt.Fprintf(c.App.ErrWriter, "%s: %v\n", arg, err)
					bad++
					continue
				}
				for _, f := range files {
					if f.State == watcher.StateError || f.State == watcher.StateConflict {
						bad++
					}
					printFileStatus(c.App.Writer, c.App.ErrWriter, f)
				}
			}
			if bad > 0 {
				return cli.Exit(fmt.Sprintf("%d bad file(s)", bad), 1)
			}
			return nil
		},
	}
}

// validatePath judges a directory as the agent would, or one file on its own.
func validatePath(path, node string, strict bool) ([]watcher.FileStatus, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		return watcher.ScanDir(path, node, watcher.WithLogger(quiet), watcher.WithStrictPermissions(strict)).Files, nil
	}
	st := watcher.FileStatus{Path: path, State: watcher.StateOK}
	if !fi.Mode().IsRegular() {
		st.State, st.Messages = watcher.StateError, []string{"not a regular file"}
		return []watcher.FileStatus{st}, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	objs, err := manifests.Decode(path, data, node)
	if err != nil {
		st.State = watcher.StateError
		var fe *manifests.FileError
		if errors.As(err, &fe) {
			for _, p := range fe.Problems {
				st.Messages = append(st.Messages, p.String())
			}
		} else {
			st.Messages = []string{err.Error()}
		}
		return []watcher.FileStatus{st}, nil
	}
	for _, p := range objs.Pods {
		st.Declared = append(st.Declared, "Pod "+p.Namespace+"/"+p.Name)
	}
	for _, cm := range objs.ConfigMaps {
		st.Declared = append(st.Declared, "ConfigMap "+cm.Namespace+"/"+cm.Name)
	}
	for _, s := range objs.Secrets {
		st.Declared = append(st.Declared, "Secret "+s.Namespace+"/"+s.Name)
	}
	return []watcher.FileStatus{st}, nil
}

// printFileStatus prints one file as `validate` reports it: ok lines to out, problems to errOut.
func printFileStatus(out, errOut io.Writer, f watcher.FileStatus) {
	for _, w := range f.Warnings {
		fmt.Fprintf(errOut, "warning: %s\n", w)
	}
	switch f.State {
	case watcher.StateOK:
		what := "nothing"
		if len(f.Declared) > 0 {
			what = strings.Join(f.Declared, ", ")
		}
		fmt.Fprintf(out, "%s: ok: %s\n", f.Path, what)
	case watcher.StateIgnored:
		fmt.Fprintf(out, "%s: ignored: %s\n", f.Path, strings.Join(f.Messages, "; "))
	default:
		fmt.Fprintf(errOut, "%s: %s:\n", f.Path, f.State)
		for _, m := range f.Messages {
			fmt.Fprintf(errOut, "  %s\n", m)
		}
	}
}

func getManifestsCommand() *cli.Command {
	return &cli.Command{
		Name:    "manifests",
		Aliases: []string{"manifest"},
		Usage:   "list the manifest directory's files: FILE STATE DECLARED MESSAGE",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "json, or wide (every message on its own line)"},
		},
		Action: func(c *cli.Context) error {
			files, err := client(c).Manifests(c.Context)
			if err != nil {
				return err
			}
			switch o := c.String("output"); o {
			case "json":
				enc := json.NewEncoder(c.App.Writer)
				enc.SetIndent("", "  ")
				if files == nil {
					files = []api.ManifestFile{}
				}
				return enc.Encode(files)
			case "", "wide":
				if len(files) == 0 {
					fmt.Fprintln(c.App.ErrWriter, "No manifest files.")
					return nil
				}
				printManifestTable(c.App.Writer, files, o == "wide")
				return nil
			default:
				return fmt.Errorf("unknown output format %q (want json or wide)", o)
			}
		},
	}
}

// printManifestTable prints FILE STATE DECLARED MESSAGE; the message column holds the first
// message (and "+N more"), or every message on its own line with wide.
func printManifestTable(w io.Writer, files []api.ManifestFile, wide bool) {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	defer tw.Flush()
	fmt.Fprintln(tw, "FILE\tSTATE\tDECLARED\tMESSAGE")
	for _, f := range files {
		state := string(f.State)
		if f.KeptLastGood {
			state += " (kept last good)"
		}
		if len(f.Warnings) > 0 {
			state += " (unsafe permissions)"
		}
		declared := strings.Join(f.Declared, ",")
		if declared == "" {
			declared = "<none>"
		}
		msgs := append(append([]string(nil), f.Messages...), f.Warnings...)
		first := ""
		if len(msgs) > 0 {
			first = oneLine(msgs[0])
		}
		if !wide && len(msgs) > 1 {
			first += fmt.Sprintf(" (+%d more)", len(msgs)-1)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", filepath.Base(f.Path), state, declared, first)
		if wide {
			for _, m := range msgs[min(1, len(msgs)):] {
				fmt.Fprintf(tw, "\t\t\t%s\n", oneLine(m))
			}
		}
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
