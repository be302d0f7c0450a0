package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/containerd/containerd/v2/core/leases"
	"github.com/containerd/containerd/v2/core/mount"
	"github.com/containerd/errdefs"
	"github.com/opencontainers/image-spec/identity"
	corev1 "k8s.io/api/core/v1"
)

// Image volumes (volumes[].image, the kubelet's ImageVolume, GA since 1.36): the files of an OCI
// image, its layers merged as for a container's root, mounted read-only into the containers that
// mount the volume. The image is made present by the worker (EnsureImage, the volume's
// pullPolicy) before the container starts; here a read-only view snapshot of it is made, kept by
// a containerd lease of its own (containerd's garbage collector would otherwise take a snapshot no
// container owns), and mounted at <pod>/volumes/image/<name>. All containers of the pod share
// that mount; the pod's removal unmounts it and deletes the snapshot and its lease.

const volImage = "image"

// imageVolumeKey names the view snapshot and the lease of pod uid's image volume name.
func imageVolumeKey(uid, name string) string { return imageVolumePrefix + uid + "." + name }

const imageVolumePrefix = "podkeeper-image-volume."

// mountedAt reports whether something is mounted at dir (a bind mount of a directory of the
// same file system included, which a device comparison would miss).
func mountedAt(dir string) bool {
	mounts, err := readMountinfo()
	if err != nil {
		return false
	}
	for _, m := range mounts {
		if m.point == dir {
			return true
		}
	}
	return false
}

// mountImageVolume mounts image volume v of pod (its image already on the node and unpacked:
// EnsureImage) and returns the
// directory to bind, read-only. Idempotent: the mount is shared by the pod's containers and
// survives an agent restart; after a reboot the kept snapshot is mounted again.
func (r *Runtime) mountImageVolume(ctx context.Context, pod *corev1.Pod, v *corev1.Volume) (string, error) {
	dir := volumeDir(r.cfg.RootDir, string(pod.UID), volImage, v.Name)
	if mountedAt(dir) {
		return dir, nil
	}
	ref, err := NormalizeRef(v.Image.Reference)
	if err != nil {
		return "", fmt.Errorf("image volume %q: %w", v.Name, err)
	}
	ctx = r.ctx(ctx)
	img, err := r.client.GetImage(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("image volume %q: image %s: %w", v.Name, ref, err)
	}
	diffIDs, err := img.RootFS(ctx)
	if err != nil {
		return "", fmt.Errorf("image volume %q: layers of %s: %w", v.Name, ref, err)
	}
	key := imageVolumeKey(string(pod.UID), v.Name)
	if _, err := r.client.LeasesService().Create(ctx, leases.WithID(key), leases.WithLabel("podkeeper.io/pod-uid", string(pod.UID))); err != nil && !errdefs.IsAlreadyExists(err) {
		return "", fmt.Errorf("image volume %q: lease: %w", v.Name, err)
	}
	lctx := leases.WithLease(ctx, key)
	sn := r.client.SnapshotService(r.cfg.Snapshotter)
	mounts, err := sn.View(lctx, key, identity.ChainID(diffIDs).String())
	if errdefs.IsAlreadyExists(err) {
		mounts, err = sn.Mounts(lctx, key)
	}
	if err != nil {
		return "", fmt.Errorf("image volume %q: snapshot of %s: %w", v.Name, ref, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("image volume %q: %w", v.Name, err)
	}
	for i := range mounts { // read-only whatever the snapshotter gave (a view is)
		if !slices.Contains(mounts[i].Options, "ro") {
			mounts[i].Options = append(mounts[i].Options, "ro")
		}
	}
	if err := mount.All(mounts, dir); err != nil {
		return "", fmt.Errorf("image volume %q: mount %s: %w", v.Name, ref, err)
	}
	return dir, nil
}

// releaseImageVolumes deletes the view snapshots and leases of pod uid's image volumes (their
// mounts are gone: RemovePodFiles unmounted everything under the pod's directory first).
func (r *Runtime) releaseImageVolumes(uid string) error {
	ctx, cancel := context.WithTimeout(r.ctx(context.Background()), 30*time.Second)
	defer cancel()
	ls := r.client.LeasesService()
	all, err := ls.List(ctx, `labels."podkeeper.io/pod-uid"==`+strconv.Quote(uid))
	if err != nil {
		return fmt.Errorf("image volumes: list leases: %w", err)
	}
	sn := r.client.SnapshotService(r.cfg.Snapshotter)
	var errs []error
	for _, l := range all {
		if !strings.HasPrefix(l.ID, imageVolumePrefix) {
			continue
		}
		if err := sn.Remove(ctx, l.ID); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove snapshot %s: %w", l.ID, err))
			continue
		}
		if err := ls.Delete(ctx, l, leases.SynchronousDelete); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete lease %s: %w", l.ID, err))
		}
	}
	return errors.Join(errs...)
}
