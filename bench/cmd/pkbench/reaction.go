package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"

	eventsapi "github.com/containerd/containerd/api/events"
	"github.com/containerd/typeurl/v2"

	"github.com/podkeeper/podkeeper/podrunner"
)

// reaction holds, per killed container: SIGKILL -> containerd's exit event, exit event ->
// the replacement's start event (the agent's own reaction), and SIGKILL -> the API showing the
// pod Running again with restartCount 1.
type reaction struct {
	exitToStart, killToAPI sample
}

// measureReaction kills the app container of `kills` different running pods, one at a time (a
// second kill of the same container would meet CrashLoopBackOff's 10 s).
func measureReaction(ctx context.Context, p *podkeeperRunner, kills int) (reaction, error) {
	var out reaction
	l, err := p.api.Pods(ctx)
	if err != nil {
		return out, err
	}
	sub, cancel := context.WithCancel(ctx)
	defer cancel()
	evc, errc := p.rt.Client().Subscribe(sub, `topic=="/tasks/exit"`, `topic=="/tasks/start"`)
	type ev struct {
		start bool
		id    string
		at    time.Time
	}
	events := make(chan ev, 64)
	go func() {
		for {
			select {
			case <-sub.Done():
				return
			case <-errc:
				return
			case e := <-evc:
				if e == nil || e.Namespace != p.ns {
					continue
				}
				v, err := typeurl.UnmarshalAny(e.Event)
				if err != nil {
					continue
				}
				switch x := v.(type) {
				case *eventsapi.TaskExit:
					at := e.Timestamp
					if x.ExitedAt != nil {
						at = x.ExitedAt.AsTime()
					}
					events <- ev{id: x.ContainerID, at: at}
				case *eventsapi.TaskStart:
					events <- ev{start: true, id: x.ContainerID, at: e.Timestamp}
				}
			}
		}
	}()
	done := 0
	for i := range l.Items {
		if done == kills {
			break
		}
		pod := &l.Items[i]
		if !podRunning(pod) || pod.Status.ContainerStatuses[0].RestartCount != 0 {
			continue
		}
		recs, err := p.rt.ListContainers(ctx, string(pod.UID))
		if err != nil {
			return out, err
		}
		r, ok := podrunner.NewPodView(recs).Latest("c")
		if !ok || r.State != podrunner.StateRunning || r.PID == 0 {
			continue
		}
		next := nextID(r.ID)
		t0 := time.Now()
		if err := syscall.Kill(int(r.PID), syscall.SIGKILL); err != nil {
			return out, fmt.Errorf("kill %s: %w", r.ID, err)
		}
		var exitAt, startAt time.Time
		deadline := time.After(60 * time.Second)
		for exitAt.IsZero() || startAt.IsZero() {
			select {
			case e := <-events:
				switch {
				case !e.start && e.id == r.ID:
					exitAt = e.at
				case e.start && e.id == next:
					startAt = e.at
				}
			case <-deadline:
				return out, fmt.Errorf("reaction: no exit/start events for %s -> %s within 60s", r.ID, next)
			}
		}
		for {
			pp, err := p.api.Pod(ctx, pod.Namespace, pod.Name)
			if err == nil && podRunning(pp) && pp.Status.ContainerStatuses[0].RestartCount == 1 {
				break
			}
			if time.Since(t0) > 60*time.Second {
				return out, fmt.Errorf("reaction: %s not Running with restartCount 1 within 60s", pod.Name)
			}
			time.Sleep(10 * time.Millisecond)
		}
		out.killToAPI = append(out.killToAPI, time.Since(t0))
		out.exitToStart = append(out.exitToStart, startAt.Sub(exitAt))
		done++
		time.Sleep(200 * time.Millisecond)
	}
	if done < kills {
		return out, fmt.Errorf("reaction: only %d running pods to kill, wanted %d", done, kills)
	}
	return out, nil
}

// nextID is the ID of the next instance of a container: <uid16>.<name>.<attempt+1>.
func nextID(id string) string {
	i := strings.LastIndexByte(id, '.')
	n, _ := strconv.Atoi(id[i+1:])
	return id[:i+1] + strconv.Itoa(n+1)
}
