package runtime

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// emptyDir volumes of medium HugePages or HugePages-<size> are hugetlbfs mounts, as the
// kubelet makes them (they were plain directories on disk).

// hugePagesMedium says whether an emptyDir medium asks for huge pages.
func hugePagesMedium(m corev1.StorageMedium) bool {
	return m == corev1.StorageMediumHugePages || strings.HasPrefix(string(m), string(corev1.StorageMediumHugePagesPrefix))
}

// hugePageSize is the page size of a HugePages emptyDir of pod, as the kubelet picks it (pure):
// medium HugePages-<size> needs a hugepages-<size> request in the pod; plain HugePages takes the
// one size the pod requests (pod-level or any container's), and more than one size is an error.
func hugePageSize(medium corev1.StorageMedium, pod *corev1.Pod) (resource.Quantity, error) {
	var want *resource.Quantity
	if medium != corev1.StorageMediumHugePages {
		q, err := resource.ParseQuantity(strings.TrimPrefix(string(medium), string(corev1.StorageMediumHugePagesPrefix)))
		if err != nil {
			return resource.Quantity{}, fmt.Errorf("medium %s: bad page size: %w", medium, err)
		}
		want = &q
	}
	lists := []corev1.ResourceList{}
	if pod.Spec.Resources != nil {
		lists = append(lists, pod.Spec.Resources.Requests)
	}
	for _, c := range append(append([]corev1.Container{}, pod.Spec.Containers...), pod.Spec.InitContainers...) {
		lists = append(lists, c.Resources.Requests, c.Resources.Limits)
	}
	var found *resource.Quantity
	for _, l := range lists {
		for name := range l {
			sz, ok := strings.CutPrefix(string(name), corev1.ResourceHugePagesPrefix)
			if !ok {
				continue
			}
			q, err := resource.ParseQuantity(sz)
			if err != nil {
				return resource.Quantity{}, fmt.Errorf("resource %s: %w", name, err)
			}
			switch {
			case want != nil:
				if q.Cmp(*want) == 0 {
					found = &q
				}
			case found != nil && found.Cmp(q) != 0:
				return resource.Quantity{}, fmt.Errorf("medium: %s can't be used if container requests multiple huge page sizes", medium)
			default:
				found = &q
			}
		}
	}
	if found == nil {
		return resource.Quantity{}, fmt.Errorf("medium %s: hugePages storage requested, but there is no resource request for huge pages", medium)
	}
	return *found, nil
}

// ensureHugetlbfs mounts hugetlbfs with page size at dir (made when missing) unless mounted.
func ensureHugetlbfs(dir string, size resource.Quantity) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if isMountPoint(dir) {
		return nil
	}
	if err := unix.Mount("nodev", dir, "hugetlbfs", unix.MS_NOSUID|unix.MS_NODEV, "pagesize="+size.String()); err != nil {
		return fmt.Errorf("mount hugetlbfs (pagesize=%s) on %s: %w", size.String(), dir, err)
	}
	return nil
}
