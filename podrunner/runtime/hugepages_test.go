package runtime

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestHugePageSize(t *testing.T) {
	pod := func(req ...string) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{}}}}}}
		for _, r := range req {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceName(r)] = resource.MustParse("4Mi")
		}
		return p
	}
	for _, tc := range []struct {
		name   string
		medium corev1.StorageMedium
		pod    *corev1.Pod
		want   string // page size, or "" for an error
	}{
		{"HugePages takes the one size requested", "HugePages", pod("hugepages-2Mi", "memory"), "2Mi"},
		{"HugePages-1Gi with that request", "HugePages-1Gi", pod("hugepages-2Mi", "hugepages-1Gi"), "1Gi"},
		{"HugePages with two sizes", "HugePages", pod("hugepages-2Mi", "hugepages-1Gi"), ""},
		{"HugePages-2Mi without the request", "HugePages-2Mi", pod("hugepages-1Gi"), ""},
		{"no hugepages request", "HugePages", pod("memory"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := hugePageSize(tc.medium, tc.pod)
			if tc.want == "" {
				if err == nil {
					t.Errorf("got %s, want an error", got.String())
				}
				return
			}
			if err != nil || got.String() != tc.want {
				t.Errorf("got %s %v, want %s", got.String(), err, tc.want)
			}
		})
	}
}

// A HugePages emptyDir is a hugetlbfs mount (it was a plain directory).
func TestHugePagesEmptyDirIsHugetlbfs(t *testing.T) {
	root := t.TempDir()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hp", Namespace: "default", UID: "hp-uid"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{"hugepages-2Mi": resource.MustParse("2Mi")}}}}}}
	v := &corev1.Volume{Name: "hp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumHugePages}}}
	dir, _, err := prepareVolume(root, pod, v, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unmountUnder(filepath.Join(root, "pods")) })
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil || fs.Type != unix.HUGETLBFS_MAGIC || fs.Bsize != 2<<20 {
		t.Errorf("%s: statfs type %x block size %d (%v), want hugetlbfs with 2 MiB pages", dir, fs.Type, fs.Bsize, err)
	}
	// Prepared again (a container restart): still the one mount.
	if _, _, err := prepareVolume(root, pod, v, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
}
