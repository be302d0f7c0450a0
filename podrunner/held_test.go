package podrunner

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// After a restart, a running pod whose manifest is rejected is kept untouched; once the manifest
// is fixed, the fixed pod replaces it (after it has stopped).
func TestManagerHoldsRunningPodOfRejectedManifest(t *testing.T) {
	e := newEnv(t, slowBackoff)
	started := time.Now().Add(-time.Minute)
	for _, r := range []ContainerRecord{
		{ID: "old-sb", Kind: KindSandbox},
		{ID: "old-main", Name: "main", Kind: KindApp},
	} {
		r.PodUID, r.PodName, r.PodNamespace = "uid-old", "a-node1", "default"
		r.State, r.TaskPresent, r.CreatedAt, r.StartedAt, r.GracePeriod = StateRunning, true, started, started, time.Second
		e.rt.Seed(r)
	}
	e.rt.Seed(ContainerRecord{ID: "gone-main", PodUID: "uid-gone", PodName: "gone-node1", PodNamespace: "default",
		Name: "main", Kind: KindApp, State: StateRunning, TaskPresent: true, CreatedAt: started, StartedAt: started})
	e.m.UpdateHeld([]string{"default/a-node1"})
	e.m.Update(nil)
	e.run(t)
	<-e.m.Ready()
	waitFor(t, "the unheld orphan is removed", func() bool { return len(e.rt.Containers("uid-gone")) == 0 })
	if _, ok := e.rt.Running("uid-old", "main"); !ok {
		t.Fatal("the held pod was stopped")
	}
	for _, c := range e.rt.Calls("StopContainer") {
		if c.ID == "old-main" || c.ID == "old-sb" {
			t.Fatalf("held pod container %s stopped", c.ID)
		}
	}

	if p := e.status("uid-old"); p == nil || p.Status.Phase != corev1.PodRunning || condition(p, ConditionManifestValid) == nil {
		t.Fatalf("the held pod is not listed as Running with ManifestValid=False: %+v", p)
	}

	// The manifest is still rejected on the next snapshot: still kept.
	e.m.UpdateHeld([]string{"default/a-node1"})
	e.m.Update(nil)
	time.Sleep(50 * time.Millisecond)
	if _, ok := e.rt.Running("uid-old", "main"); !ok {
		t.Fatal("the held pod was stopped by a later snapshot")
	}

	// Fixed: the new pod of the same name replaces the held one once it is gone.
	e.m.UpdateHeld(nil)
	e.m.Update([]*corev1.Pod{mgrPod("uid-new", "a", corev1.RestartPolicyAlways, "main")})
	e.waitRunning(t, "uid-new", "main", 0)
	if n := len(e.rt.Containers("uid-old")); n != 0 {
		t.Fatalf("%d containers of the held pod left", n)
	}
	stopAt, startAt := time.Time{}, time.Time{}
	for _, c := range e.rt.Calls("StopContainer") {
		if c.ID == "old-main" {
			stopAt = c.At
		}
	}
	for _, c := range e.starts("uid-new", "main") {
		startAt = c.At
	}
	if stopAt.IsZero() || !startAt.After(stopAt) {
		t.Fatalf("new instance started at %v, the held one stopped at %v", startAt, stopAt)
	}
}
