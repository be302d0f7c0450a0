package podrunner

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type mapLookup map[string]*corev1.Secret // namespace/name -> secret

func (m mapLookup) ConfigMap(string, string) (*corev1.ConfigMap, bool) { return nil, false }
func (m mapLookup) Secret(ns, name string) (*corev1.Secret, bool) {
	s, ok := m[ns+"/"+name]
	return s, ok
}

func TestPullSecrets(t *testing.T) {
	reg := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "reg", Namespace: "default"}, Type: corev1.SecretTypeDockerConfigJson}
	old := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: "default"}, Type: corev1.SecretTypeDockercfg}
	opaque := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "opaque", Namespace: "default"}, Type: corev1.SecretTypeOpaque}
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "reg", Namespace: "kube-system"}, Type: corev1.SecretTypeDockerConfigJson}
	lookup := mapLookup{"default/reg": reg, "default/old": old, "default/opaque": opaque, "kube-system/reg": other}
	pod := func(ns string, names ...string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns}}
		for _, n := range names {
			p.Spec.ImagePullSecrets = append(p.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: n})
		}
		return p
	}
	for _, tc := range []struct {
		name        string
		lookup      ConfigLookup
		pod         *corev1.Pod
		wantFound   []*corev1.Secret
		wantMissing []string
	}{
		{"none", lookup, pod("default"), nil, nil},
		{"in order", lookup, pod("default", "old", "reg"), []*corev1.Secret{old, reg}, nil},
		{"own namespace only", lookup, pod("kube-system", "reg", "old"), []*corev1.Secret{other}, []string{"old"}},
		{"opaque is not a pull secret", lookup, pod("default", "opaque", "reg"), []*corev1.Secret{reg}, []string{"opaque"}},
		{"missing", lookup, pod("default", "nope"), nil, []string{"nope"}},
		{"empty name skipped", lookup, pod("default", ""), nil, nil},
		{"nil lookup", nil, pod("default", "reg"), nil, []string{"reg"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			found, missing := PullSecrets(tc.lookup, tc.pod)
			if !reflect.DeepEqual(found, tc.wantFound) || !reflect.DeepEqual(missing, tc.wantMissing) {
				t.Fatalf("PullSecrets = %v, %v; want %v, %v", found, missing, tc.wantFound, tc.wantMissing)
			}
		})
	}
}

// The worker hands the pod's pull secrets to EnsureImage and warns about missing ones.
func TestManagerPassesPullSecrets(t *testing.T) {
	e := newEnv(t, slowBackoff)
	e.m.cfg.Lookup = mapLookup{"default/reg": {ObjectMeta: metav1.ObjectMeta{Name: "reg", Namespace: "default"}, Type: corev1.SecretTypeDockerConfigJson}}
	pod := mgrPod("uid-a", "a", corev1.RestartPolicyAlways, "main")
	pod.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "reg"}, {Name: "gone"}}
	// Always: the image is pulled even when on the node (an IfNotPresent image found on the node
	// before its early create is not asked for again: TestNewPodCreatesFirstContainerWhileSandboxStarts).
	pod.Spec.Containers[0].ImagePullPolicy = corev1.PullAlways
	e.run(t)
	e.m.Update([]*corev1.Pod{pod})
	e.waitRunning(t, "uid-a", "main", 0)
	calls := e.rt.Calls("EnsureImage")
	if len(calls) != 1 || !reflect.DeepEqual(calls[0].Secrets, []string{"reg"}) {
		t.Fatalf("EnsureImage calls = %+v, want one with secrets [reg]", calls)
	}
	var warned bool
	for _, ev := range e.rec.Events("uid-a") {
		if ev.Type == EventWarning && ev.Reason == ReasonFailedToRetrieveImagePullSecret && strings.Contains(ev.Message, "(gone)") {
			warned = true
		}
	}
	if !warned {
		t.Fatalf("no FailedToRetrieveImagePullSecret event: %+v", e.rec.Events("uid-a"))
	}
}
