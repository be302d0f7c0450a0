package runtime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// pinNewNetns creates a new network namespace with its loopback interface up and pins it by
// bind-mounting it on path (a new empty file), so it lives on without any process in it until
// removePinnedNs.
func pinNewNetns(path string) error {
	return pinNewNamespaces([]specs.LinuxNamespace{{Type: specs.NetworkNamespace, Path: path}}, "")
}

// pinNewNamespaces creates one new namespace of each pin's type (network, UTS, IPC) and pins it
// by bind-mounting it on the pin's path (a new empty file), so it lives on without any process in it until
// removePinnedNs. A new UTS namespace gets hostname (unless
// empty); a new network namespace gets its loopback interface up (what CNI's loopback plugin
// does, without a plugin exec: see podNetwork.load). All or nothing: on error no pin is left.
//
// One locked OS thread unshares itself into the new namespaces, pins them and switches back
// (inOtherNamespaces), as CRI-O's pinns does from its own process.
func pinNewNamespaces(pins []specs.LinuxNamespace, hostname string) error {
	made := 0 // pins[:made] have their files
	undo := func() {
		for _, p := range pins[:made] {
			_ = removePinnedNs(p.Path)
		}
	}
	kinds := make([]string, len(pins))
	flags := 0
	for i, p := range pins {
		kinds[i] = nsFile(p.Type)
		if nsFlags[kinds[i]] == 0 {
			return fmt.Errorf("pin a %s namespace: not a kind a thread can make", kinds[i])
		}
		flags |= nsFlags[kinds[i]]
		if err := os.MkdirAll(filepath.Dir(p.Path), 0o755); err != nil {
			undo()
			return err
		}
		f, err := os.OpenFile(p.Path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o444)
		if err != nil {
			undo()
			return err
		}
		f.Close()
		made++
	}
	err := inOtherNamespaces(kinds, func() error {
		if err := unix.Unshare(flags); err != nil {
			return fmt.Errorf("unshare %v namespaces: %w", kinds, err)
		}
		if hostname != "" && flags&unix.CLONE_NEWUTS != 0 {
			if err := unix.Sethostname([]byte(hostname)); err != nil {
				return fmt.Errorf("set hostname %q: %w", hostname, err)
			}
		}
		return nil
	}, func() error {
		if flags&unix.CLONE_NEWNET != 0 {
			if err := setLinkUp("lo"); err != nil {
				return fmt.Errorf("new network namespace: %w", err)
			}
		}
		for i, p := range pins {
			if err := unix.Mount("/proc/thread-self/ns/"+kinds[i], p.Path, "none", unix.MS_BIND, ""); err != nil {
				return fmt.Errorf("pin %s namespace on %s: %w", kinds[i], p.Path, err)
			}
		}
		return nil
	})
	if err != nil {
		undo()
		return err
	}
	return nil
}

// removePinnedNs unmounts and deletes a pinned namespace file (of any kind). Missing or already
// unmounted files are fine.
func removePinnedNs(path string) error {
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount: %w", err)
	}
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

// isNsFile reports whether path is a (pinned) namespace.
func isNsFile(path string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return false
	}
	return st.Type == unix.NSFS_MAGIC
}
