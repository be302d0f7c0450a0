// Package watcher provides sources of desired state: the set of static pods
// that should run on this node, delivered as full snapshots.
package watcher

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkeeper/podkeeper/manifests"
)

// Snapshot is the full desired state from one source: never a delta.
type Snapshot struct {
	Pods       []*corev1.Pod       // every desired pod, sorted by namespace/name
	ConfigMaps []*corev1.ConfigMap // for env, envFrom and volumes; sorted by namespace/name
	Secrets    []*corev1.Secret    // likewise
	Errors     []FileError         // files that could not be used, sorted by path
	Ignored    []string            // paths skipped by the name filter, sorted
	Files      []FileStatus        // every file of the directory and what became of it, sorted by path
	// Held lists pods (namespace/name) that a rejected file seems to declare (read leniently)
	// while no good content of it is known, as after an agent restart: a running pod of that
	// name must be kept, not treated as removed. Sorted; never a name of Pods.
	Held []string
}

// Config returns the snapshot's ConfigMaps and Secrets as a lookup (a podrunner.ConfigLookup).
func (s Snapshot) Config() *manifests.ConfigSet {
	return manifests.NewConfigSet(s.ConfigMaps, s.Secrets)
}

// FileState says what became of one file of the manifest directory.
type FileState string

const (
	StateOK       FileState = "ok"       // every object it declares is in use
	StateError    FileState = "error"    // its content (or the file itself) cannot be used
	StateConflict FileState = "conflict" // it decoded, but declares an object another file already declares
	StateIgnored  FileState = "ignored"  // not read: not a manifest name, a dotfile, a subdirectory
)

// FileStatus is one file of the manifest directory as the agent sees it (GET /manifests).
type FileStatus struct {
	Path  string    `json:"path"`
	State FileState `json:"state"`
	// Declared lists what the file's content (or, when KeptLastGood, its last good content)
	// declares: "Pod default/web-node1", "ConfigMap default/settings".
	Declared []string `json:"declared,omitempty"`
	// Messages say why State is error or conflict, or why the file is ignored.
	Messages []string `json:"messages,omitempty"`
	// KeptLastGood is true when the last good content is still in use despite the error.
	KeptLastGood bool `json:"keptLastGood,omitempty"`
	// Warnings are problems that do not stop the file from being used (e.g. permissions).
	Warnings []string `json:"warnings,omitempty"`
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
	path     string
	pods     []*corev1.Pod // pods to run (the last good ones when kept)
	cms      []*corev1.ConfigMap
	secrets  []*corev1.Secret
	err      error    // why the file's current content is not used, if so
	kept     bool     // objects are the last good ones despite err
	warnings []string // e.g. unsafe permissions
	held     []string // pod keys the rejected content seems to declare (only when !kept)
}

// podKey is the full name of a pod: namespace/name.
func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// assemble builds a snapshot from per-file results. Results are taken in
// path order; when two files define the same pod (or ConfigMap, or Secret),
// the file that sorts first wins and the other file gets a conflict error
// naming the winner (its other objects are kept). Pods of a file whose current
// content is rejected but whose last good pods are kept carry the error in
// manifests.AnnotationManifestError. Pods whose env reads ConfigMaps or Secrets
// get those folded into their identity (manifests.BindEnvConfig). Objects are
// deep-copied so the snapshot shares nothing with the caller's cache.
// ignored maps each ignored path to the reason.
func assemble(results []fileResult, ignored map[string]string) Snapshot {
	results = slices.Clone(results)
	sort.Slice(results, func(i, j int) bool { return results[i].path < results[j].path })

	var snap Snapshot
	owner := map[string]string{} // kind namespace/name -> path of the file that defines it
	claim := func(kind, key, path string) (string, bool) {
		k := kind + " " + key
		if winner, taken := owner[k]; taken {
			return winner, false
		}
		owner[k] = path
		return "", true
	}
	for _, r := range results {
		st := FileStatus{Path: r.path, State: StateOK, KeptLastGood: r.kept, Warnings: r.warnings}
		var dups []string
		conflict := func(kind, key, winner string) {
			dups = append(dups, fmt.Sprintf("%s %s is already defined in %s, which wins", kind, key, winner))
		}
		for _, p := range r.pods {
			k := podKey(p)
			st.Declared = append(st.Declared, "Pod "+k)
			if winner, ok := claim("pod", k, r.path); !ok {
				conflict("pod", k, winner)
				continue
			}
			q := p.DeepCopy()
			if r.kept && r.err != nil {
				if q.Annotations == nil {
					q.Annotations = map[string]string{}
				}
				q.Annotations[manifests.AnnotationManifestError] = FileError{Path: r.path, Err: r.err, KeptLastGood: true}.Error()
			}
			snap.Pods = append(snap.Pods, q)
		}
		for _, cm := range r.cms {
			k := cm.Namespace + "/" + cm.Name
			st.Declared = append(st.Declared, "ConfigMap "+k)
			if winner, ok := claim("configmap", k, r.path); !ok {
				conflict("configmap", k, winner)
				continue
			}
			snap.ConfigMaps = append(snap.ConfigMaps, cm.DeepCopy())
		}
		for _, sec := range r.secrets {
			k := sec.Namespace + "/" + sec.Name
			st.Declared = append(st.Declared, "Secret "+k)
			if winner, ok := claim("secret", k, r.path); !ok {
				conflict("secret", k, winner)
				continue
			}
			snap.Secrets = append(snap.Secrets, sec.DeepCopy())
		}
		err := r.err
		if len(dups) > 0 {
			dupErr := fmt.Errorf("conflict: %s", strings.Join(dups, "; "))
			if err != nil {
				err = fmt.Errorf("%w; %w", err, dupErr)
			} else {
				err = dupErr
				st.State = StateConflict
			}
		}
		if r.err != nil {
			st.State = StateError
		}
		if err != nil {
			fe := FileError{Path: r.path, Err: err, KeptLastGood: r.kept}
			snap.Errors = append(snap.Errors, fe)
			st.Messages = fileMessages(r.path, err)
		}
		snap.Files = append(snap.Files, st)
	}
	heldSet := map[string]bool{}
	for _, r := range results {
		if r.err == nil || r.kept {
			continue
		}
		for _, k := range r.held {
			if _, declared := owner["pod "+k]; !declared {
				heldSet[k] = true
			}
		}
	}
	for k := range heldSet {
		snap.Held = append(snap.Held, k)
	}
	sort.Strings(snap.Held)
	cfg := manifests.NewConfigSet(snap.ConfigMaps, snap.Secrets)
	for _, p := range snap.Pods {
		manifests.BindEnvConfig(p, cfg)
	}
	sort.Slice(snap.Pods, func(i, j int) bool { return podKey(snap.Pods[i]) < podKey(snap.Pods[j]) })
	sortMeta(snap.ConfigMaps, func(c *corev1.ConfigMap) string { return c.Namespace + "/" + c.Name })
	sortMeta(snap.Secrets, func(c *corev1.Secret) string { return c.Namespace + "/" + c.Name })
	for path, why := range ignored {
		snap.Ignored = append(snap.Ignored, path)
		snap.Files = append(snap.Files, FileStatus{Path: path, State: StateIgnored, Messages: []string{why}})
	}
	sort.Strings(snap.Ignored)
	sort.Slice(snap.Files, func(i, j int) bool { return snap.Files[i].Path < snap.Files[j].Path })
	return snap
}

func sortMeta[T any](s []T, key func(T) string) {
	sort.Slice(s, func(i, j int) bool { return key(s[i]) < key(s[j]) })
}

// fileMessages splits a file's error into one message per problem, without the path prefix.
func fileMessages(path string, err error) []string {
	var msgs []string
	var fe *manifests.FileError
	if errors.As(err, &fe) {
		for _, p := range fe.Problems {
			msgs = append(msgs, p.String())
		}
		rest := strings.TrimPrefix(err.Error(), fe.Error())
		if rest = strings.TrimPrefix(rest, "; "); rest != "" {
			msgs = append(msgs, rest)
		}
		return msgs
	}
	return []string{strings.TrimPrefix(err.Error(), path+": ")}
}

// sameState reports whether two snapshots describe the same desired state:
// the same pods (by name, UID, manifest path and manifest error; the UID
// covers content), the same ConfigMaps and Secrets (content included, for
// volumes), the same errors and the same file states. Ignored files are
// informational and not compared.
func sameState(a, b Snapshot) bool {
	if len(a.Pods) != len(b.Pods) || len(a.Errors) != len(b.Errors) {
		return false
	}
	for i := range a.Pods {
		pa, pb := a.Pods[i], b.Pods[i]
		if podKey(pa) != podKey(pb) || pa.UID != pb.UID ||
			pa.Annotations[manifests.AnnotationManifestPath] != pb.Annotations[manifests.AnnotationManifestPath] ||
			pa.Annotations[manifests.AnnotationManifestError] != pb.Annotations[manifests.AnnotationManifestError] {
			return false
		}
	}
	for i := range a.Errors {
		ea, eb := a.Errors[i], b.Errors[i]
		if ea.Path != eb.Path || ea.KeptLastGood != eb.KeptLastGood || errString(ea.Err) != errString(eb.Err) {
			return false
		}
	}
	return slices.Equal(a.Held, b.Held) && reflect.DeepEqual(a.ConfigMaps, b.ConfigMaps) && reflect.DeepEqual(a.Secrets, b.Secrets) &&
		reflect.DeepEqual(usedFiles(a.Files), usedFiles(b.Files))
}

// usedFiles drops the ignored files.
func usedFiles(fs []FileStatus) []FileStatus {
	var out []FileStatus
	for _, f := range fs {
		if f.State != StateIgnored {
			out = append(out, f)
		}
	}
	return out
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
