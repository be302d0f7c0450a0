package runtime_test

import (
	"testing"

	"github.com/podkeeper/podkeeper/podrunner"
)

// A pod's listing gets each of its containers' task on its own instead of listing every task of
// the namespace; it must report exactly what the namespace-wide listing reports for that pod.
func TestPodListingMatchesNamespaceListing(t *testing.T) {
	rt, ctx := newRuntime(t)
	logs := t.TempDir()
	pod := testPod(t, sh("runs", "sleep 60"), sh("exits", "exit 7"))
	other := testPod(t, sh("other", "sleep 60"))
	other.UID += "1"
	_, ctrs := startPod(t, rt, ctx, pod, logs)
	startPod(t, rt, ctx, other, t.TempDir())
	waitExited(t, rt, ctx, string(pod.UID), ctrs[1].ID)

	byID := func(recs []podrunner.ContainerRecord, uid string) map[string]podrunner.ContainerRecord {
		out := map[string]podrunner.ContainerRecord{}
		for _, r := range recs {
			if r.PodUID == uid {
				out[r.ID] = r
			}
		}
		return out
	}
	all, err := rt.ListContainers(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	mine, err := rt.ListContainers(ctx, string(pod.UID))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range mine {
		if r.PodUID != string(pod.UID) {
			t.Fatalf("pod listing holds %s of pod %s", r.ID, r.PodUID)
		}
	}
	want, got := byID(all, string(pod.UID)), byID(mine, string(pod.UID))
	if len(want) != 3 || len(got) != len(want) {
		t.Fatalf("pod listing has %d records, namespace listing %d (want sandbox + 2 containers)", len(got), len(want))
	}
	for id, w := range want {
		g, ok := got[id]
		if !ok {
			t.Fatalf("pod listing lacks %s", id)
		}
		if g.State != w.State || g.TaskPresent != w.TaskPresent || g.PID != w.PID || g.ExitCode != w.ExitCode || !g.FinishedAt.Equal(w.FinishedAt) {
			t.Fatalf("record %s: pod listing %+v, namespace listing %+v", id, g, w)
		}
	}
	if r := got[ctrs[0].ID]; r.State != podrunner.StateRunning || r.PID == 0 {
		t.Fatalf("running container listed as %+v", r)
	}
	if r := got[ctrs[1].ID]; r.State != podrunner.StateExited || r.ExitCode != 7 || !r.TaskPresent {
		t.Fatalf("exited container listed as %+v", r)
	}
	// Once released, the task is gone: the listing still shows the exit from the labels.
	if _, err := rt.Finalize(ctx, ctrs[1].ID); err != nil {
		t.Fatal(err)
	}
	mine, err = rt.ListContainers(ctx, string(pod.UID))
	if err != nil {
		t.Fatal(err)
	}
	if r := byID(mine, string(pod.UID))[ctrs[1].ID]; r.TaskPresent || r.State != podrunner.StateExited || r.ExitCode != 7 {
		t.Fatalf("finalized container listed as %+v", r)
	}
}
