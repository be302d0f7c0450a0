package podrunner

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func fmtList(l corev1.ResourceList) string {
	if l == nil {
		return "-"
	}
	s := ""
	for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		if q, ok := l[n]; ok {
			s += string(n) + "=" + q.String() + " "
		}
	}
	return s
}

func TestStatusResources(t *testing.T) {
	ctr := func(req, lim corev1.ResourceList) corev1.Container {
		return corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}
	}
	cases := []struct {
		name                string
		init                []corev1.Container
		containers          []corev1.Container
		ctrAlloc, podAlloc  string
		podLimits, ctrLimit string
	}{
		{"none", nil, []corev1.Container{ctr(nil, nil)}, "-", "-", "-", "-"},
		{"guaranteed", nil, []corev1.Container{ctr(rl("cpu", "100m", "memory", "64Mi"), rl("cpu", "100m", "memory", "64Mi"))},
			"cpu=100m memory=64Mi ", "cpu=100m memory=64Mi ", "cpu=100m memory=64Mi ", "cpu=100m memory=64Mi "},
		{"limit only: request defaults to it", nil, []corev1.Container{ctr(nil, rl("memory", "24Mi"))},
			"memory=24Mi ", "memory=24Mi ", "memory=24Mi ", "memory=24Mi "},
		{"ephemeral storage is not reported", nil, []corev1.Container{ctr(rl("cpu", "50m", "ephemeral-storage", "1Gi"), nil)},
			"cpu=50m ", "cpu=50m ", "-", "-"},
		{"pod limits only when every container has one", nil,
			[]corev1.Container{ctr(rl("cpu", "50m"), rl("cpu", "100m", "memory", "10Mi")), ctr(rl("cpu", "50m"), rl("cpu", "200m"))},
			"cpu=50m memory=10Mi ", "cpu=100m memory=10Mi ", "cpu=300m ", "cpu=100m memory=10Mi "},
		{"cpu finer than a millicore is shown rounded up (edge-cpu-micro)", nil,
			[]corev1.Container{ctr(rl("cpu", "100u"), rl("cpu", "1500u"))}, "cpu=1m ", "cpu=1m ", "cpu=2m ", "cpu=2m "},
		{"a memory limit of 0: the request defaults to it and the pod's total keeps it (edge-limits-only-memory-zero)", nil,
			[]corev1.Container{ctr(nil, rl("memory", "0"))}, "memory=0 ", "memory=0 ", "memory=0 ", "memory=0 "},
		{"a larger init container sets the pod's requests", []corev1.Container{ctr(rl("cpu", "500m"), nil)},
			[]corev1.Container{ctr(rl("cpu", "100m"), nil)}, "cpu=100m ", "cpu=500m ", "-", "-"},
	}
	for _, c := range cases {
		pod := &corev1.Pod{Spec: corev1.PodSpec{InitContainers: c.init, Containers: c.containers}}
		alloc, res := containerStatusResources(&pod.Spec.Containers[0])
		if got := fmtList(alloc); got != c.ctrAlloc {
			t.Errorf("%s: container allocated %q, want %q", c.name, got, c.ctrAlloc)
		}
		lim := "-"
		if res != nil {
			lim = fmtList(res.Limits)
		}
		if lim != c.ctrLimit {
			t.Errorf("%s: container limits %q, want %q", c.name, lim, c.ctrLimit)
		}
		palloc, pres := podStatusResources(pod, corev1.PodRunning)
		if got := fmtList(palloc); got != c.podAlloc {
			t.Errorf("%s: pod allocated %q, want %q", c.name, got, c.podAlloc)
		}
		plim := "-"
		if pres != nil {
			plim = fmtList(pres.Limits)
		}
		if plim != c.podLimits {
			t.Errorf("%s: pod limits %q, want %q", c.name, plim, c.podLimits)
		}
	}
}

// While a pod does not run (Pending, Succeeded, Failed) the kubelet reports its limits from its
// resource helper, not from the pod cgroup: an init container's limit counts and a container
// without a limit adds nothing. Found by the conformance scenario init-oom (an init container with
// a 24Mi limit, an app without one, the pod Failed: the kubelet reports 24Mi, podkeeper reported
// none).
func TestStatusResourcesNotRunning(t *testing.T) {
	ctr := func(name string, req, lim corev1.ResourceList) corev1.Container {
		return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}
	}
	always := corev1.ContainerRestartPolicyAlways
	sidecar := ctr("side", nil, rl("memory", "8Mi"))
	sidecar.RestartPolicy = &always
	cases := []struct {
		name      string
		spec      corev1.PodSpec
		podLimits string
	}{
		{"an init container's limit, an app without", corev1.PodSpec{InitContainers: []corev1.Container{ctr("i", nil, rl("memory", "24Mi"))},
			Containers: []corev1.Container{ctr("c", nil, nil)}}, "memory=24Mi "},
		{"the apps' sum when larger, counting only the limits there are", corev1.PodSpec{InitContainers: []corev1.Container{ctr("i", nil, rl("memory", "24Mi"))},
			Containers: []corev1.Container{ctr("a", nil, rl("memory", "20Mi", "cpu", "1")), ctr("b", nil, rl("memory", "10Mi"))}}, "cpu=1 memory=30Mi "},
		{"sidecars add to the apps and to the init containers after them", corev1.PodSpec{InitContainers: []corev1.Container{sidecar, ctr("i", nil, rl("memory", "24Mi"))},
			Containers: []corev1.Container{ctr("c", nil, rl("memory", "10Mi"))}}, "memory=32Mi "},
		{"pod-level limits win, overhead added", corev1.PodSpec{Containers: []corev1.Container{ctr("c", nil, rl("memory", "10Mi"))},
			Resources: &corev1.ResourceRequirements{Limits: rl("memory", "64Mi")}, Overhead: rl("memory", "1Mi", "cpu", "100m")}, "memory=65Mi "},
		{"no limits", corev1.PodSpec{Containers: []corev1.Container{ctr("c", rl("cpu", "10m"), nil)}}, "-"},
	}
	for _, c := range cases {
		for _, phase := range []corev1.PodPhase{corev1.PodPending, corev1.PodFailed, corev1.PodSucceeded} {
			_, res := podStatusResources(&corev1.Pod{Spec: c.spec}, phase)
			got := "-"
			if res != nil {
				got = fmtList(res.Limits)
			}
			if got != c.podLimits {
				t.Errorf("%s (%s): pod limits %q, want %q", c.name, phase, got, c.podLimits)
			}
		}
	}
}
