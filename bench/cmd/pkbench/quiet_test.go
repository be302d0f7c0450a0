package main

import (
	"math"
	"testing"
)

func TestParseCPUTimes(t *testing.T) {
	// user nice system idle iowait irq softirq steal guest guest_nice
	got, err := parseCPUTimes("cpu  100 5 50 800 20 3 2 0 0 0\ncpu0 50 2 25 400 10 1 1 0 0 0\n")
	if err != nil {
		t.Fatal(err)
	}
	if got.busy != 160 || got.total != 980 {
		t.Fatalf("got %+v, want busy 160 of 980", got)
	}
	for _, bad := range []string{"", "cpu0 1 2 3 4 5", "cpu 1 2 x 4 5", "intr 1 2 3 4 5"} {
		if _, err := parseCPUTimes(bad); err == nil {
			t.Errorf("parseCPUTimes(%q) accepted", bad)
		}
	}
	if b := busyBetween(cpuTimes{100, 1000}, cpuTimes{150, 1200}); math.Abs(b-0.25) > 1e-9 {
		t.Errorf("busyBetween = %v, want 0.25", b)
	}
	if b := busyBetween(cpuTimes{100, 1000}, cpuTimes{100, 1000}); b != 0 {
		t.Errorf("busyBetween with no time = %v, want 0", b)
	}
}
