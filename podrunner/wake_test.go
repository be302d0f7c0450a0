package podrunner

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNeedsWake(t *testing.T) {
	base := func() *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "default", UID: "u1", Annotations: map[string]string{"k": "v"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}
	}
	withVolume := base()
	withVolume.Spec.Volumes = []corev1.Volume{{Name: "cfg"}}
	annotated := base()
	annotated.Annotations[AnnotationManifestError] = "bad"
	spec := base()
	spec.Spec.Containers[0].Args = []string{"x"}
	same := base()
	cases := []struct {
		name      string
		old, next *corev1.Pod
		want      bool
	}{
		{"no pod yet", nil, base(), true},
		{"same pointer", same, same, false},
		{"equal copy from a new snapshot", base(), base(), false},
		{"annotation changed (manifest error)", base(), annotated, true},
		{"spec changed", base(), spec, true},
		{"pod with volumes always syncs (ConfigMap content)", withVolume, withVolume, true},
		{"pod with volumes, new snapshot", withVolume, func() *corev1.Pod { p := base(); p.Spec.Volumes = withVolume.Spec.Volumes; return p }(), true},
	}
	for _, c := range cases {
		if got := needsWake(c.old, c.next); got != c.want {
			t.Errorf("%s: needsWake = %v, want %v", c.name, got, c.want)
		}
	}
}
