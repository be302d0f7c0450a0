package podrunner

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Local ephemeral storage limits (pure), as the kubelet's local storage capacity isolation
// enforces them: apart from any node pressure, a pod is evicted when a disk-backed emptyDir holds
// more than its sizeLimit, when the pod's ephemeral storage (its containers' writable layers and
// logs, and its local volumes) exceeds the sum of its containers' ephemeral-storage limits, or when
// one container's writable layer and logs exceed that container's limit, checked in that order.

// The kubelet's eviction signals (its metrics' eviction_signal label) of the three limits.
const (
	SignalEmptyDirFsLimit           Signal = "emptydirfs.limit"
	SignalEphemeralPodFsLimit       Signal = "ephemeralpodfs.limit"
	SignalEphemeralContainerFsLimit Signal = "ephemeralcontainerfs.limit"
)

// EvictionGrace is the grace period of an evicted pod, for node pressure or a local storage
// limit: the kubelet's immediate eviction (1 s; its soft evictions come to the same under the
// default evictionMaxPodGracePeriod of 0, raised to its pod worker's least grace, 1 s). Its
// containers get their preStop hooks for up to 1 s, then the stop signal and minStopGrace.
const EvictionGrace = time.Second

// LocalStorageUsage is what a pod wrote, in bytes, as the limits count it.
type LocalStorageUsage struct {
	EmptyDirs  map[string]int64 // per disk-backed emptyDir volume, by volume name
	Containers map[string]int64 // writable layer + logs, per running container
	Volumes    int64            // every local volume and generated file of the pod (emptyDirs included)
}

// Total is the pod's ephemeral storage: its containers and its local volumes.
func (u LocalStorageUsage) Total() int64 {
	t := u.Volumes
	for _, c := range u.Containers {
		t += c
	}
	return t
}

// HasLocalStorageLimit reports whether pod sets any limit LocalStorageViolation checks, so that
// its usage needs reading at all.
func HasLocalStorageLimit(pod *corev1.Pod) bool {
	if _, ok := podEphemeralLimit(pod); ok {
		return true
	}
	for _, v := range pod.Spec.Volumes {
		if diskEmptyDirLimit(v) != nil {
			return true
		}
	}
	return false
}

// LocalStorageViolation returns the first local storage limit pod exceeds with usage u, with the
// kubelet's eviction message, or ok false. emptyDir volumes are checked first (in spec order), then
// the pod's total, then each container (app containers, then sidecars, in spec order); a volume or
// container whose usage is unknown (missing from u) is not checked. A memory-backed emptyDir is
// never checked: its tmpfs is sized by its sizeLimit, the kernel enforces it.
func LocalStorageViolation(pod *corev1.Pod, u LocalStorageUsage) (s Signal, message string, ok bool) {
	for _, v := range pod.Spec.Volumes {
		limit := diskEmptyDirLimit(v)
		if limit == nil {
			continue
		}
		if used, known := u.EmptyDirs[v.Name]; known && used > limit.Value() {
			return SignalEmptyDirFsLimit, fmt.Sprintf("Usage of EmptyDir volume %q exceeds the limit %q. ", v.Name, limit.String()), true
		}
	}
	if limit, has := podEphemeralLimit(pod); has && u.Total() > limit.Value() {
		return SignalEphemeralPodFsLimit, fmt.Sprintf("Pod ephemeral local storage usage exceeds the total limit of containers %s. ", limit.String()), true
	}
	check := func(c corev1.Container) (Signal, string, bool) {
		limit, has := c.Resources.Limits[corev1.ResourceEphemeralStorage]
		if !has || limit.IsZero() {
			return "", "", false
		}
		if used, known := u.Containers[c.Name]; known && used > limit.Value() {
			return SignalEphemeralContainerFsLimit, fmt.Sprintf("Container %s exceeded its local ephemeral storage limit %q. ", c.Name, limit.String()), true
		}
		return "", "", false
	}
	for _, c := range pod.Spec.Containers {
		if s, msg, ok := check(c); ok {
			return s, msg, true
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if IsSidecar(&c) {
			if s, msg, ok := check(c); ok {
				return s, msg, true
			}
		}
	}
	return "", "", false
}

// diskEmptyDirLimit is a disk-backed emptyDir's positive sizeLimit, else nil (Memory and
// HugePages media are not on disk).
func diskEmptyDirLimit(v corev1.Volume) *resource.Quantity {
	e := v.EmptyDir
	if e == nil || e.Medium != corev1.StorageMediumDefault || e.SizeLimit == nil || e.SizeLimit.Sign() <= 0 {
		return nil
	}
	return e.SizeLimit
}

// podEphemeralLimit is the pod's ephemeral-storage limit as the kubelet computes pod limits: the
// sum over its app containers and sidecars, or a regular init container's limit plus the sidecars
// started before it when that is larger, plus the pod overhead; has is false when no container
// sets the limit. Containers without a limit add nothing.
func podEphemeralLimit(pod *corev1.Pod) (q resource.Quantity, has bool) {
	add := func(to *resource.Quantity, c corev1.Container) {
		if l, ok := c.Resources.Limits[corev1.ResourceEphemeralStorage]; ok {
			to.Add(l)
			has = true
		}
	}
	var sum, sidecars, initMax resource.Quantity
	for _, c := range pod.Spec.Containers {
		add(&sum, c)
	}
	for _, c := range pod.Spec.InitContainers {
		if IsSidecar(&c) {
			add(&sum, c)
			add(&sidecars, c)
			continue
		}
		own := sidecars.DeepCopy()
		add(&own, c)
		if own.Cmp(initMax) > 0 {
			initMax = own
		}
	}
	if initMax.Cmp(sum) > 0 {
		sum = initMax
	}
	if has {
		if o, ok := pod.Spec.Overhead[corev1.ResourceEphemeralStorage]; ok {
			sum.Add(o)
		}
	}
	return sum, has
}
