package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, 100 on every Linux this runs on.
const clockTicks = 100

// procMem is one process's resident memory in KiB.
type procMem struct{ RSS, PSS int64 }

// memOf reads VmRSS and Pss (smaps_rollup) of pid; zero when the process is gone.
func memOf(pid int) procMem {
	var m procMem
	if b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status")); err == nil {
		m.RSS = kbField(b, "VmRSS:")
	}
	if b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "smaps_rollup")); err == nil {
		m.PSS = kbField(b, "Pss:")
	}
	return m
}

func kbField(b []byte, key string) int64 {
	for _, l := range bytes.Split(b, []byte("\n")) {
		if bytes.HasPrefix(l, []byte(key)) {
			f := strings.Fields(string(l[len(key):]))
			if len(f) > 0 {
				v, _ := strconv.ParseInt(f[0], 10, 64)
				return v
			}
		}
	}
	return 0
}

// cpuTicks is utime+stime of pid in clock ticks.
func cpuTicks(pid int) int64 {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	// The command name is in parentheses and may hold spaces: fields count from after ")".
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

// cmdline returns the NUL-separated arguments of pid.
func cmdline(pid int) []string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

// findProcs returns the PIDs whose argument list satisfies match.
func findProcs(match func(args []string) bool) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if a := cmdline(pid); a != nil && match(a) {
			out = append(out, pid)
		}
	}
	return out
}

// shimsOf lists the runc v2 shims serving containerd namespace ns of the containerd at address.
func shimsOf(address, ns string) []int {
	return findProcs(func(a []string) bool {
		if !strings.HasSuffix(a[0], "containerd-shim-runc-v2") {
			return false
		}
		var nsOK, addrOK bool
		for i := 0; i+1 < len(a); i++ {
			switch a[i] {
			case "-namespace":
				nsOK = a[i+1] == ns
			case "-address":
				addrOK = a[i+1] == address
			}
		}
		return nsOK && addrOK
	})
}

// sumMem adds up the memory of pids.
func sumMem(pids []int) procMem {
	var t procMem
	for _, p := range pids {
		m := memOf(p)
		t.RSS += m.RSS
		t.PSS += m.PSS
	}
	return t
}

func sumTicks(pids []int) int64 {
	var t int64
	for _, p := range pids {
		t += cpuTicks(p)
	}
	return t
}
