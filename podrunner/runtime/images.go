package runtime

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	tasktypes "github.com/containerd/containerd/api/types/task"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkeeper/podkeeper/podrunner"
	"github.com/podkeeper/podkeeper/podrunner/metrics"
)

func processStatus(s tasktypes.Status) containerd.ProcessStatus {
	switch s {
	case tasktypes.Status_RUNNING:
		return containerd.Running
	case tasktypes.Status_CREATED:
		return containerd.Created
	case tasktypes.Status_STOPPED:
		return containerd.Stopped
	case tasktypes.Status_PAUSED:
		return containerd.Paused
	case tasktypes.Status_PAUSING:
		return containerd.Pausing
	}
	return containerd.Unknown
}

// NormalizeRef turns an image name as written in a pod ("busybox", "nginx:1.27") into the full
// reference containerd stores ("docker.io/library/busybox:latest").
func NormalizeRef(ref string) (string, error) {
	n, err := reference.ParseDockerRef(ref)
	if err != nil {
		return "", fmt.Errorf("invalid image reference %q: %w", ref, err)
	}
	return n.String(), nil
}

// EnsureImage implements podrunner.Runtime.
//
// Policies as the kubelet's: Never uses only what is on the node, IfNotPresent pulls when missing,
// Always pulls. Before any pull, tarballs dropped in <root-dir>/images are imported, so an
// air-gapped box works with IfNotPresent. Unlike the kubelet, a failed Always pull falls back to a
// local copy when there is one (with a warning): an offline edge box keeps running its `:latest`
// images instead of failing with ErrImagePull.
func (r *Runtime) EnsureImage(ctx context.Context, ref string, policy corev1.PullPolicy, opts podrunner.PullOptions) (podrunner.ImageResult, error) {
	ctx = r.ctx(ctx)
	full, err := NormalizeRef(ref)
	if err != nil {
		return podrunner.ImageResult{}, podrunner.InvalidImageName(ref, errors.Unwrap(err))
	}
	res := podrunner.ImageResult{Ref: full}
	img, err := r.client.GetImage(ctx, full)
	if err != nil && policy != corev1.PullAlways {
		r.images.scan(ctx)
		img, err = r.client.GetImage(ctx, full)
	}
	present := err == nil
	switch {
	case policy == corev1.PullNever && !present:
		return res, podrunner.ImageNeverPull(ref)
	case policy == corev1.PullAlways || !present:
		if opts.OnPull != nil {
			opts.OnPull()
		}
		start := time.Now()
		pulled, perr := r.pull(ctx, full, opts)
		metrics.ObserveImagePull(time.Since(start), perr)
		if perr != nil {
			if present && policy == corev1.PullAlways {
				res.Warning = fmt.Sprintf("pull of %s failed, using the copy on the node: %v", full, perr)
				break
			}
			return res, fmt.Errorf("ErrImagePull: failed to pull and unpack image %q: %w", full, perr)
		}
		img = pulled
		res.Pulled = true
		res.Duration = time.Since(start)
		if sz, err := img.Size(ctx); err == nil {
			res.Size = sz
		}
	}
	if ok, err := img.IsUnpacked(ctx, r.cfg.Snapshotter); err != nil || !ok {
		if err := img.Unpack(ctx, r.cfg.Snapshotter); err != nil {
			return res, fmt.Errorf("unpack %s: %w", full, err)
		}
	}
	res.ID = img.Target().Digest.String()
	return res, nil
}

// Pull fetches ref from its registry whatever is on the node (`podkeeper image pull`), with the
// node's registry configuration and credentials (and secrets, when given). Unlike EnsureImage
// it never falls back to a local copy: a failed pull is an error.
func (r *Runtime) Pull(ctx context.Context, ref string, opts podrunner.PullOptions) (podrunner.ImageResult, error) {
	ctx = r.ctx(ctx)
	full, err := NormalizeRef(ref)
	if err != nil {
		return podrunner.ImageResult{}, err
	}
	res := podrunner.ImageResult{Ref: full}
	start := time.Now()
	img, err := r.pull(ctx, full, opts)
	metrics.ObserveImagePull(time.Since(start), err)
	if err != nil {
		return res, fmt.Errorf("ErrImagePull: failed to pull and unpack image %q: %w", full, err)
	}
	res.Pulled, res.Duration, res.ID = true, time.Since(start), img.Target().Digest.String()
	if sz, err := img.Size(ctx); err == nil {
		res.Size = sz
	}
	return res, nil
}

// RemoveImage deletes an image by reference (short names are normalised). Its content is
// garbage-collected by containerd once nothing else uses it. Removing an image that is not
// there returns an error wrapping podrunner.ErrNotFound.
func (r *Runtime) RemoveImage(ctx context.Context, ref string) (string, error) {
	ctx = r.ctx(ctx)
	full, err := NormalizeRef(ref)
	if err != nil {
		return "", err
	}
	if err := r.client.ImageService().Delete(ctx, full, images.SynchronousDelete()); err != nil {
		if errdefs.IsNotFound(err) {
			return full, fmt.Errorf("image %s %w", full, podrunner.ErrNotFound)
		}
		return full, fmt.Errorf("remove image %s: %w", full, err)
	}
	return full, nil
}

// imageConfig reads the OCI image config (entrypoint, cmd, env, workdir).
func imageConfig(ctx context.Context, img containerd.Image) (ocispec.ImageConfig, error) {
	spec, err := img.Spec(ctx)
	if err != nil {
		return ocispec.ImageConfig{}, fmt.Errorf("read config of image %s: %w", img.Name(), err)
	}
	return spec.Config, nil
}

// ImportFile imports an OCI-layout or docker-archive tarball (optionally gzip-compressed) and
// unpacks the images it holds. It returns their names.
func (r *Runtime) ImportFile(ctx context.Context, path string) ([]string, error) {
	ctx = r.ctx(ctx)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("import %s: %w", path, err)
	}
	defer f.Close()
	var rd io.Reader = f
	if strings.HasSuffix(path, ".gz") || strings.HasSuffix(path, ".tgz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("import %s: %w", path, err)
		}
		defer gz.Close()
		rd = gz
	}
	imgs, err := r.client.Import(ctx, rd)
	if err != nil {
		return nil, fmt.Errorf("import %s: %w", path, err)
	}
	var names []string
	for _, im := range imgs {
		img := containerd.NewImage(r.client, im)
		if err := img.Unpack(ctx, r.cfg.Snapshotter); err != nil {
			return names, fmt.Errorf("unpack %s from %s: %w", im.Name, path, err)
		}
		names = append(names, im.Name)
	}
	return names, nil
}

// ImageInfo describes one image on the node.
type ImageInfo struct {
	Name      string
	ID        string
	Size      int64
	CreatedAt time.Time
}

// ListImages lists the images in podkeeper's namespace.
func (r *Runtime) ListImages(ctx context.Context) ([]ImageInfo, error) {
	ctx = r.ctx(ctx)
	imgs, err := r.client.ListImages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	out := make([]ImageInfo, 0, len(imgs))
	for _, img := range imgs {
		sz, _ := img.Size(ctx)
		out = append(out, ImageInfo{Name: img.Name(), ID: img.Target().Digest.String(), Size: sz, CreatedAt: img.Metadata().CreatedAt})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// ImportDir imports the tarballs in <root-dir>/images that were not imported yet by this process.
func (r *Runtime) ImportDir(ctx context.Context) { r.images.scan(ctx) }

// imageImporter imports image tarballs dropped into a directory, each version of a file once.
type imageImporter struct {
	r    *Runtime
	dir  string
	mu   sync.Mutex
	seen map[string]string // path -> size/mtime key of the version imported
}

func newImageImporter(r *Runtime, dir string) *imageImporter {
	return &imageImporter{r: r, dir: dir, seen: map[string]string{}}
}

// isImageTarball tells which names in the images directory are imported.
func isImageTarball(name string) bool {
	if strings.HasPrefix(name, ".") {
		return false
	}
	for _, s := range []string{".tar", ".tar.gz", ".tgz", ".oci"} {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

func (im *imageImporter) scan(ctx context.Context) {
	im.mu.Lock()
	defer im.mu.Unlock()
	entries, err := os.ReadDir(im.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() || !isImageTarball(e.Name()) {
			continue
		}
		p := filepath.Join(im.dir, e.Name())
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		key := fmt.Sprintf("%d/%d", fi.Size(), fi.ModTime().UnixNano())
		if im.seen[p] == key {
			continue
		}
		names, err := im.r.ImportFile(ctx, p)
		if err != nil {
			im.r.log.Warn("image import failed", "file", p, "err", err)
			if !errdefs.IsNotFound(err) {
				im.seen[p] = key // do not retry a bad file until it changes
			}
			continue
		}
		im.seen[p] = key
		im.r.log.Info("imported images", "file", p, "images", names)
	}
}
