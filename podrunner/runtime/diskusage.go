package runtime

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/containerd/errdefs"
)

// DiskUsage is what something holds on disk: bytes (of the blocks allocated) and inodes.
type DiskUsage struct {
	Bytes  int64
	Inodes int64
}

// Add returns the sum of u and o.
func (u DiskUsage) Add(o DiskUsage) DiskUsage {
	return DiskUsage{Bytes: u.Bytes + o.Bytes, Inodes: u.Inodes + o.Inodes}
}

// WritableLayerUsage is what container id has written to its root file system (its snapshot's
// own layer, as the snapshotter counts it). A container without a snapshot uses nothing.
func (r *Runtime) WritableLayerUsage(ctx context.Context, id string) (DiskUsage, error) {
	u, err := r.client.SnapshotService(r.cfg.Snapshotter).Usage(r.ctx(ctx), id)
	if errdefs.IsNotFound(err) {
		return DiskUsage{}, nil
	}
	if err != nil {
		return DiskUsage{}, fmt.Errorf("usage of snapshot %s: %w", id, err)
	}
	return DiskUsage{Bytes: u.Size, Inodes: u.Inodes}, nil
}

// EmptyDirUsage is what emptyDir volume name of pod uid holds; a volume not made yet holds
// nothing.
func (r *Runtime) EmptyDirUsage(uid, name string) (DiskUsage, error) {
	return DirUsage(volumeDir(r.cfg.RootDir, uid, volEmptyDir, name))
}

// RemoveEmptyDirs deletes pod uid's emptyDir volumes (a memory-backed one unmounted first), for a
// pod whose containers have all stopped and which is not to see their content again: an evicted
// pod (started again, it gets empty ones, as a new pod would). Nothing to remove is not an error.
func (r *Runtime) RemoveEmptyDirs(uid string) error {
	if uid == "" || strings.ContainsAny(uid, "/.") {
		return fmt.Errorf("bad pod uid %q", uid)
	}
	dir := filepath.Join(podDir(r.cfg.RootDir, uid), "volumes", volEmptyDir)
	if err := unmountUnder(dir); err != nil {
		return fmt.Errorf("remove emptyDir volumes: %w", err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove emptyDir volumes: %w", err)
	}
	return nil
}

// PodVolumesUsage is what pod uid's local volumes (emptyDir and the files podkeeper generates for
// it) hold under the root dir.
func (r *Runtime) PodVolumesUsage(uid string) (DiskUsage, error) {
	return dirUsage(podDir(r.cfg.RootDir, uid), filepath.Join(podDir(r.cfg.RootDir, uid), "volumes", volImage))
}

// DirUsage walks dir (staying on its file system) and counts the blocks and inodes of what is
// in it, dir included; a missing dir uses nothing. Hard links are counted once.
func DirUsage(dir string) (DiskUsage, error) { return dirUsage(dir, "") }

// dirUsage is DirUsage without what is below skip (image volumes: an image's files, mounted
// from containerd's snapshots, are not the pod's writes even on the same file system).
func dirUsage(dir, skip string) (DiskUsage, error) {
	var u DiskUsage
	root, err := os.Lstat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return u, nil
	}
	if err != nil {
		return u, err
	}
	rootDev := root.Sys().(*syscall.Stat_t).Dev
	seen := map[uint64]bool{}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if skip != "" && path == skip && d.IsDir() {
			return filepath.SkipDir
		}
		st := info.Sys().(*syscall.Stat_t)
		if st.Dev != rootDev {
			if d.IsDir() {
				return filepath.SkipDir // a mount (a tmpfs volume, a bind): not this file system
			}
			return nil
		}
		if st.Nlink > 1 && !d.IsDir() {
			if seen[st.Ino] {
				return nil
			}
			seen[st.Ino] = true
		}
		u.Inodes++
		u.Bytes += st.Blocks * 512
		return nil
	})
	if err != nil {
		return u, fmt.Errorf("disk usage of %s: %w", dir, err)
	}
	return u, nil
}
