// Package watcher provides sources of desired state: the set of static pods
// that should run on this node, delivered as full snapshots.
package watcher

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkeeper/podkeeper/manifests"
)

// Snapshot is the full desired state from one source: never a delta.
type Snapshot struct {
	Pods    []*corev1.Pod // every desired pod, sorted by namespace/name
	Errors  []FileError   // files that could not be used, sorted by path
	Ignored []string      // paths skipped by the name filter, sorted
}

// FileError reports a manifest file that could not be used (or not wholly).
type FileError struct {
	Path string
	Err  error
	// KeptLastGood is true when the file decoded fine before and its last
	// good pods are still in the snapshot.
	KeptLastGood bool
}

// Error formats the file error for logs: the path (unless Err already
// starts with it, as a *manifests.FileError does), then the error.
func (e FileError) Error() string {
	msg := errString(e.Err)
	if !strings.HasPrefix(msg, e.Path+": ") {
		msg = e.Path + ": " + msg
	}
	if e.KeptLastGood {
		msg += " (keeping the last good pods)"
	}
	return msg
}

// Unwrap returns the underlying error.
func (e FileError) Unwrap() error { return e.Err }

// Source delivers desired state. Run sends a full snapshot first, then a new full snapshot on every
// change, until ctx is done; it returns ctx.Err() then, or an error if it cannot run at all.
// It never closes out. Snapshots are fresh values the receiver may keep.
type Source interface {
	Run(ctx context.Context, out chan<- Snapshot) error
}

// fileResult is what one manifest file contributes before duplicates
// across files are resolved.
type fileResult struct {
	path string
	pods []*corev1.Pod // pods to run (the last good ones when kept)
	err  error         // why the file's current content is not used, if so
	kept bool          // pods are the last good ones despite err
}

// podKey is the full name of a pod: namespace/name.
func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// assemble builds a snapshot from per-file results. Results are taken in
// path order; when two files define the same pod, the file that sorts first
// wins and the other file gets an error naming the winner (its other pods
// are kept). Pods are deep-copied so the snapshot shares nothing with the
// caller's cache.
func assemble(results []fileResult, ignored []string) Snapshot {
	results = slices.Clone(results)
	sort.Slice(results, func(i, j int) bool { return results[i].path < results[j].path })

	var snap Snapshot
	owner := map[string]string{} // pod key -> path of the file that defines it
	for _, r := range results {
		var dups []string
		for _, p := range r.pods {
			k := podKey(p)
			if winner, taken := owner[k]; taken {
				dups = append(dups, fmt.Sprintf("pod %s is already defined in %s, which wins", k, winner))
				continue
			}
			owner[k] = r.path
			snap.Pods = append(snap.Pods, p.DeepCopy())
		}
		err := r.err
		if len(dups) > 0 {
			dupErr := fmt.Errorf("duplicate pod names: %s", strings.Join(dups, "; "))
			if err != nil {
				err = fmt.Errorf("%w; %w", err, dupErr)
			} else {
				err = dupErr
			}
		}
		if err != nil {
			snap.Errors = append(snap.Errors, FileError{Path: r.path, Err: err, KeptLastGood: r.kept})
		}
	}
	sort.Slice(snap.Pods, func(i, j int) bool { return podKey(snap.Pods[i]) < podKey(snap.Pods[j]) })
	snap.Ignored = slices.Sorted(slices.Values(ignored))
	return snap
}

// sameState reports whether two snapshots describe the same desired state:
// the same pods (by name, UID and manifest path; the UID covers content)
// and the same errors. Ignored is informational and not compared.
func sameState(a, b Snapshot) bool {
	if len(a.Pods) != len(b.Pods) || len(a.Errors) != len(b.Errors) {
		return false
	}
	for i := range a.Pods {
		pa, pb := a.Pods[i], b.Pods[i]
		if podKey(pa) != podKey(pb) || pa.UID != pb.UID ||
			pa.Annotations[manifests.AnnotationManifestPath] != pb.Annotations[manifests.AnnotationManifestPath] {
			return false
		}
	}
	for i := range a.Errors {
		ea, eb := a.Errors[i], b.Errors[i]
		if ea.Path != eb.Path || ea.KeptLastGood != eb.KeptLastGood || errString(ea.Err) != errString(eb.Err) {
			return false
		}
	}
	return true
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
