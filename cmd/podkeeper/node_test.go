package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkeeper/podkeeper/podrunner"
)

func TestParseResourceList(t *testing.T) {
	l, err := parseResourceList("system-reserved", "cpu=500m, memory=512Mi")
	if err != nil {
		t.Fatal(err)
	}
	if c := l[corev1.ResourceCPU]; c.MilliValue() != 500 {
		t.Errorf("cpu = %s", c.String())
	}
	if m := l[corev1.ResourceMemory]; m.Value() != 512<<20 {
		t.Errorf("memory = %s", m.String())
	}
	for _, bad := range []string{"cpu", "gpu=1", "cpu=lots", "memory=-1Gi"} {
		if _, err := parseResourceList("kube-reserved", bad); err == nil || !strings.Contains(err.Error(), "--kube-reserved") {
			t.Errorf("%q: error %v, want one naming the flag", bad, err)
		}
	}
	if l, err := parseResourceList("x", ""); err != nil || len(l) != 0 {
		t.Errorf("empty: %v %v", l, err)
	}
}

func TestDescribeNode(t *testing.T) {
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("110")}
	alloc := podrunner.Allocatable(capacity, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("924Mi")}, corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("100Mi")})
	b := &lateBackend{node: "edge1"}
	b.setNode(capacity, alloc)
	n, err := b.Node()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-edge1", Namespace: "default", CreationTimestamp: metav1.NewTime(now.Add(-time.Minute))},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("750m"), corev1.ResourceMemory: resource.MustParse("300Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("600Mi")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	var out bytes.Buffer
	describeNode(&out, n, []corev1.Pod{pod}, now)
	s := out.String()
	for _, want := range []string{
		"Name:               edge1",
		"MemoryPressure  False",
		"KubeletHasSufficientMemory",
		"Allocatable:\n  cpu:     1500m\n  memory:  3Gi\n  pods:    110\n",
		"Non-terminated Pods:          (1 in total)",
		"default    web-edge1  750m (50%)    0 (0%)      300Mi (9%)       600Mi (19%)    1m0s",
		"cpu       750m (50%)  0 (0%)",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("describe node lacks %q:\n%s", want, s)
		}
	}
}

func TestNodeLabels(t *testing.T) {
	l, err := nodeLabels("edge-1", "role=gateway, example.com/zone=a")
	if err != nil || l["role"] != "gateway" || l["example.com/zone"] != "a" || l["kubernetes.io/hostname"] != "edge-1" || l["kubernetes.io/os"] == "" || l["kubernetes.io/arch"] == "" {
		t.Fatalf("labels %v, %v", l, err)
	}
	for _, bad := range []string{"role", "bad key=x", "role=not valid!", "kubernetes.io/os=windows", "kubernetes.io/hostname=other"} {
		if _, err := nodeLabels("edge-1", bad); err == nil {
			t.Errorf("--node-labels %q accepted", bad)
		}
	}
	if _, err := nodeLabels("edge-1", "kubernetes.io/hostname=edge-1"); err != nil {
		t.Errorf("restating the hostname label: %v", err)
	}
}
