package podrunner

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podkeeper/podkeeper/internal/atomicfile"
)

// Evictions survive an agent restart: the evicted pods and the eviction counts are written to
// Config.EvictionState after each change, and read back before the first snapshot is applied.
// Without that a restarted agent would start every evicted pod at once, while the node may still be
// under the pressure that evicted them, and their backoff would start from zero.

// savedEviction is one evicted pod in the state file.
type savedEviction struct {
	UID       types.UID                `json:"uid"`
	Message   string                   `json:"message,omitempty"`
	Condition corev1.NodeConditionType `json:"condition,omitempty"`
	At        time.Time                `json:"at,omitempty"`
	Evictions int                      `json:"evictions"`
	Evicted   bool                     `json:"evicted"` // false: only the count is kept (the pod runs again)
}

type evictionFile struct {
	Pods []savedEviction `json:"pods"`
}

// encodeEvictions is the state file's content for the marks and counts (pure). Every evicted pod
// has a count (the manager sets both together).
func encodeEvictions(marks map[types.UID]*evictMark, counts map[types.UID]int) ([]byte, error) {
	f := evictionFile{Pods: []savedEviction{}}
	for uid, n := range counts {
		s := savedEviction{UID: uid, Evictions: n}
		if mk := marks[uid]; mk != nil && !mk.cleared {
			s.Evicted, s.Message, s.Condition, s.At = true, mk.message, mk.cond, mk.at
		}
		f.Pods = append(f.Pods, s)
	}
	sort.Slice(f.Pods, func(i, j int) bool { return f.Pods[i].UID < f.Pods[j].UID })
	return json.MarshalIndent(f, "", "  ")
}

// decodeEvictions reads a state file's content back (pure).
func decodeEvictions(b []byte) (map[types.UID]*evictMark, map[types.UID]int, error) {
	var f evictionFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, nil, fmt.Errorf("decode eviction state: %w", err)
	}
	marks, counts := map[types.UID]*evictMark{}, map[types.UID]int{}
	for _, s := range f.Pods {
		if s.UID == "" || s.Evictions < 0 {
			continue
		}
		counts[s.UID] = s.Evictions
		if s.Evicted {
			marks[s.UID] = &evictMark{message: s.Message, cond: s.Condition, at: s.At, evictions: s.Evictions}
		}
	}
	return marks, counts, nil
}

// loadEvictions reads Config.EvictionState into the manager (before any worker runs). With
// eviction off the file is removed: nothing would ever clear its marks.
func (m *Manager) loadEvictions() {
	path := m.cfg.EvictionState
	if path == "" {
		return
	}
	if m.cfg.Eviction == nil {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			m.log.Warn("eviction is off: cannot remove the eviction state", "file", path, "err", err)
		}
		return
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err != nil {
		m.log.Warn("cannot read the eviction state; evicted pods start again", "file", path, "err", err)
		return
	}
	marks, counts, err := decodeEvictions(b)
	if err != nil {
		m.log.Warn("bad eviction state; evicted pods start again", "file", path, "err", err)
		return
	}
	m.mu.Lock()
	m.evicted, m.evictions = marks, counts
	m.mu.Unlock()
	if len(marks) > 0 {
		m.log.Info("evicted pods remembered from before the restart", "pods", len(marks))
	}
}

// pruneEvictions forgets the pods not in the first snapshot (their manifests went away while the
// agent was down).
func (m *Manager) pruneEvictions(desired []*corev1.Pod) {
	want := map[types.UID]bool{}
	for _, p := range desired {
		want[p.UID] = true
	}
	m.mu.Lock()
	changed := false
	for uid := range m.evicted {
		if !want[uid] {
			delete(m.evicted, uid)
			changed = true
		}
	}
	for uid := range m.evictions {
		if !want[uid] {
			delete(m.evictions, uid)
			changed = true
		}
	}
	m.mu.Unlock()
	if changed {
		m.saveEvictions()
	}
}

// saveEvictions writes the marks and counts (atomically: a crash leaves the old or the new file).
func (m *Manager) saveEvictions() {
	path := m.cfg.EvictionState
	if path == "" || m.cfg.Eviction == nil {
		return
	}
	m.mu.Lock()
	b, err := encodeEvictions(m.evicted, m.evictions)
	m.mu.Unlock()
	if err == nil {
		err = atomicfile.Write(path, b)
	}
	if err != nil {
		m.log.Warn("cannot save the eviction state", "file", path, "err", err)
	}
}
