package runtime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Safe subPath mounts, as the kubelet makes them. A subPath (or an expanded subPathExpr) names a
// place inside a volume that the pod's containers may write to: a container can leave a
// symlink there ("ln -s / /data/x") for a later mount of subPath x to follow out of the volume
// onto the host (CVE-2017-1002101). So the subPath is resolved with openat2(RESOLVE_BENEATH):
// symlinks are followed only while they stay inside the volume; what it names is then
// bind-mounted, through its file descriptor, onto a path podkeeper owns:
//
//	<root>/pods/<uid>/volume-subpaths/<volume>/<container>/<index of the mount>
//
// and that path is what runc mounts into the container. A symlink swapped in after the check
// cannot redirect it: the bind mount holds the directory (or file) that was checked.
// RemovePodFiles unmounts them with everything else under the pod's directory.

// resolveBeneath is openat2's resolution for a subPath: never out of the volume, never through
// /proc's magic links.
const resolveBeneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS

// subPathMount resolves sub inside the volume at src (creating missing directories, as the
// kubelet does), bind-mounts it onto target and returns target. A subPath that leaves the volume
// (by "..", an absolute path or a symlink pointing out) is an error.
func subPathMount(src, sub, target string) (string, error) {
	if err := checkRelPath(sub); err != nil {
		return "", fmt.Errorf("subPath: %w", err)
	}
	vol, err := unix.Open(src, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("subPath %q: open volume: %w", sub, err)
	}
	defer unix.Close(vol)
	var vst unix.Stat_t
	if err := unix.Fstat(vol, &vst); err != nil {
		return "", fmt.Errorf("subPath %q: volume: %w", sub, err)
	}
	fd, err := openBeneath(vol, sub, true, vst.Mode&0o7777)
	if err != nil {
		return "", fmt.Errorf("subPath %q: %w", sub, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", fmt.Errorf("subPath %q: %w", sub, err)
	}
	// A container's earlier instance left its mount there (a bind mount on the same file system
	// is no device change, so ask the kernel): off with it (and anything stacked), then anew.
	for i := 0; i < 100; i++ {
		if err := unix.Unmount(target, unix.MNT_DETACH); err != nil {
			if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
				return "", fmt.Errorf("subPath %q: unmount the old %s: %w", sub, target, err)
			}
			break
		}
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return "", fmt.Errorf("subPath %q: %w", sub, err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		err = os.Mkdir(target, 0o750)
	} else {
		var f *os.File
		if f, err = os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o640); err == nil {
			err = f.Close()
		}
	}
	if err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("subPath %q: mount point: %w", sub, err)
	}
	if err := unix.Mount("/proc/self/fd/"+strconv.Itoa(fd), target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return "", fmt.Errorf("subPath %q: bind mount: %w", sub, err)
	}
	return target, nil
}

// openBeneath opens path (relative) under the directory dirfd as an O_PATH descriptor without
// leaving it; with mkdir, missing directories on the way (and the last component) are created
// with mode perm (the kubelet gives them its volume root's).
func openBeneath(dirfd int, path string, mkdir bool, perm uint32) (int, error) {
	how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: resolveBeneath}
	fd, err := unix.Openat2(dirfd, path, how)
	if err == nil || !mkdir || !errors.Is(err, unix.ENOENT) {
		if errors.Is(err, unix.EXDEV) {
			err = fmt.Errorf("it leads out of the volume (a symlink?)")
		}
		return fd, err
	}
	// Create what is missing, one component at a time, each under a parent opened beneath the
	// volume (never by a path a container could redirect in between).
	parts := strings.Split(filepath.Clean(path), "/")
	cur, err := unix.Dup(dirfd)
	if err != nil {
		return -1, err
	}
	for i, p := range parts {
		next, err := unix.Openat2(dirfd, strings.Join(parts[:i+1], "/"), how)
		if errors.Is(err, unix.ENOENT) {
			made := unix.Mkdirat(cur, p, 0o700)
			if made != nil && !errors.Is(made, unix.EEXIST) {
				unix.Close(cur)
				return -1, made
			}
			next, err = unix.Openat2(dirfd, strings.Join(parts[:i+1], "/"), how)
			if made == nil && err == nil {
				// The mode, past the umask, on what was opened beneath the volume (never by a
				// path a container could have swapped for a symlink in between).
				err = unix.Chmod("/proc/self/fd/"+strconv.Itoa(next), perm)
				if err != nil {
					unix.Close(next)
				}
			}
		}
		unix.Close(cur)
		if err != nil {
			if errors.Is(err, unix.EXDEV) {
				err = fmt.Errorf("it leads out of the volume (a symlink?)")
			}
			return -1, err
		}
		cur = next
	}
	return cur, nil
}

// subPathTarget is where subPath mount number idx of container c of pod uid's volume vol is
// bind-mounted for runc (podkeeper owns it; RemovePodFiles unmounts it).
func subPathTarget(root, uid, vol, c string, idx int) string {
	return filepath.Join(podDir(root, uid), "volume-subpaths", vol, c, strconv.Itoa(idx))
}

// expandSubPathExpr expands $(VAR) in a subPathExpr from the container's environment, as the
// kubelet does: a variable that is missing or empty is an error.
func expandSubPathExpr(expr string, vars map[string]string) (string, error) {
	missing := map[string]bool{}
	probe := map[string]string{}
	for k, v := range vars {
		if v != "" {
			probe[k] = v
		}
	}
	out := ExpandEnv(expr, probe)
	// ExpandEnv leaves an unknown $(VAR) as written: find those.
	for i := 0; i+1 < len(expr); i++ {
		if expr[i] == '$' && expr[i+1] == '$' {
			i++
			continue
		}
		if expr[i] == '$' && expr[i+1] == '(' {
			if end := strings.IndexByte(expr[i+2:], ')'); end >= 0 {
				if name := expr[i+2 : i+2+end]; probe[name] == "" {
					missing[name] = true
				}
				i += 2 + end
			}
		}
	}
	if len(missing) > 0 {
		var names []string
		for n := range missing {
			names = append(names, n)
		}
		sort.Strings(names)
		return "", fmt.Errorf("missing value for %s", strings.Join(names, ", "))
	}
	return out, nil
}
