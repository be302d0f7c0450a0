package cgroup

import (
	"fmt"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Driver names how cgroups are named and created.
type Driver string

const (
	// Cgroupfs: plain directories, `/<parent>/burstable/pod<uid>`; runc creates them.
	Cgroupfs Driver = "cgroupfs"
	// Systemd: slices, `<parent>.slice/<parent>-burstable.slice/<parent>-burstable-pod<uid>.slice`,
	// with containers as runc's `slice:prefix:name` scopes. Needs runc's systemd cgroup mode.
	Systemd Driver = "systemd"
)

// ParseDriver checks a --cgroup-driver value.
func ParseDriver(s string) (Driver, error) {
	switch Driver(s) {
	case Cgroupfs, Systemd:
		return Driver(s), nil
	case "":
		return Cgroupfs, nil
	}
	return "", fmt.Errorf("unknown cgroup driver %q (want cgroupfs or systemd)", s)
}

// Tree names the pod cgroups under one parent, as the kubelet's cgroupsPerQOS does: Guaranteed
// pods directly under the parent, Burstable and BestEffort pods under a QoS level of their own.
type Tree struct {
	Parent string // default "podkeeper"
	Driver Driver
}

func (t Tree) parent() string {
	p := strings.Trim(t.Parent, "/")
	if p == "" {
		p = "podkeeper"
	}
	return p
}

// qosLevel is the QoS cgroup's name part: "" for Guaranteed.
func qosLevel(q corev1.PodQOSClass) string {
	switch q {
	case corev1.PodQOSBurstable:
		return "burstable"
	case corev1.PodQOSBestEffort:
		return "besteffort"
	}
	return ""
}

// systemdEscape makes a name usable inside a slice name ('-' separates levels).
func systemdEscape(s string) string { return strings.ReplaceAll(s, "-", "_") }

// PodPath is the pod's cgroup relative to the hierarchy root, e.g. /podkeeper/burstable/pod<uid>
// (cgroupfs) or /podkeeper.slice/podkeeper-burstable.slice/podkeeper-burstable-pod<uid>.slice
// (systemd, the uid's dashes as underscores).
func (t Tree) PodPath(uid string, q corev1.PodQOSClass) string {
	p, level := t.parent(), qosLevel(q)
	if t.Driver == Systemd {
		slices := []string{p + ".slice"}
		name := p
		if level != "" {
			name += "-" + level
			slices = append(slices, name+".slice")
		}
		slices = append(slices, name+"-pod"+systemdEscape(uid)+".slice")
		return "/" + path.Join(slices...)
	}
	if level == "" {
		return "/" + path.Join(p, "pod"+uid)
	}
	return "/" + path.Join(p, level, "pod"+uid)
}

// QOSPath is a QoS level's cgroup ("" for Guaranteed: the parent itself).
func (t Tree) QOSPath(q corev1.PodQOSClass) string {
	p, level := t.parent(), qosLevel(q)
	if t.Driver == Systemd {
		if level == "" {
			return "/" + p + ".slice"
		}
		return "/" + path.Join(p+".slice", p+"-"+level+".slice")
	}
	return "/" + path.Join(p, level)
}

// ContainerCgroupsPath is the OCI linux.cgroupsPath of a container (or sandbox) of the pod:
// `<pod path>/<id>` for cgroupfs, `<pod slice>:<parent>:<id>` for systemd.
func (t Tree) ContainerCgroupsPath(uid string, q corev1.PodQOSClass, id string) string {
	pod := t.PodPath(uid, q)
	if t.Driver == Systemd {
		return path.Base(pod) + ":" + t.parent() + ":" + id
	}
	return path.Join(pod, id)
}

// AllPodPaths is every place the pod's cgroup can be (one per QoS class): a pod whose spec is
// gone is cleaned up without knowing its class.
func (t Tree) AllPodPaths(uid string) []string {
	return []string{
		t.PodPath(uid, corev1.PodQOSGuaranteed),
		t.PodPath(uid, corev1.PodQOSBurstable),
		t.PodPath(uid, corev1.PodQOSBestEffort),
	}
}
