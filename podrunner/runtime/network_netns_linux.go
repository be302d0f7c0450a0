package runtime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"

	"golang.org/x/sys/unix"
)

// pinNewNetns creates a new network namespace and pins it by bind-mounting it on path (a new
// empty file), so it lives on without any process in it until removePinnedNetns.
//
// One locked OS thread unshares itself into the new namespace, pins it and switches back. If
// switching back fails the thread stays locked, and the Go runtime discards it when the goroutine
// ends, so no other goroutine ever runs in the pod's namespace. (Never simply discarding the
// thread: when it is the process's main thread Go keeps it parked instead, which would keep the
// namespace alive and make /proc/self/ns/net name the pod's namespace.)
func pinNewNetns(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return err
	}
	f.Close()
	errc := make(chan error, 1)
	go func() {
		goruntime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			goruntime.UnlockOSThread()
			errc <- fmt.Errorf("open own network namespace: %w", err)
			return
		}
		defer unix.Close(orig)
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			goruntime.UnlockOSThread()
			errc <- fmt.Errorf("unshare network namespace: %w", err)
			return
		}
		mountErr := unix.Mount("/proc/thread-self/ns/net", path, "none", unix.MS_BIND, "")
		if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
			// Leave the thread locked: it dies with this goroutine.
			errc <- fmt.Errorf("return to own network namespace: %w", err)
			return
		}
		goruntime.UnlockOSThread()
		if mountErr != nil {
			mountErr = fmt.Errorf("pin network namespace on %s: %w", path, mountErr)
		}
		errc <- mountErr
	}()
	if err := <-errc; err != nil {
		_ = unix.Unmount(path, unix.MNT_DETACH)
		_ = os.Remove(path)
		return err
	}
	return nil
}

// removePinnedNetns unmounts and deletes a pinned namespace file. Missing or already unmounted
// files are fine.
func removePinnedNetns(path string) error {
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount: %w", err)
	}
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

// isNetns reports whether path is a (pinned) network namespace.
func isNetns(path string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return false
	}
	return st.Type == unix.NSFS_MAGIC
}
