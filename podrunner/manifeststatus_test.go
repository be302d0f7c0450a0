package podrunner

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

type fakeLookup struct{ name string }

func (fakeLookup) ConfigMap(string, string) (*corev1.ConfigMap, bool) { return nil, false }
func (fakeLookup) Secret(string, string) (*corev1.Secret, bool)       { return nil, false }

// Containers start with the lookup of the latest snapshot.
func TestManagerStartsWithLatestConfig(t *testing.T) {
	e := newEnv(t, slowBackoff)
	first, second := fakeLookup{"first"}, fakeLookup{"second"}
	e.m.UpdateConfig(first)
	e.m.Update([]*corev1.Pod{mgrPod("uid-a", "a", corev1.RestartPolicyAlways, "main")})
	e.run(t)
	e.waitRunning(t, "uid-a", "main", 0)
	if got := e.starts("uid-a", "main")[0].Config; got != first {
		t.Fatalf("StartRequest.Config = %v, want the first lookup", got)
	}
	e.m.UpdateConfig(second)
	e.m.Update([]*corev1.Pod{
		mgrPod("uid-a", "a", corev1.RestartPolicyAlways, "main"),
		mgrPod("uid-b", "b", corev1.RestartPolicyAlways, "main"),
	})
	e.waitRunning(t, "uid-b", "main", 0)
	if got := e.starts("uid-b", "main")[0].Config; got != second {
		t.Fatalf("StartRequest.Config = %v, want the second lookup", got)
	}
}

func condition(p *corev1.Pod, typ corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func eventCount(rec *Recorder, uid, typ, reason string) int {
	n := 0
	for _, ev := range rec.Events(types.UID(uid)) {
		if ev.Type == typ && ev.Reason == reason {
			n += int(ev.Count)
		}
	}
	return n
}

// A running pod whose manifest is rejected keeps running (same container) and shows the error
// as a Warning event and a False condition; once the file is back, both clear.
func TestManagerShowsManifestErrorOnKeptPod(t *testing.T) {
	e := newEnv(t, slowBackoff)
	good := mgrPod("uid-a", "a", corev1.RestartPolicyAlways, "main")
	e.m.Update([]*corev1.Pod{good})
	e.run(t)
	r := e.waitRunning(t, "uid-a", "main", 0)

	kept := good.DeepCopy()
	kept.Annotations[AnnotationManifestError] = "/m/a.yaml: doc 0: spec.containers[0].imagee: unknown field (keeping the last good pods)"
	e.m.Update([]*corev1.Pod{kept})
	waitFor(t, "ManifestValid=False", func() bool {
		p := e.status("uid-a")
		c := p != nil && condition(p, ConditionManifestValid) != nil
		return c && condition(p, ConditionManifestValid).Status == corev1.ConditionFalse &&
			strings.Contains(condition(p, ConditionManifestValid).Message, "imagee")
	})
	if n := eventCount(e.rec, "uid-a", EventWarning, ReasonManifestInvalid); n != 1 {
		t.Fatalf("%d ManifestInvalid warnings, want 1", n)
	}
	e.m.Update([]*corev1.Pod{kept.DeepCopy()}) // the same error again: no new event
	e.m.Update([]*corev1.Pod{good.DeepCopy()})
	waitFor(t, "condition cleared", func() bool {
		p := e.status("uid-a")
		return p != nil && condition(p, ConditionManifestValid) == nil
	})
	if n := eventCount(e.rec, "uid-a", EventWarning, ReasonManifestInvalid); n != 1 {
		t.Fatalf("%d ManifestInvalid warnings after a repeat, want 1", n)
	}
	if n := eventCount(e.rec, "uid-a", EventNormal, ReasonManifestFixed); n != 1 {
		t.Fatalf("%d ManifestFixed events, want 1", n)
	}
	now, ok := e.rt.Running("uid-a", "main")
	if !ok || now.ID != r.ID || len(e.starts("uid-a", "main")) != 1 {
		t.Fatalf("the pod was disturbed: running=%v id %s -> %s, %d starts", ok, r.ID, now.ID, len(e.starts("uid-a", "main")))
	}
}
