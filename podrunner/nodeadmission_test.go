package podrunner

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAdmitOS(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mut    func(*corev1.Pod)
		reason string
	}{
		{"nothing asked", func(*corev1.Pod) {}, ""},
		{"spec.os linux", func(p *corev1.Pod) { p.Spec.OS = &corev1.PodOS{Name: corev1.Linux} }, ""},
		{"spec.os windows", func(p *corev1.Pod) { p.Spec.OS = &corev1.PodOS{Name: corev1.Windows} }, "PodOSNotSupported"},
		{"os label windows", func(p *corev1.Pod) { p.Labels = map[string]string{corev1.LabelOSStable: "windows"} }, "PodOSSelectorNodeLabelDoesNotMatch"},
		{"os label linux", func(p *corev1.Pod) { p.Labels = map[string]string{corev1.LabelOSStable: "linux"} }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mgrPod("u", "p", corev1.RestartPolicyAlways, "c")
			tc.mut(p)
			ok, reason, msg := AdmitOS(p)
			if ok != (tc.reason == "") || reason != tc.reason || (!ok && msg == "") {
				t.Errorf("got %v %q %q, want reason %q", ok, reason, msg, tc.reason)
			}
		})
	}
}

func TestAdmitPlacement(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "edge-1", Labels: map[string]string{"kubernetes.io/hostname": "edge-1", "role": "gateway", "zone": "a"}}}
	term := func(exprs ...corev1.NodeSelectorRequirement) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: exprs}
	}
	affinity := func(terms ...corev1.NodeSelectorTerm) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
		}
	}
	req := func(key string, op corev1.NodeSelectorOperator, vals ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: vals}
	}
	port := func(hostIP string, proto corev1.Protocol, n int32) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, corev1.ContainerPort{ContainerPort: 80, HostPort: n, HostIP: hostIP, Protocol: proto})
		}
	}
	pod := func(muts ...func(*corev1.Pod)) *corev1.Pod {
		p := mgrPod("u", "p", corev1.RestartPolicyAlways, "c")
		for _, m := range muts {
			m(p)
		}
		return p
	}
	for _, tc := range []struct {
		name     string
		pod      *corev1.Pod
		admitted []*corev1.Pod
		reason   string
	}{
		{"no placement asked", pod(), nil, ""},
		{"nodeSelector matches", pod(func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"role": "gateway"} }), nil, ""},
		{"nodeSelector does not", pod(func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"role": "db"} }), nil, "NodeAffinity"},
		{"nodeSelector key missing", pod(func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"gpu": "true"} }), nil, "NodeAffinity"},
		{"affinity In", pod(affinity(term(req("zone", corev1.NodeSelectorOpIn, "a", "b")))), nil, ""},
		{"affinity NotIn", pod(affinity(term(req("zone", corev1.NodeSelectorOpNotIn, "a")))), nil, "NodeAffinity"},
		{"terms are ORed", pod(affinity(term(req("zone", corev1.NodeSelectorOpIn, "z")), term(req("role", corev1.NodeSelectorOpExists)))), nil, ""},
		{"expressions are ANDed", pod(affinity(term(req("zone", corev1.NodeSelectorOpIn, "a"), req("gpu", corev1.NodeSelectorOpExists)))), nil, "NodeAffinity"},
		{"matchFields metadata.name", pod(affinity(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{req("metadata.name", corev1.NodeSelectorOpIn, "edge-2")}})), nil, "NodeAffinity"},
		{"host port free", pod(port("", "", 8080)), []*corev1.Pod{pod(port("", "", 8081))}, ""},
		{"host port taken", pod(port("", "", 8080)), []*corev1.Pod{pod(port("", "", 8080))}, "NodePorts"},
		{"same port, other protocol", pod(port("", corev1.ProtocolUDP, 8080)), []*corev1.Pod{pod(port("", "", 8080))}, ""},
		{"same port, other IPs", pod(port("10.0.0.1", "", 8080)), []*corev1.Pod{pod(port("10.0.0.2", "", 8080))}, ""},
		{"0.0.0.0 takes every IP", pod(port("10.0.0.1", "", 8080)), []*corev1.Pod{pod(port("0.0.0.0", "", 8080))}, "NodePorts"},
		{"every IP wants a taken one", pod(port("", "", 8080)), []*corev1.Pod{pod(port("10.0.0.2", "", 8080))}, "NodePorts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, reason, msg := AdmitPlacement(tc.pod, node, tc.admitted)
			if ok != (tc.reason == "") || reason != tc.reason || (!ok && msg == "") {
				t.Errorf("got %v %q %q, want reason %q", ok, reason, msg, tc.reason)
			}
		})
	}
}
