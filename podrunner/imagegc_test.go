package podrunner

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestImagesToRemove(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	old := now.Add(-time.Hour)
	imgs := []GCImage{
		{Name: "a", ID: "sha256:a", Size: 10, Created: old.Add(2 * time.Minute)},
		{Name: "b", ID: "sha256:b", Size: 10, Created: old},
		{Name: "c", ID: "sha256:c", Size: 10, Created: old.Add(time.Minute)},
		{Name: "young", ID: "sha256:y", Size: 50, Created: now.Add(-time.Minute)},
		{Name: "used", ID: "sha256:u", Size: 50, Created: old.Add(-time.Hour)},
		{Name: "named", ID: "sha256:n", Size: 50, Created: old.Add(-time.Hour)},
	}
	inUse := map[string]bool{"sha256:u": true, "named": true}
	cases := []struct {
		name           string
		used, capacity int64
		want           []string
	}{
		{"below the high threshold: nothing", 85, 100, nil},
		{"above: oldest unused first, down to the low threshold", 86, 100, []string{"b"}},
		{"more to free: more images, oldest first", 95, 100, []string{"b", "c"}},
		{"never young, used or named images", 200, 100, []string{"b", "c", "a"}},
		{"no capacity: nothing", 10, 0, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ImagesToRemove(DefaultImageGCPolicy, imgs, inUse, tc.used, tc.capacity, now)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// Dead containers: the newest instance and the one before it stay (status and `logs
// --previous`), so with the newest running exactly one dead instance is kept per container.
func TestRemovableKeepsOneDead(t *testing.T) {
	pod := mgrPod("u", "p", corev1.RestartPolicyAlways, "main", "side")
	rec := func(id, name string, attempt int, st ContainerState) ContainerRecord {
		return ContainerRecord{ID: id, Name: name, Attempt: attempt, State: st, Kind: KindApp}
	}
	v := PodView{Containers: map[string][]ContainerRecord{
		"main": {rec("m3", "main", 3, StateRunning), rec("m2", "main", 2, StateExited), rec("m1", "main", 1, StateExited), rec("m0", "main", 0, StateExited)},
		"side": {rec("s1", "side", 1, StateRunning), rec("s0", "side", 0, StateExited)},
	}}
	got := removable(pod, v)
	if !reflect.DeepEqual(got, []string{"m1", "m0"}) {
		t.Fatalf("removable = %v, want [m1 m0]", got)
	}
	for name, rs := range v.Containers {
		dead := 0
		gone := map[string]bool{}
		for _, id := range got {
			gone[id] = true
		}
		for _, r := range rs {
			if r.State == StateExited && !gone[r.ID] {
				dead++
			}
		}
		if dead != 1 {
			t.Errorf("%s keeps %d dead instances, want 1", name, dead)
		}
	}
}
