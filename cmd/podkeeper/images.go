package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/podkeeper/podkeeper/podrunner"
)

const (
	defaultRegistryConfigDir = "/etc/podkeeper/certs.d"
	defaultDockerConfig      = "/etc/podkeeper/docker-config.json"
)

func registryFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "registry-config-dir", Value: defaultRegistryConfigDir, Usage: "registry hosts in containerd's hosts.toml layout (<dir>/<host>/hosts.toml)"},
		&cli.StringFlag{Name: "docker-config", Value: defaultDockerConfig, Usage: "docker config.json with registry credentials"},
	}
}

func imagePullCommand(flags []cli.Flag) *cli.Command {
	return &cli.Command{
		Name:      "pull",
		Usage:     "pull an image from its registry (a progress bar per layer on a terminal)",
		ArgsUsage: "REF",
		Flags:     append(append([]cli.Flag(nil), flags...), registryFlags()...),
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return errors.New("usage: podkeeper image pull REF")
			}
			rt, err := dialImages(c)
			if err != nil {
				return err
			}
			defer rt.Close()
			out := c.App.Writer
			tty := false
			if f, ok := out.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
				tty = true
			}
			pr := &progressPrinter{w: out, tty: tty}
			ref := c.Args().First()
			res, err := rt.Pull(c.Context, ref, podrunner.PullOptions{Progress: pr.update})
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "pulled %s (%s) in %s, %s\n", res.Ref, shortID(res.ID), res.Duration.Round(time.Millisecond), humanBytes(res.Size))
			return nil
		},
	}
}

func imageRmCommand(flags []cli.Flag) *cli.Command {
	return &cli.Command{
		Name:      "rm",
		Aliases:   []string{"remove"},
		Usage:     "remove images (their content goes once no container uses it)",
		ArgsUsage: "REF...",
		Flags:     flags,
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return errors.New("usage: podkeeper image rm REF...")
			}
			rt, err := dialImages(c)
			if err != nil {
				return err
			}
			defer rt.Close()
			var errs []error
			for _, ref := range c.Args().Slice() {
				name, err := rt.RemoveImage(c.Context, ref)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				fmt.Fprintf(c.App.Writer, "removed %s\n", name)
			}
			return errors.Join(errs...)
		},
	}
}

func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// progressPrinter shows a pull: on a terminal one bar per blob, redrawn in place; otherwise a
// plain line when a blob starts and when it is done.
type progressPrinter struct {
	w     io.Writer
	tty   bool
	mu    sync.Mutex
	drawn int             // lines drawn last time (tty)
	state map[string]bool // digest -> done, as last printed (plain)
}

func (p *progressPrinter) update(pp podrunner.PullProgress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		if p.drawn > 0 {
			fmt.Fprintf(p.w, "\x1b[%dA", p.drawn)
		}
		for _, b := range pp.Blobs {
			fmt.Fprintf(p.w, "\x1b[2K%s\n", progressLine(b, 30))
		}
		p.drawn = len(pp.Blobs)
		return
	}
	if p.state == nil {
		p.state = map[string]bool{}
	}
	for _, b := range pp.Blobs {
		done, seen := p.state[b.Digest]
		switch {
		case !seen && !b.Done:
			fmt.Fprintf(p.w, "%s: downloading %s\n", shortID(b.Digest), humanBytes(b.Total))
		case b.Done && !done:
			fmt.Fprintf(p.w, "%s: done %s\n", shortID(b.Digest), humanBytes(b.Total))
		default:
			continue
		}
		p.state[b.Digest] = b.Done
	}
}

// progressLine renders one blob: "abcdef012345 [=======>      ] 1.2MiB/3.4MiB".
func progressLine(b podrunner.BlobProgress, width int) string {
	frac := 0.0
	if b.Total > 0 {
		frac = float64(b.Offset) / float64(b.Total)
	}
	if b.Done {
		frac = 1
	}
	frac = min(max(frac, 0), 1)
	n := int(frac * float64(width))
	bar := strings.Repeat("=", n)
	if n < width {
		bar += ">" + strings.Repeat(" ", width-n-1)
	}
	state := fmt.Sprintf("%s/%s", humanBytes(b.Offset), humanBytes(b.Total))
	if b.Done {
		state = "done " + humanBytes(b.Total)
	}
	return fmt.Sprintf("%s [%s] %s", shortID(b.Digest), bar, state)
}
