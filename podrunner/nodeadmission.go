package podrunner

import (
	goruntime "runtime"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// The kubelet's node checks at admission, besides resources (Admit): the pod's OS, its node
// selector and required node affinity against the node's labels, and its host ports against
// those of the pods already admitted. A manifest directory shared by several machines can thus
// hold pods for some of them only. All pure.

// Reasons and messages of the kubelet's node checks.
const (
	reasonOSSelector = "PodOSSelectorNodeLabelDoesNotMatch"
	reasonOSField    = "PodOSNotSupported"
	reasonAffinity   = "NodeAffinity"
	reasonPorts      = "NodePorts"
)

// AdmitOS is the kubelet's first check: a pod labelled kubernetes.io/os for another OS than the
// node's, or whose spec.os names another OS, is refused.
func AdmitOS(pod *corev1.Pod) (ok bool, reason, message string) {
	nodeOS := goruntime.GOOS // the kubelet sets the node's label to its own OS, whatever it was
	if want, has := pod.Labels[corev1.LabelOSStable]; has && want != nodeOS {
		return false, reasonOSSelector, "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"
	}
	if pod.Spec.OS != nil && string(pod.Spec.OS.Name) != goruntime.GOOS {
		return false, reasonOSField, "Failed to admit pod as the OS field doesn't match node OS"
	}
	return true, "", ""
}

// AdmitPlacement is the kubelet's check after resources: the pod's nodeSelector and required
// node affinity must match node (its labels and name), and no host port of the pod may be taken
// by an admitted pod (the same protocol and port on the same host IP, 0.0.0.0 meaning every IP).
func AdmitPlacement(pod *corev1.Pod, node *corev1.Node, admitted []*corev1.Pod) (ok bool, reason, message string) {
	if node != nil {
		if match, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); !match {
			return false, reasonAffinity, "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"
		}
	}
	taken := map[hostPort]bool{}
	for _, p := range admitted {
		for _, hp := range hostPorts(p) {
			taken[hp] = true
		}
	}
	for _, hp := range hostPorts(pod) {
		if hostPortTaken(hp, taken) {
			return false, reasonPorts, "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"
		}
	}
	return true, "", ""
}

type hostPort struct {
	ip, protocol string
	port         int32
}

// hostPorts are the host ports pod's containers (init containers too) ask for, defaulted: IP
// 0.0.0.0, protocol TCP.
func hostPorts(pod *corev1.Pod) []hostPort {
	var out []hostPort
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			for _, p := range c.Ports {
				if p.HostPort <= 0 {
					continue
				}
				hp := hostPort{ip: p.HostIP, protocol: string(p.Protocol), port: p.HostPort}
				if hp.ip == "" {
					hp.ip = "0.0.0.0"
				}
				if hp.protocol == "" {
					hp.protocol = string(corev1.ProtocolTCP)
				}
				out = append(out, hp)
			}
		}
	}
	return out
}

// hostPortTaken says whether hp conflicts with one of taken: the same protocol and port, and the
// same IP or either of them 0.0.0.0.
func hostPortTaken(hp hostPort, taken map[hostPort]bool) bool {
	if hp.ip == "0.0.0.0" {
		for t := range taken {
			if t.protocol == hp.protocol && t.port == hp.port {
				return true
			}
		}
		return false
	}
	return taken[hp] || taken[hostPort{ip: "0.0.0.0", protocol: hp.protocol, port: hp.port}]
}
