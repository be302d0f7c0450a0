package watcher

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// renameSettle is how long the directory must be quiet before it is scanned when every pending
// event is an atomic one (see atomicEvent): long enough to take a burst of renames as one
// snapshot, far shorter than the debounce.
const renameSettle = 5 * time.Millisecond

// atomicEvent reports whether ev, an event inside the directory, leaves nothing half-written to
// wait for: a manifest renamed into place (its whole content appeared at once, as a tool writing
// a temp file and renaming it does), or any event on a name that is never read (the temp file
// itself, an editor's swap file). A write, truncation, removal or plain create of a manifest
// name, and any event on the directory itself, are not: those wait for the full debounce so that
// an editor's save sequence stays one change.
func (r *dirRun) atomicEvent(ev fsnotify.Event) bool {
	if ev.Name == r.dir || filepath.Dir(ev.Name) != r.dir {
		return false
	}
	if IgnoreReason(filepath.Base(ev.Name)) != "" {
		return true
	}
	return ev.Op == fsnotify.Create && renamedInto(ev)
}

// renamedInto reports whether a Create event is the target of a rename. fsnotify pairs the
// two halves of an inotify rename but keeps the source name unexported; its String form shows
// it as `CREATE "new" ← "old"` (watcher tests check that this still holds).
func renamedInto(ev fsnotify.Event) bool {
	return strings.Contains(ev.String(), "\" ← \"")
}
