package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"
	"golang.org/x/sys/unix"

	"github.com/podkeeper/podkeeper/podrunner"
	"github.com/podkeeper/podkeeper/podrunner/runtime"
)

// imageGCFlags are the kubelet's image GC flags (settable from --config too).
func imageGCFlags() []cli.Flag {
	return []cli.Flag{
		altsrc.NewIntFlag(&cli.IntFlag{Name: "image-gc-high-threshold", Value: podrunner.DefaultImageGCPolicy.HighPercent, Usage: "image file system usage (percent) above which unused images are removed; 100: never"}),
		altsrc.NewIntFlag(&cli.IntFlag{Name: "image-gc-low-threshold", Value: podrunner.DefaultImageGCPolicy.LowPercent, Usage: "usage (percent) image GC frees down to"}),
		altsrc.NewDurationFlag(&cli.DurationFlag{Name: "image-minimum-gc-age", Value: podrunner.DefaultImageGCPolicy.MinAge, Usage: "never remove an image younger than this"}),
		altsrc.NewDurationFlag(&cli.DurationFlag{Name: "image-gc-interval", Value: 5 * time.Minute, Hidden: true, Usage: "how often image GC looks (for tests)"}),
	}
}

func imageGCPolicy(c *cli.Context) (podrunner.ImageGCPolicy, error) {
	p := podrunner.ImageGCPolicy{HighPercent: c.Int("image-gc-high-threshold"), LowPercent: c.Int("image-gc-low-threshold"), MinAge: c.Duration("image-minimum-gc-age")}
	if p.HighPercent < 0 || p.HighPercent > 100 || p.LowPercent < 0 || p.LowPercent > p.HighPercent {
		return p, fmt.Errorf("--image-gc-low-threshold %d / --image-gc-high-threshold %d: want 0 <= low <= high <= 100", p.LowPercent, p.HighPercent)
	}
	return p, nil
}

// imageGC removes unused images when the image file system (the one holding dir) is used above
// the policy's high threshold (podrunner.ImagesToRemove decides).
type imageGC struct {
	policy podrunner.ImageGCPolicy
	rt     *runtime.Runtime
	mgr    *podrunner.Manager
	dir    string
	log    *slog.Logger
	every  time.Duration // zero: 5 m
}

func (g *imageGC) run(ctx context.Context) error {
	var fs unix.Statfs_t
	if err := unix.Statfs(g.dir, &fs); err != nil {
		return fmt.Errorf("image gc: statfs %s: %w", g.dir, err)
	}
	capacity := int64(fs.Blocks) * int64(fs.Bsize)
	used := capacity - int64(fs.Bfree)*int64(fs.Bsize)
	if capacity <= 0 || used*100 <= int64(g.policy.HighPercent)*capacity {
		return nil
	}
	imgs, err := g.rt.ListImages(ctx)
	if err != nil {
		return fmt.Errorf("image gc: %w", err)
	}
	recs, err := g.rt.ListContainers(ctx, "")
	if err != nil {
		return fmt.Errorf("image gc: %w", err)
	}
	inUse := map[string]bool{}
	mark := func(ref string) {
		if ref == "" {
			return
		}
		inUse[ref] = true
		if full, err := runtime.NormalizeRef(ref); err == nil {
			inUse[full] = true
		}
	}
	for _, r := range recs {
		mark(r.Image)
		inUse[r.ImageID] = true
	}
	for _, p := range g.mgr.Pods() {
		for _, c := range p.Spec.InitContainers {
			mark(c.Image)
		}
		for _, c := range p.Spec.Containers {
			mark(c.Image)
		}
		for _, v := range p.Spec.Volumes {
			if v.Image != nil {
				mark(v.Image.Reference) // an image volume's view snapshot needs its image
			}
		}
	}
	var cands []podrunner.GCImage
	for _, im := range imgs {
		cands = append(cands, podrunner.GCImage{Name: im.Name, ID: im.ID, Size: im.Size, Created: im.CreatedAt})
	}
	for _, name := range podrunner.ImagesToRemove(g.policy, cands, inUse, used, capacity, time.Now()) {
		if _, err := g.rt.RemoveImage(ctx, name); err != nil {
			g.log.Warn("image gc: remove image", "image", name, "err", err)
			continue
		}
		g.log.Info("image gc: removed unused image", "image", name, "usedPercent", used*100/capacity)
	}
	return nil
}

// reclaim removes every unused image old enough, whatever the thresholds: the eviction loop's
// node-level reclaim under disk pressure, as the kubelet's.
func (g *imageGC) reclaim(ctx context.Context) error {
	all := *g
	all.policy.HighPercent, all.policy.LowPercent = 0, 0
	return all.run(ctx)
}

// loop runs image GC every 5 minutes, as the kubelet does.
func (g *imageGC) loop(ctx context.Context) {
	if g.every <= 0 {
		g.every = 5 * time.Minute
	}
	every(ctx, g.every, func() {
		if err := g.run(ctx); err != nil {
			g.log.Warn("image gc", "err", err)
		}
	})
}
