package podrunner

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// steppingRecorder returns a recorder whose clock advances by one second per event.
func steppingRecorder(max int) (*Recorder, *time.Time) {
	r := NewRecorder("node1", max)
	now := t0
	r.now = func() time.Time {
		now = now.Add(time.Second)
		return now
	}
	return r, &now
}

func TestRecorderAggregatesRepeats(t *testing.T) {
	r, _ := steppingRecorder(100)
	pod := testPod(corev1.RestartPolicyAlways, nil, "main")
	r.Eventf(pod, "main", EventWarning, ReasonBackOff, "Back-off restarting failed container %s", "main") // t0+1
	r.Eventf(pod, "main", EventNormal, ReasonStarted, "Started container main")                           // t0+2
	r.Eventf(pod, "main", EventWarning, ReasonBackOff, "Back-off restarting failed container %s", "main") // t0+3
	r.Eventf(pod, "main", EventWarning, ReasonBackOff, "Back-off restarting failed container %s", "main") // t0+4

	evs := r.Events("")
	if len(evs) != 2 {
		t.Fatalf("got %d events, want 2 (repeats aggregated): %+v", len(evs), evs)
	}
	started, backoff := evs[0], evs[1] // ordered by last timestamp
	if started.Reason != ReasonStarted || backoff.Reason != ReasonBackOff {
		t.Fatalf("order = %s, %s; want Started, BackOff", started.Reason, backoff.Reason)
	}
	if backoff.Count != 3 {
		t.Errorf("count = %d, want 3", backoff.Count)
	}
	if !backoff.FirstTimestamp.Time.Equal(at(1)) || !backoff.LastTimestamp.Time.Equal(at(4)) {
		t.Errorf("first/last = %s/%s, want %s/%s", backoff.FirstTimestamp, backoff.LastTimestamp, at(1), at(4))
	}
	if backoff.Message != "Back-off restarting failed container main" || backoff.Type != corev1.EventTypeWarning {
		t.Errorf("event = %+v", backoff)
	}
	if backoff.Source.Component != "podkeeper" || backoff.Source.Host != "node1" {
		t.Errorf("source = %+v", backoff.Source)
	}
	obj := backoff.InvolvedObject
	if obj.Kind != "Pod" || obj.Name != pod.Name || obj.Namespace != pod.Namespace || obj.UID != pod.UID {
		t.Errorf("involvedObject = %+v", obj)
	}
	if started.Count != 1 {
		t.Errorf("Started count = %d, want 1", started.Count)
	}

	// A different message, type or container is a different event.
	r.Eventf(pod, "main", EventWarning, ReasonBackOff, "Back-off restarting failed container %s", "other")
	r.Eventf(pod, "main", EventNormal, ReasonBackOff, "Back-off restarting failed container main")
	r.Eventf(pod, "", EventWarning, ReasonBackOff, "Back-off restarting failed container main")
	if n := len(r.Events("")); n != 5 {
		t.Fatalf("got %d events, want 5", n)
	}
}

func TestRecorderKeepsAtMostMax(t *testing.T) {
	r, _ := steppingRecorder(3)
	pod := testPod(corev1.RestartPolicyAlways, nil, "main")
	for i := 0; i < 5; i++ {
		r.Eventf(pod, "", EventNormal, "Test", "event %d", i)
	}
	evs := r.Events("")
	if len(evs) != 3 {
		t.Fatalf("kept %d events, want 3", len(evs))
	}
	for i, e := range evs {
		if want := fmt.Sprintf("event %d", i+2); e.Message != want {
			t.Errorf("event %d = %q, want %q (oldest dropped first)", i, e.Message, want)
		}
	}
}

func TestRecorderFiltersByUID(t *testing.T) {
	r, _ := steppingRecorder(10)
	a := testPod(corev1.RestartPolicyAlways, nil, "main")
	b := a.DeepCopy()
	b.Name, b.UID = "other-node1", types.UID("uid-other")
	r.Eventf(a, "main", EventNormal, ReasonStarted, "Started container main")
	r.Eventf(b, "main", EventNormal, ReasonStarted, "Started container main")
	r.Eventf(a, "main", EventNormal, ReasonKilling, "Stopping container main")
	if n := len(r.Events("")); n != 3 {
		t.Fatalf("all events: %d, want 3", n)
	}
	evs := r.Events(a.UID)
	if len(evs) != 2 {
		t.Fatalf("events of a: %d, want 2", len(evs))
	}
	for _, e := range evs {
		if e.InvolvedObject.UID != a.UID {
			t.Errorf("event of %s in a's list", e.InvolvedObject.UID)
		}
	}
	if evs := r.Events(b.UID); len(evs) != 1 || evs[0].InvolvedObject.Name != "other-node1" {
		t.Fatalf("events of b: %+v", evs)
	}
	if evs := r.Events("nobody"); len(evs) != 0 {
		t.Fatalf("events of an unknown uid: %+v", evs)
	}
	// Events returns copies.
	evs[0].Message = "changed"
	if r.Events(a.UID)[0].Message == "changed" {
		t.Fatal("Events returned a shared event, not a copy")
	}
}

func TestRecorderFieldPath(t *testing.T) {
	r, _ := steppingRecorder(10)
	pod := testPod(corev1.RestartPolicyAlways, []string{"setup"}, "main")
	r.Eventf(pod, "setup", EventNormal, ReasonStarted, "Started container setup")
	r.Eventf(pod, "main", EventNormal, ReasonStarted, "Started container main")
	r.Eventf(pod, "", EventNormal, ReasonSandboxChanged, "Pod sandbox changed")
	want := []string{"spec.initContainers{setup}", "spec.containers{main}", ""}
	evs := r.Events(pod.UID)
	if len(evs) != len(want) {
		t.Fatalf("got %d events", len(evs))
	}
	for i, e := range evs {
		if e.InvolvedObject.FieldPath != want[i] {
			t.Errorf("event %q: fieldPath %q, want %q", e.Message, e.InvolvedObject.FieldPath, want[i])
		}
	}
}
