package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/podkeeper/podkeeper/cgroup"
)

func TestPrintTopPods(t *testing.T) {
	u := func(v uint64) *uint64 { return &v }
	s := &cgroup.Summary{Pods: []cgroup.PodStats{
		{PodRef: cgroup.PodReference{Name: "web-node"}, CPU: &cgroup.CPUStats{UsageNanoCores: u(12_500_000)}, Memory: &cgroup.MemoryStats{WorkingSetBytes: u(5 << 20)},
			Containers: []cgroup.ContainerStats{{Name: "nginx", CPU: &cgroup.CPUStats{UsageNanoCores: u(3_000_000)}, Memory: &cgroup.MemoryStats{WorkingSetBytes: u(3 << 20)}}}},
		{PodRef: cgroup.PodReference{Name: "gone-node"}},
		{PodRef: cgroup.PodReference{Name: "app-node"}, CPU: &cgroup.CPUStats{}, Memory: &cgroup.MemoryStats{WorkingSetBytes: u(1 << 30)}},
	}}
	var b bytes.Buffer
	printTopPods(&b, s, false)
	want := "NAME       CPU(cores)   MEMORY(bytes)\napp-node   <unknown>    1024Mi\nweb-node   12m          5Mi\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	printTopPods(&b, s, true)
	if !strings.Contains(b.String(), "web-node   nginx   3m           3Mi") {
		t.Fatalf("containers view:\n%s", b.String())
	}
}
