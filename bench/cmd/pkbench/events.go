package main

import (
	"context"
	"fmt"
	"time"

	eventsapi "github.com/containerd/containerd/api/events"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/typeurl/v2"
)

// taskEvent is a containerd task exit or start in one namespace.
type taskEvent struct {
	start bool
	id    string
	at    time.Time
}

// subscribeTaskEvents streams the task exits and starts of namespace ns until ctx ends.
func subscribeTaskEvents(ctx context.Context, cl *containerd.Client, ns string) <-chan taskEvent {
	evc, errc := cl.Subscribe(ctx, `topic=="/tasks/exit"`, `topic=="/tasks/start"`)
	out := make(chan taskEvent, 256)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-errc:
				return
			case e := <-evc:
				if e == nil || e.Namespace != ns {
					continue
				}
				v, err := typeurl.UnmarshalAny(e.Event)
				if err != nil {
					continue
				}
				switch x := v.(type) {
				case *eventsapi.TaskExit:
					if x.ID != x.ContainerID {
						continue // an exec process
					}
					at := e.Timestamp
					if x.ExitedAt != nil {
						at = x.ExitedAt.AsTime()
					}
					out <- taskEvent{id: x.ContainerID, at: at}
				case *eventsapi.TaskStart:
					out <- taskEvent{start: true, id: x.ContainerID, at: e.Timestamp}
				}
			}
		}
	}()
	return out
}

func drain(c <-chan taskEvent) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}

// waitExitThenStart waits for the exit of container id and then the first task start after it.
func waitExitThenStart(c <-chan taskEvent, id string, timeout time.Duration) (exitAt, startAt time.Time, err error) {
	deadline := time.After(timeout)
	for startAt.IsZero() {
		select {
		case e := <-c:
			switch {
			case !e.start && e.id == id:
				exitAt = e.at
			case e.start && !exitAt.IsZero():
				startAt = e.at
			}
		case <-deadline:
			return exitAt, startAt, fmt.Errorf("no exit of %s followed by a task start within %v", id, timeout)
		}
	}
	return exitAt, startAt, nil
}
