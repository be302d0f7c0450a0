package podrunner

import (
	"sort"
	"time"
)

// Image garbage collection (pure), as the kubelet's: when the image file system is used above
// the high threshold (85%), remove unused images, oldest first, until usage is at the low
// threshold (80%). An image is never removed while a container (running or dead) uses it, while
// a manifest names it, or before it is MinAge (2 m) old.

// ImageGCPolicy are the thresholds of image GC.
type ImageGCPolicy struct {
	HighPercent int           // start above this usage; kubelet default 85
	LowPercent  int           // free down to this usage; kubelet default 80
	MinAge      time.Duration // never remove an image younger than this; kubelet default 2m
}

// DefaultImageGCPolicy is the kubelet's: 85% / 80%, 2 m minimum age.
var DefaultImageGCPolicy = ImageGCPolicy{HighPercent: 85, LowPercent: 80, MinAge: 2 * time.Minute}

// GCImage is one image on the node.
type GCImage struct {
	Name    string // full reference (docker.io/library/busybox:latest)
	ID      string // digest
	Size    int64
	Created time.Time // when it arrived on the node
}

// ImagesToRemove returns the names of the images to remove, oldest first, given the image file
// system's used and capacity bytes and the images in use (by name or ID: containers' images and
// the images the manifests name). Nothing when usage is at or below the high threshold.
func ImagesToRemove(p ImageGCPolicy, imgs []GCImage, inUse map[string]bool, used, capacity int64, now time.Time) []string {
	if capacity <= 0 || used*100 <= int64(p.HighPercent)*capacity {
		return nil
	}
	toFree := used - int64(p.LowPercent)*capacity/100
	cands := make([]GCImage, 0, len(imgs))
	for _, im := range imgs {
		if inUse[im.Name] || inUse[im.ID] || now.Sub(im.Created) < p.MinAge {
			continue
		}
		cands = append(cands, im)
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].Created.Before(cands[j].Created) })
	var out []string
	for _, im := range cands {
		if toFree <= 0 {
			break
		}
		out = append(out, im.Name)
		toFree -= im.Size
	}
	return out
}
