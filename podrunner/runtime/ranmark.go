package runtime

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// A container's task that started is marked so, for an agent that was down when the task went
// (its shim killed, a reboot): without the mark such a container looks like one never started
// and would be run again as the same instance (a restartPolicy Never container a second time).
// The mark is an empty file beside the instance's termination message file
// (<root-dir>/pods/<uid>/containers/<name>/<attempt>-ran), made as soon as the task's start
// returns: a file create costs the start nothing measurable and leaves no window in which a
// started container is unmarked (a containerd label, the mark's first form, had to be written a
// second later, off the start's path: containerd serialises its metadata writes, and a container
// that ended within that second, its agent down, was run again). The directory entries are made
// durable in the background a moment later (one fsync per directory after a burst of starts),
// for a reboot by power loss. The mark goes with the termination message file when the
// container is removed, and with the pod's directory.

// ranMarkSyncDelay gathers the directories of a burst of starts before they are synced.
const ranMarkSyncDelay = time.Second

// ranMarkSuffix replaces termMsgSuffix in the mark's name.
const ranMarkSuffix = "-ran"

// ranMarkPath is the mark of the instance whose labels are given, "" for one without a
// termination message file under root (a sandbox).
func ranMarkPath(root string, labels map[string]string) string {
	f := termMsgFile(root, labels)
	if !strings.HasSuffix(f, termMsgSuffix) {
		return ""
	}
	return strings.TrimSuffix(f, termMsgSuffix) + ranMarkSuffix
}

// markRan marks the container with labels, whose task has just started. Best effort: a mark
// that cannot be made leaves that container as one never started (logged).
func (r *Runtime) markRan(id string, labels map[string]string) {
	p := ranMarkPath(r.cfg.RootDir, labels)
	if p == "" {
		return
	}
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		r.log.Warn("cannot mark a started container; if its task is lost while the agent is down, it is run again", "id", id, "err", err)
		return
	}
	r.mu.Lock()
	r.ranPending = append(r.ranPending, filepath.Dir(p))
	r.mu.Unlock()
	select {
	case r.ranWake <- struct{}{}:
	default:
	}
}

// ranMarked reports whether the instance with labels, created at createdAt (zero: unknown), is
// marked as started. A mark older than the container is an earlier container's of the same name
// and does not count.
func ranMarked(root string, labels map[string]string, createdAt time.Time) bool {
	p := ranMarkPath(root, labels)
	if p == "" {
		return false
	}
	info, err := os.Stat(p)
	return err == nil && (createdAt.IsZero() || !info.ModTime().Before(createdAt))
}

// removeRanMark removes the mark of the instance with labels, if any.
func removeRanMark(root string, labels map[string]string) {
	if p := ranMarkPath(root, labels); p != "" {
		_ = os.Remove(p) // else it goes with the pod's directory
	}
}

// syncRanMarks makes the marks' directory entries durable, a burst at a time, until ctx ends.
func (r *Runtime) syncRanMarks(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.ranWake:
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(ranMarkSyncDelay):
		}
		r.mu.Lock()
		dirs := r.ranPending
		r.ranPending = nil
		r.mu.Unlock()
		done := map[string]bool{}
		for _, d := range dirs {
			if done[d] {
				continue
			}
			done[d] = true
			if err := syncDir(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
				r.log.Debug("sync the started marks", "dir", d, "err", err)
			}
		}
	}
}

// syncDir fsyncs directory d.
func syncDir(d string) error {
	f, err := os.Open(d)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
