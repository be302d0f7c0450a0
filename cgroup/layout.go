package cgroup

import (
	"fmt"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Driver names how cgroups are named and who owns them, as runc and the kubelet say it.
type Driver string

const (
	// DriverCgroupfs: plain directories, /<parent>/burstable/pod<uid>/<container>.
	DriverCgroupfs Driver = "cgroupfs"
	// DriverSystemd: slices, <parent>.slice/<parent>-burstable.slice/<parent>-burstable-pod<uid>.slice,
	// containers as scopes "<prefix>-<id>.scope" that runc asks systemd for.
	DriverSystemd Driver = "systemd"
)

// ParseDriver accepts "cgroupfs" and "systemd".
func ParseDriver(s string) (Driver, error) {
	switch Driver(s) {
	case DriverCgroupfs, DriverSystemd:
		return Driver(s), nil
	case "":
		return DriverCgroupfs, nil
	}
	return "", fmt.Errorf("unknown cgroup driver %q (want cgroupfs or systemd)", s)
}

// DefaultParent is the name of podkeeper's top cgroup.
const DefaultParent = "podkeeper"

// Layout names the pod cgroup tree, like the kubelet's cgroupsPerQOS:
//
//	<parent>/                 Guaranteed pods: <parent>/pod<uid>
//	<parent>/burstable/       Burstable pods:  <parent>/burstable/pod<uid>
//	<parent>/besteffort/      BestEffort pods: <parent>/besteffort/pod<uid>
//	<pod cgroup>/<container id>   every container of the pod (the sandbox too)
//
// With the systemd driver every level is a slice whose name repeats its ancestors
// (podkeeper.slice/podkeeper-burstable.slice/podkeeper-burstable-pod<uid>.slice), the way
// systemd spells nesting. Dashes in a UID become underscores there (systemd reads "-" as nesting).
type Layout struct {
	Driver Driver
	Parent string // default "podkeeper"
}

func (l Layout) parent() string {
	if l.Parent == "" {
		return DefaultParent
	}
	return strings.Trim(l.Parent, "/")
}

// qosSegments is the chain of names from the parent to the pod's cgroup, driver-neutral.
func (l Layout) segments(qos corev1.PodQOSClass, uid types.UID) []string {
	segs := []string{l.parent()}
	switch qos {
	case corev1.PodQOSBurstable:
		segs = append(segs, "burstable")
	case corev1.PodQOSBestEffort:
		segs = append(segs, "besteffort")
	}
	if uid != "" {
		segs = append(segs, "pod"+string(uid))
	}
	return segs
}

// dir turns segments into the path below a hierarchy's root ("/podkeeper/burstable/pod<uid>", or
// "/podkeeper.slice/podkeeper-burstable.slice/podkeeper-burstable-pod<uid>.slice").
func (l Layout) dir(segs []string) string {
	if l.Driver != DriverSystemd {
		return "/" + path.Join(segs...)
	}
	var parts []string
	name := ""
	for i, s := range segs {
		s = systemdEscape(s)
		if i == 0 {
			name = s
		} else {
			name += "-" + s
		}
		parts = append(parts, name+".slice")
	}
	return "/" + path.Join(parts...)
}

func systemdEscape(s string) string { return strings.ReplaceAll(s, "-", "_") }

// QOSDir is the path (below the hierarchy root) of a QoS class's cgroup; Guaranteed: the parent.
func (l Layout) QOSDir(qos corev1.PodQOSClass) string { return l.dir(l.segments(qos, "")) }

// PodDir is the path of a pod's cgroup below the hierarchy root.
func (l Layout) PodDir(qos corev1.PodQOSClass, uid types.UID) string {
	return l.dir(l.segments(qos, uid))
}

// ParentDir is the path of podkeeper's top cgroup.
func (l Layout) ParentDir() string { return l.dir([]string{l.parent()}) }

// ContainerCgroupsPath is the OCI spec's linux.cgroupsPath for container id of a pod: an absolute
// path for cgroupfs, "slice:prefix:name" for runc's systemd driver.
func (l Layout) ContainerCgroupsPath(qos corev1.PodQOSClass, uid types.UID, id string) string {
	if l.Driver != DriverSystemd {
		return path.Join(l.PodDir(qos, uid), id)
	}
	segs := l.segments(qos, uid)
	for i := range segs {
		segs[i] = systemdEscape(segs[i])
	}
	return strings.Join(segs, "-") + ".slice:podkeeper:" + id
}

// ContainerDir is where the container's cgroup lies below the hierarchy root.
func (l Layout) ContainerDir(qos corev1.PodQOSClass, uid types.UID, id string) string {
	if l.Driver != DriverSystemd {
		return path.Join(l.PodDir(qos, uid), id)
	}
	return path.Join(l.PodDir(qos, uid), "podkeeper-"+id+".scope")
}
