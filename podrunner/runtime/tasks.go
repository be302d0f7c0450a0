package runtime

import (
	"context"
	"fmt"
	"strings"
	"time"

	tasksapi "github.com/containerd/containerd/api/services/tasks/v1"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/errdefs"
	"github.com/containerd/errdefs/pkg/errgrpc"
)

// tasksFor returns the task state of the given containers, keyed by container ID; a container
// without a task has no entry.
//
// A namespace-wide task list makes containerd ask EVERY shim for its state, so a pod worker's
// periodic relist cost O(pods) shim calls and all workers together O(pods^2). For one pod's few
// containers, getting each container's task asks only that container's shim. A whole-namespace
// listing (podUID "") still lists the tasks once.
func (r *Runtime) tasksFor(ctx context.Context, podUID string, cs []containers.Container) (map[string]taskInfo, error) {
	if podUID == "" {
		return r.listTasks(ctx)
	}
	out := make(map[string]taskInfo, len(cs))
	for _, c := range cs {
		resp, err := r.client.TaskService().Get(ctx, &tasksapi.GetRequest{ContainerID: c.ID})
		if err != nil {
			if err = errgrpc.ToNative(err); errdefs.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("get task of %s: %w", c.ID, err)
		}
		p := resp.GetProcess()
		if p == nil {
			continue
		}
		ti := taskInfo{pid: p.Pid, status: processStatus(p.Status), exitStatus: p.ExitStatus}
		if p.ExitedAt != nil {
			ti.exitedAt = p.ExitedAt.AsTime()
		}
		out[c.ID] = ti
	}
	return out, nil
}

// interruptedCreate reports whether a task create failed because containerd still holds the
// state of an earlier create of the same container ID (its bundle directory exists, or the task
// does, or that create's clean-up removed the new bundle): what an agent killed during a task
// create leaves while containerd finishes that create.
func interruptedCreate(err error) bool {
	if errdefs.IsAlreadyExists(errgrpc.ToNative(err)) {
		return true
	}
	msg := err.Error() // "failed to start shim: mkdir <state>/io.containerd.runtime.v2.task/<ns>/<id>: file exists"
	if strings.Contains(msg, "io.containerd.runtime.v2.task") && strings.Contains(msg, "file exists") {
		return true
	}
	// The shim found its working directory, the new bundle, gone: the earlier create's clean-up
	// removed the bundle of the same ID after this create had made it again.
	if strings.Contains(msg, "failed to start shim") && strings.Contains(msg, "getwd: no such file or directory") {
		return true
	}
	// runc's state of the ID exists: the shim finished the earlier create after containerd had
	// given it up (endLeftovers ends it).
	return strings.Contains(msg, "container with given ID already exists")
}

// halfDeletedMinAge: see deleteTask.
var halfDeletedMinAge = 30 * time.Second

// taskDeleteTimeout bounds a task's delete, which its caller cannot cancel (deleteTask).
const taskDeleteTimeout = 15 * time.Second

// deleteTask deletes container id's task t, or, with t nil or its state no longer readable, a
// task containerd may still hold for id. It returns the client's result; not found when there
// was no task.
//
// containerd 1.6 deletes a task in steps: the shim forgets the container, containerd its task,
// then the shim is told to shut down when it serves no other container. A caller gone between the
// first two (the agent stopping, or killed, during a delete) leaves a task only containerd knows,
// whose state reads fail and which the client's Task.Delete then skips; nothing would ever tell
// that shim to exit (found as an idle runc shim outliving its pod). So the delete is not
// cancelled with ctx (it runs to its end, bounded by taskDeleteTimeout), and when the client
// finds no task, containerd's own delete is asked as well: it tolerates the shim's "not found",
// drops its task and shuts the shim down (not found when there is nothing to drop).
//
// A container created less than halfDeletedMinAge ago (createdAt; zero: any age) is not asked
// for that way: its task may be one that containerd is still creating for an agent that died
// meanwhile (the shim does not know it yet either), and containerd's delete would shut the shim
// down under that create. What such a create leaves is for endOrphanTask.
func (r *Runtime) deleteTask(ctx context.Context, id string, t containerd.Task, createdAt time.Time, opts ...containerd.ProcessDeleteOpts) (*containerd.ExitStatus, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), taskDeleteTimeout)
	defer cancel()
	defer r.stopStdinHolder(id)
	if t != nil {
		st, err := t.Delete(ctx, opts...)
		if !errdefs.IsNotFound(err) {
			return st, err
		}
	}
	if !createdAt.IsZero() && time.Since(createdAt) < halfDeletedMinAge {
		return nil, fmt.Errorf("task of %s: %w", id, errdefs.ErrNotFound)
	}
	if _, err := r.client.TaskService().Delete(ctx, &tasksapi.DeleteTaskRequest{ContainerID: id}); err != nil {
		return nil, fmt.Errorf("delete task %s: %w", id, errgrpc.ToNative(err))
	}
	return nil, nil
}
