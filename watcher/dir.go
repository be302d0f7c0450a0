package watcher

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/podkeeper/podkeeper/manifests"
)

// Defaults for DirSource.
const (
	DefaultResync   = 20 * time.Second
	DefaultDebounce = 200 * time.Millisecond
)

// DirSource is a Source reading static-pod manifests from one directory.
//
// It reads the regular files (symlinks followed) directly in the directory
// whose names end in .yaml, .yml or .json and do not start with a dot (see
// IgnoreReason); everything else, subdirectories included, is listed in
// Snapshot.Ignored with the reason, logged once. An entry with a manifest name
// that is not a regular file (FIFO, socket, device, dangling symlink, symlink
// loop) is a file error and is never opened. The directory is watched
// with fsnotify and also re-listed every resync period; changes are acted
// on only once events have been quiet for the debounce period, so a save
// is one change and a half-written file is not read. A manifest renamed into
// place (written whole elsewhere first) needs no such wait: when every pending
// event is of that kind, a short settle (renameSettle) is enough. A missing directory
// gives an empty snapshot and is picked up once it appears (through a
// watch on its parent, or the next resync).
//
// A file that decoded fine before and now fails (or is emptied) keeps its
// last good objects, reported with FileError.KeptLastGood, and its pods carry
// manifests.AnnotationManifestError. A deleted file removes its objects. A file
// rejected from the start (as after an agent restart) lists the pods it seems
// to declare in Snapshot.Held. The directory and every manifest are checked for
// writers other than root at every scan (see WithStrictPermissions).
type DirSource struct {
	dir      string
	nodeName string
	resync   time.Duration
	debounce time.Duration
	log      *slog.Logger

	strictPerms bool
	lastGoodDir string // see lastgood.go

	// Test hooks.
	noWatch bool   // do not use fsnotify: rely on resync only
	onScan  func() // called after every directory scan
}

// DirOption configures a DirSource.
type DirOption func(*DirSource)

// WithResync sets how often the whole directory is re-listed even without
// events (default 20s). A value <= 0 keeps the default.
func WithResync(d time.Duration) DirOption {
	return func(s *DirSource) {
		if d > 0 {
			s.resync = d
		}
	}
}

// WithDebounce sets how long events must be quiet before the directory is
// re-read (default 200ms). A value <= 0 keeps the default.
func WithDebounce(d time.Duration) DirOption {
	return func(s *DirSource) {
		if d > 0 {
			s.debounce = d
		}
	}
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) DirOption {
	return func(s *DirSource) {
		if l != nil {
			s.log = l
		}
	}
}

// WithStrictPermissions refuses manifests that a non-root user or group can write (or that sit
// in such a directory) instead of only warning about them. A refused file keeps its last good
// objects (read while it was safe), like any other bad edit.
func WithStrictPermissions(strict bool) DirOption {
	return func(s *DirSource) { s.strictPerms = strict }
}

// NewDirSource returns a source for the manifests in dir, decoded for the
// node nodeName.
func NewDirSource(dir, nodeName string, opts ...DirOption) *DirSource {
	s := &DirSource{
		dir:      filepath.Clean(dir),
		nodeName: nodeName,
		resync:   DefaultResync,
		debounce: DefaultDebounce,
		log:      slog.Default(),
	}
	for _, o := range opts {
		o(s)
	}
	s.log = s.log.With("source", "dir", "dir", s.dir)
	return s
}

var _ Source = (*DirSource)(nil)

// IsManifestName reports whether a directory entry name is one DirSource reads.
func IsManifestName(name string) bool { return IgnoreReason(name) == "" }

// IgnoreReason says why DirSource skips a directory entry of this name, or "" when it reads it:
// only *.yaml, *.yml and *.json files that are not dotfiles are read, so editor and package
// manager leftovers (*~, *.swp, *.bak, *.orig, *.dpkg-*, *.rpmnew, *.tmp) never load.
func IgnoreReason(name string) string {
	switch ext := filepath.Ext(name); {
	case strings.HasPrefix(name, "."):
		return "dotfile"
	case strings.HasSuffix(name, "~"), ext == ".swp", ext == ".swo", ext == ".bak", ext == ".orig", ext == ".tmp":
		return "editor leftover (" + leftoverPattern(name) + ")"
	case strings.Contains(name, ".dpkg-"), ext == ".rpmnew", ext == ".rpmsave", ext == ".rpmorig", ext == ".ucf-dist", ext == ".ucf-old":
		return "package-manager leftover (" + leftoverPattern(name) + ")"
	case ext == ".yaml", ext == ".yml", ext == ".json":
		return ""
	}
	return "not a .yaml, .yml or .json file"
}

func leftoverPattern(name string) string {
	if strings.HasSuffix(name, "~") {
		return "*~"
	}
	if i := strings.Index(name, ".dpkg-"); i >= 0 {
		return "*.dpkg-*"
	}
	return "*" + filepath.Ext(name)
}

// Run implements Source. Each call starts with an empty cache; Run must not
// be called concurrently on the same DirSource.
func (s *DirSource) Run(ctx context.Context, out chan<- Snapshot) error {
	r := &dirRun{DirSource: s, files: map[string]*fileState{}, ignored: map[string]string{}}

	var events <-chan fsnotify.Event
	var watchErrs <-chan error
	if !s.noWatch {
		w, err := fsnotify.NewWatcher()
		if err != nil {
			return fmt.Errorf("watching manifest directory %s: %w", s.dir, err)
		}
		defer w.Close()
		r.w, events, watchErrs = w, w.Events, w.Errors
	}

	last := r.scan()
	send := func(snap Snapshot) error {
		select {
		case out <- snap:
			s.log.Debug("sent snapshot", "pods", len(snap.Pods), "errors", len(snap.Errors), "ignored", len(snap.Ignored))
			last = snap
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := send(last); err != nil {
		return err
	}

	debounce := time.NewTimer(s.debounce)
	debounce.Stop()
	defer debounce.Stop()
	resync := time.NewTicker(s.resync)
	defer resync.Stop()

	var (
		pending      bool      // an event is waiting for the debounce timer
		pendingSince time.Time // when the first such event came
		atomic       bool      // every pending event is atomic: a short settle is enough
	)
	poke := func(quick bool) {
		if !pending {
			pending, pendingSince, atomic = true, time.Now(), true
		}
		atomic = atomic && quick
		if atomic && renameSettle < s.debounce {
			debounce.Reset(renameSettle)
		} else {
			debounce.Reset(s.debounce)
		}
	}
	rescan := func() error {
		pending = false
		debounce.Stop()
		if snap := r.scan(); !sameState(snap, last) {
			return send(snap)
		}
		return nil
	}

	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok := <-events:
			if !ok {
				return fmt.Errorf("watching manifest directory %s: event channel closed", s.dir)
			}
			if r.relevant(ev) {
				poke(r.atomicEvent(ev))
			}
		case err, ok := <-watchErrs:
			if !ok {
				return fmt.Errorf("watching manifest directory %s: error channel closed", s.dir)
			}
			s.log.Warn("fsnotify error; re-reading directory", "err", err)
			poke(false)
		case <-debounce.C:
			if err := rescan(); err != nil {
				return err
			}
		case <-resync.C:
			// Leave a write in progress to the debounce timer, unless
			// events have kept it busy for a whole resync period.
			if pending && time.Since(pendingSince) < s.resync {
				continue
			}
			if err := rescan(); err != nil {
				return err
			}
		}
	}
}

// fileState is the cached state of one manifest file.
type fileState struct {
	hash     [sha256.Size]byte
	decoded  bool               // hash is the content that objs/err describe
	objs     *manifests.Objects // objects of the current content, when err is nil
	err      error              // why the current content cannot be used
	lastGood *manifests.Objects // objects of the last content that decoded fine
	everGood bool
	warnings []string
	salvaged []string // pod keys the rejected content seems to declare
}

// result is what the file contributes to a snapshot.
func (f *fileState) result(path string) fileResult {
	r := fileResult{path: path, err: f.err, warnings: f.warnings}
	if f.err != nil && !f.everGood {
		r.held = f.salvaged
	}
	objs := f.objs
	if f.err != nil {
		objs = nil
		if f.everGood {
			objs, r.kept = f.lastGood, true
		}
	}
	if objs != nil {
		r.pods, r.cms, r.secrets = objs.Pods, objs.ConfigMaps, objs.Secrets
	}
	return r
}

// dirRun is the state of one Run call; only Run's goroutine touches it.
type dirRun struct {
	*DirSource
	w              *fsnotify.Watcher // nil with noWatch
	watchingDir    bool
	watchingParent bool
	dirMissing     bool
	files          map[string]*fileState // by path
	ignored        map[string]string     // paths ignored at the last scan, with the reason
	dirWarning     string                // the directory's permission problem, as last logged
	pruned         bool                  // stale last good copies were removed (first full scan)
}

// relevant reports whether an fsnotify event may change the snapshot: any
// event inside the directory or on the directory itself (not on its
// siblings, seen through the parent watch).
func (r *dirRun) relevant(ev fsnotify.Event) bool {
	if ev.Name == r.dir {
		if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
			// The watch is gone or follows the moved directory.
			r.unwatchDir()
		}
		return true
	}
	return filepath.Dir(ev.Name) == r.dir
}

// ensureWatch watches the directory, or its parent while it is missing.
func (r *dirRun) ensureWatch() {
	if r.w == nil || r.watchingDir {
		return
	}
	err := r.w.Add(r.dir)
	if err == nil {
		r.watchingDir = true
		r.log.Debug("watching manifest directory")
		return
	}
	if r.watchingParent {
		return
	}
	parent := filepath.Dir(r.dir)
	if perr := r.w.Add(parent); perr != nil {
		r.log.Debug("cannot watch manifest directory or its parent; relying on resync", "err", err, "parent_err", perr)
		return
	}
	r.watchingParent = true
	r.log.Debug("watching parent until the manifest directory appears", "parent", parent)
}

func (r *dirRun) unwatchDir() {
	if r.watchingDir {
		_ = r.w.Remove(r.dir) // may already be gone with the directory
		r.watchingDir = false
	}
}

// scan re-reads the directory and returns the resulting snapshot.
func (r *dirRun) scan() Snapshot {
	if r.onScan != nil {
		defer r.onScan()
	}
	r.ensureWatch()
	entries, err := os.ReadDir(r.dir)
	if errors.Is(err, fs.ErrNotExist) {
		// The directory went away (and any watch on it with it). Watch
		// its parent now, so that its return is an event; and if it is
		// already back, list it after all.
		r.unwatchDir()
		r.ensureWatch()
		if r.watchingDir {
			entries, err = os.ReadDir(r.dir)
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if !r.dirMissing {
			r.log.Info("manifest directory does not exist; waiting for it to appear")
			r.dirMissing = true
		}
		r.unwatchDir()
		for path := range r.files {
			r.forgetLastGood(path)
		}
		clear(r.files)
		clear(r.ignored)
		return Snapshot{}
	case err != nil:
		// Unreadable for now: keep every file's pods rather than stop them.
		r.log.Warn("cannot read manifest directory; keeping last known pods", "err", err)
		var results []fileResult
		for path, f := range r.files {
			results = append(results, f.result(path))
		}
		snap := assemble(results, r.ignored)
		snap.Errors = append([]FileError{{Path: r.dir, Err: fmt.Errorf("reading directory: %w", err), KeptLastGood: true}}, snap.Errors...)
		return snap
	}
	if r.dirMissing {
		r.log.Info("manifest directory appeared")
		r.dirMissing = false
	}
	dirUnsafe := r.checkDir()

	var (
		results []fileResult
		ignored = map[string]string{}
		present = map[string]bool{}
	)
	for _, e := range entries {
		path := filepath.Join(r.dir, e.Name())
		if why := IgnoreReason(e.Name()); why != "" {
			ignored[path] = why
			continue
		}
		info, err := os.Stat(path) // follows symlinks
		if errors.Is(err, fs.ErrNotExist) {
			if li, lerr := os.Lstat(path); lerr == nil && li.Mode()&fs.ModeSymlink != 0 {
				target, _ := os.Readlink(path)
				err = fmt.Errorf("dangling symlink to %s", target)
			} else {
				r.log.Debug("manifest vanished", "path", path)
				continue
			}
		}
		if err == nil && info.IsDir() {
			ignored[path] = "directory (subdirectories are not read)"
			continue
		}
		if err == nil && !info.Mode().IsRegular() {
			err = fmt.Errorf("not a regular file (%s); not read", fileType(info.Mode()))
		}
		f := r.files[path]
		if f == nil {
			f = &fileState{}
			r.files[path] = f
		}
		if err == nil {
			f.warnings = r.checkFile(path, info, f.warnings, dirUnsafe)
			if r.strictPerms && (len(f.warnings) > 0 || dirUnsafe != "") {
				why := dirUnsafe
				if len(f.warnings) > 0 {
					why = f.warnings[0]
				}
				err = fmt.Errorf("refused by --strict-permissions: %s", why)
			}
		}
		if err == nil {
			err = r.refresh(path, f)
		}
		if errors.Is(err, fs.ErrNotExist) {
			delete(r.files, path)
			r.forgetLastGood(path)
			continue
		}
		if err != nil {
			if errString(f.err) != err.Error() {
				r.log.Warn("cannot use manifest", "path", path, "err", err, "kept_last_good", f.everGood)
			}
			f.err, f.decoded = err, false
		}
		present[path] = true
		results = append(results, f.result(path))
	}
	for path := range r.files {
		if !present[path] {
			r.log.Info("manifest removed", "path", path)
			delete(r.files, path)
			r.forgetLastGood(path)
		}
	}
	if !r.pruned {
		r.pruned = true
		r.pruneLastGood(present)
	}
	for path, why := range ignored {
		if r.ignored[path] != why {
			r.log.Info("ignoring file", "path", path, "reason", why)
		}
	}
	r.ignored = ignored
	return assemble(results, ignored)
}

// fileType names a non-regular file's type for messages.
func fileType(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return m.Type().String()
}

// errEmptied is the error of a file that held objects and is now empty.
var errEmptied = errors.New("file is empty; keeping its last good content (delete the file to remove its pods)")

// refresh reads the file and decodes it if its content changed. It returns
// only read errors; decode errors are recorded in f.
func (r *dirRun) refresh(path string, f *fileState) error {
	data, err := readLimited(path, manifests.MaxFileSize+1)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(data)
	if f.decoded && sum == f.hash {
		return nil
	}
	f.hash, f.decoded = sum, true
	if len(bytes.TrimSpace(data)) == 0 && !f.everGood {
		if lg := r.loadLastGood(path); lg != nil {
			f.lastGood, f.everGood = lg, true // emptied while the agent was down
		}
	}
	if len(bytes.TrimSpace(data)) == 0 && f.everGood && f.lastGood.Len() > 0 {
		// A file emptied by a save in progress (or by mistake) is a bad edit, not a removal:
		// deleting the file is how its pods are removed.
		f.objs, f.err = nil, errEmptied
		r.log.Warn("manifest emptied; keeping its last good content", "path", path)
		return nil
	}
	objs, err := manifests.Decode(path, data, r.nodeName)
	if err != nil {
		f.objs, f.err = nil, err
		if !f.everGood {
			if lg := r.loadLastGood(path); lg != nil {
				f.lastGood, f.everGood = lg, true
				r.log.Warn("manifest rejected; using its last good copy from before the agent restarted", "path", path)
			}
		}
		f.salvaged = manifests.SalvagePodNames(data, r.nodeName)
		r.log.Warn("manifest rejected", "path", path, "err", err, "kept_last_good", f.everGood)
		return nil
	}
	f.objs, f.err, f.lastGood, f.everGood, f.salvaged = objs, nil, objs, true, nil
	r.saveLastGood(path, data)
	r.log.Info("manifest loaded", "path", path, "pods", len(objs.Pods), "configMaps", len(objs.ConfigMaps), "secrets", len(objs.Secrets))
	return nil
}

// readLimited reads at most limit bytes of a file, enough for the decoder
// to tell a too-large file without reading all of it.
func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, io.LimitReader(f, limit)); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return buf.Bytes(), nil
}

// ScanDir reads the directory once, as a DirSource's first snapshot (no watch, nothing kept):
// `podkeeper validate` uses it to judge a directory exactly as the agent would.
func ScanDir(dir, nodeName string, opts ...DirOption) Snapshot {
	s := NewDirSource(dir, nodeName, append(opts, func(s *DirSource) { s.noWatch = true })...)
	r := &dirRun{DirSource: s, files: map[string]*fileState{}, ignored: map[string]string{}}
	return r.scan()
}
