package watcher

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/podkeeper/podkeeper/internal/atomicfile"
	"github.com/podkeeper/podkeeper/manifests"
)

// Last good content on disk: a file that decoded fine has its content copied to the last-good
// directory (WithLastGoodDir). When the agent starts and finds a file rejected, it decodes that
// copy instead, so a pod whose manifest was broken while the agent was down keeps its last good
// spec (and its worker: crashes are restarted) instead of being held unmanaged. The kubelet keeps
// nothing and, on restart, drops such a pod.
//
// The copy is keyed by the manifest's path, written atomically with mode 0600 (manifests may hold
// Secrets), removed when the file is removed, and copies of paths gone at the first scan are pruned.

// WithLastGoodDir keeps a copy of every manifest's last good content in dir (created 0700).
// Without it, last good content lives in memory only.
func WithLastGoodDir(dir string) DirOption {
	return func(s *DirSource) { s.lastGoodDir = dir }
}

func lastGoodName(path string) string {
	sum := sha256.Sum256([]byte(path))
	return hex.EncodeToString(sum[:16]) + ".yaml"
}

// saveLastGood stores data as path's last good content. Errors are logged: the copy is a help
// across restarts, never a reason to refuse a good manifest.
func (r *dirRun) saveLastGood(path string, data []byte) {
	if r.lastGoodDir == "" {
		return
	}
	if err := writeLastGood(r.lastGoodDir, path, data); err != nil {
		r.log.Warn("cannot keep a copy of the last good manifest", "path", path, "err", err)
	}
}

func writeLastGood(dir, path string, data []byte) error {
	// The first line names the source, for a person looking at the directory.
	content := append([]byte(fmt.Sprintf("# last good content of %s\n", path)), data...)
	return atomicfile.Write(filepath.Join(dir, lastGoodName(path)), content)
}

// loadLastGood decodes path's stored copy, or returns nil when there is none or it does not
// decode (then it is removed).
func (r *dirRun) loadLastGood(path string) *manifests.Objects {
	if r.lastGoodDir == "" {
		return nil
	}
	file := filepath.Join(r.lastGoodDir, lastGoodName(path))
	data, err := os.ReadFile(file)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			r.log.Warn("cannot read the last good copy of a manifest", "path", path, "copy", file, "err", err)
		}
		return nil
	}
	header := fmt.Sprintf("# last good content of %s\n", path)
	if !strings.HasPrefix(string(data), header) {
		return nil // another path's copy under a colliding name, or a torn file
	}
	objs, err := manifests.Decode(path, data[len(header):], r.nodeName)
	if err != nil {
		r.log.Warn("the last good copy of a manifest no longer decodes; dropping it", "path", path, "err", err)
		_ = os.Remove(file)
		return nil
	}
	return objs
}

// forgetLastGood removes path's copy (the manifest was removed).
func (r *dirRun) forgetLastGood(path string) {
	if r.lastGoodDir == "" {
		return
	}
	if err := os.Remove(filepath.Join(r.lastGoodDir, lastGoodName(path))); err != nil && !errors.Is(err, fs.ErrNotExist) {
		r.log.Warn("cannot remove the last good copy of a removed manifest", "path", path, "err", err)
	}
}

// pruneLastGood removes the copies of manifests that are not present (removed while the agent
// was down), so a later broken file of the same name never brings old content back.
func (r *dirRun) pruneLastGood(present map[string]bool) {
	if r.lastGoodDir == "" {
		return
	}
	keep := map[string]bool{}
	for p := range present {
		keep[lastGoodName(p)] = true
	}
	entries, err := os.ReadDir(r.lastGoodDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !keep[e.Name()] {
			_ = os.Remove(filepath.Join(r.lastGoodDir, e.Name()))
		}
	}
}
