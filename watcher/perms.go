package watcher

import (
	"fmt"
	"io/fs"
	"os"
	"slices"
	"syscall"
)

// unsafeWriters says who other than root can write a file or directory with this mode and
// owner: "" when nobody can. Whoever can write a manifest can run a privileged pod.
func unsafeWriters(mode fs.FileMode, uid, gid uint32) string {
	perm := mode.Perm()
	switch {
	case perm&0o002 != 0:
		return "writable by every user"
	case uid != 0 && perm&0o200 != 0:
		return fmt.Sprintf("owned and writable by uid %d (not root)", uid)
	case gid != 0 && perm&0o020 != 0:
		return fmt.Sprintf("writable by group gid %d (not root)", gid)
	}
	return ""
}

// ownerOf returns a file's owner uid and gid (0, 0 when the platform does not say).
func ownerOf(info fs.FileInfo) (uint32, uint32) {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return st.Uid, st.Gid
	}
	return 0, 0
}

// checkDir warns loudly (once per change) when the manifest directory is writable by a non-root
// user or group, and returns the problem ("" when safe).
func (r *dirRun) checkDir() string {
	info, err := os.Stat(r.dir)
	if err != nil {
		return ""
	}
	uid, gid := ownerOf(info)
	why := unsafeWriters(info.Mode(), uid, gid)
	if why != "" {
		why = fmt.Sprintf("manifest directory %s is %s (mode %04o): whoever can write there can run a privileged pod", r.dir, why, info.Mode().Perm())
	}
	if why != r.dirWarning {
		if why != "" {
			r.log.Warn("UNSAFE PERMISSIONS: "+why, "strict", r.strictPerms)
		} else if r.dirWarning != "" {
			r.log.Info("manifest directory permissions are safe again")
		}
		r.dirWarning = why
	}
	return why
}

// checkFile returns the permission warnings of one manifest (info follows symlinks), logging
// them loudly when they change from prev.
func (r *dirRun) checkFile(path string, info fs.FileInfo, prev []string, dirUnsafe string) []string {
	var out []string
	uid, gid := ownerOf(info)
	if why := unsafeWriters(info.Mode(), uid, gid); why != "" {
		out = append(out, fmt.Sprintf("%s is %s (mode %04o): whoever can write it can run a privileged pod", path, why, info.Mode().Perm()))
	}
	if dirUnsafe != "" {
		out = append(out, dirUnsafe)
	}
	if !slices.Equal(out, prev) {
		for _, w := range out {
			r.log.Warn("UNSAFE PERMISSIONS: "+w, "path", path, "strict", r.strictPerms)
		}
	}
	return out
}
