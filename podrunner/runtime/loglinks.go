package runtime

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Log links, as the kubelet makes them for log shippers that read /var/log/containers (the
// names carry the pod's identity): every container that starts gets the symlink
// <LogLinksDir>/<pod>_<namespace>_<container>-<container ID>.log to its log file, removed with
// the container. Links left dangling (their container removed while the agent was down, their
// log with it) are removed at the agent's start; only links into the agent's own LogDir are
// ever touched, so another kubelet's links in the same directory are left alone.

// maxFileName is the longest file name ext4 allows; the kubelet cuts a link's name to it.
const maxFileName = 255

// logLinkPath is the link of container id of pod namespace/pod, as the kubelet names it.
func logLinkPath(dir, pod, namespace, container, id string) string {
	const suffix = ".log"
	name := fmt.Sprintf("%s_%s_%s-%s", pod, namespace, container, id)
	if len(name) > maxFileName-len(suffix) {
		name = name[:maxFileName-len(suffix)]
	}
	return filepath.Join(dir, name+suffix)
}

// logLink is the link of container id (labels: its containerd labels) and the log it points
// at; ok is false when the agent makes no links or the container has no log (a sandbox).
func (r *Runtime) logLink(id string, labels map[string]string) (link, target string, ok bool) {
	target = labels[LabelLogPath]
	if r.cfg.LogLinksDir == "" || target == "" {
		return "", "", false
	}
	return logLinkPath(r.cfg.LogLinksDir, labels[LabelPodName], labels[LabelPodNamespace], labels[LabelContainerName], id), target, true
}

// linkLog makes the log link of the started container id. A failure is logged: the container
// runs all the same, as with the kubelet. (Connect made the links directory.)
func (r *Runtime) linkLog(id string, labels map[string]string) {
	link, target, ok := r.logLink(id, labels)
	if !ok {
		return
	}
	target, err := filepath.Abs(target)
	if err == nil {
		err = os.Symlink(target, link)
		if errors.Is(err, fs.ErrExist) { // left by a start interrupted after its link
			if old, rerr := os.Readlink(link); rerr == nil && old == target {
				err = nil
			}
		}
	}
	if err != nil {
		r.log.Warn("cannot make the container's log link", "container", id, "link", link, "err", err)
	}
}

// unlinkLog removes the log link of the removed container id.
func (r *Runtime) unlinkLog(id string, labels map[string]string) {
	link, _, ok := r.logLink(id, labels)
	if !ok {
		return
	}
	if err := os.Remove(link); err != nil && !errors.Is(err, fs.ErrNotExist) {
		r.log.Warn("cannot remove the container's log link", "container", id, "link", link, "err", err)
	}
}

// PruneLogLinks removes the *.log symlinks of linksDir that point into logDir at a file that is
// gone, and returns how many. Other files and links are left alone.
func PruneLogLinks(linksDir, logDir string) (int, error) {
	if linksDir == "" || logDir == "" {
		return 0, nil
	}
	links, err := filepath.Glob(filepath.Join(linksDir, "*.log"))
	if err != nil {
		return 0, err
	}
	abs, err := filepath.Abs(logDir)
	if err != nil {
		return 0, err
	}
	root := abs + string(filepath.Separator)
	n := 0
	var errs []error
	for _, l := range links {
		target, err := os.Readlink(l)
		if err != nil || !strings.HasPrefix(filepath.Clean(target), root) {
			continue // not a link, or not ours
		}
		if _, err := os.Stat(target); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := os.Remove(l); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}
