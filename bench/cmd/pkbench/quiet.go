package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// A runner's pods can be gone from its API while its teardown still runs in the background:
// the kubelet's containerd stops and removes sandboxes (CNI DEL: a dozen plugin and iptables
// execs) after /pods no longer lists the pod. Before each start (single pods and batches) the
// machine is let become quiet again, so that no runner is billed for another's teardown.

const (
	quietBusy   = 0.20                   // busy fraction of all CPUs under which the machine is quiet
	quietWindow = 100 * time.Millisecond // one reading
	quietMax    = 5 * time.Second        // give up waiting after this (single-pod runs)
	quietBatch  = 60 * time.Second       // the same before a batch (a 300-pod teardown lingers longer)
)

// cpuTimes is /proc/stat's aggregate cpu line: busy and total jiffies.
type cpuTimes struct{ busy, total uint64 }

// parseCPUTimes reads the first ("cpu ") line of /proc/stat's content: idle and iowait are idle,
// everything else is busy.
func parseCPUTimes(stat string) (cpuTimes, error) {
	line, _, _ := strings.Cut(stat, "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return cpuTimes{}, fmt.Errorf("not a /proc/stat cpu line: %q", line)
	}
	var t cpuTimes
	for i, s := range f[1:] {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return cpuTimes{}, fmt.Errorf("/proc/stat field %d: %w", i+1, err)
		}
		t.total += v
		if i != 3 && i != 4 { // idle, iowait
			t.busy += v
		}
	}
	return t, nil
}

// busyBetween is the busy fraction of the CPUs between two readings (0 when no time passed).
func busyBetween(a, b cpuTimes) float64 {
	if b.total <= a.total {
		return 0
	}
	return float64(b.busy-a.busy) / float64(b.total-a.total)
}

func readCPUTimes() (cpuTimes, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}, err
	}
	return parseCPUTimes(string(b))
}

// waitQuiet returns once a quietWindow passes with the CPUs less than quietBusy busy (or after
// max), with how long it waited.
func waitQuiet(ctx context.Context, max time.Duration) (time.Duration, error) {
	t0 := time.Now()
	prev, err := readCPUTimes()
	if err != nil {
		return 0, err
	}
	for time.Since(t0) < max {
		if err := pause(ctx, quietWindow); err != nil {
			return 0, err
		}
		cur, err := readCPUTimes()
		if err != nil {
			return 0, err
		}
		if busyBetween(prev, cur) < quietBusy {
			return time.Since(t0), nil
		}
		prev = cur
	}
	return time.Since(t0), nil
}
