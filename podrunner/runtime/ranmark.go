package runtime

import (
	"context"
	"time"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/errdefs"
)

// A container's task that started is marked so (LabelRan) in containerd, for an agent that was
// down when the task went (its shim killed, a reboot): without the mark such a container looks
// like one never started and would be run again as the same instance (a restartPolicy Never
// container a second time). The mark is a metadata write, kept off the start's path: queued at
// the start and written a moment later, while no start is in flight (containerd serialises its
// metadata writes, and a start's own writes come first). It is best effort: a mark lost with the
// agent's death leaves that container as before the marks existed.

// ranMarkDelay gathers the marks of a burst of starts; ranMarkQuietWait bounds how long a mark
// waits for the starts in flight to end.
const (
	ranMarkDelay     = time.Second
	ranMarkQuietWait = 10 * time.Second
)

// markRanLater queues LabelRan for container id, whose task has started.
func (r *Runtime) markRanLater(id string) {
	r.mu.Lock()
	r.ranPending = append(r.ranPending, id)
	r.mu.Unlock()
	select {
	case r.ranWake <- struct{}{}:
	default:
	}
}

// writeRanMarks writes the queued marks until ctx ends.
func (r *Runtime) writeRanMarks(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.ranWake:
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(ranMarkDelay):
		}
		r.mu.Lock()
		ids := r.ranPending
		r.ranPending = nil
		r.mu.Unlock()
		for _, id := range ids {
			r.waitNoStarts(ctx, ranMarkQuietWait)
			if ctx.Err() != nil {
				return
			}
			_, err := r.client.ContainerService().Update(r.ctx(ctx),
				containers.Container{ID: id, Labels: map[string]string{LabelRan: "true"}}, "labels."+LabelRan)
			if err != nil && !errdefs.IsNotFound(err) {
				r.log.Debug("mark a started container", "id", id, "err", err)
			}
		}
	}
}

// waitNoStarts waits, at most max, until no start holds a slot (no bound: returns at once).
func (r *Runtime) waitNoStarts(ctx context.Context, max time.Duration) {
	deadline := time.Now().Add(max)
	for r.starts != nil && len(r.starts) > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
}
