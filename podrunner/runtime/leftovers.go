package runtime

import (
	"context"

	"github.com/containerd/errdefs"
)

// removeOrphanSnapshot deletes the snapshot named id when no container owns it: what a crash
// (kill -9 of podkeeper) between preparing a container's snapshot and creating the container
// leaves behind. Without this, every later create of the same container ID fails with
// "snapshot already exists". ctx carries the namespace.
func (r *Runtime) removeOrphanSnapshot(ctx context.Context, id string) {
	sn := r.client.SnapshotService(r.cfg.Snapshotter)
	if _, err := sn.Stat(ctx, id); err != nil {
		return
	}
	if err := sn.Remove(ctx, id); err != nil && !errdefs.IsNotFound(err) {
		r.log.Warn("cannot remove a leftover snapshot", "snapshot", id, "err", err)
		return
	}
	r.log.Info("removed a leftover snapshot of a container never created", "snapshot", id)
}
