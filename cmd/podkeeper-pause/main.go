// Command podkeeper-pause is the process of the pod sandboxes that need one (shareProcessNamespace,
// pods without CNI, hostNetwork with hostIPC, or every pod with --always-pause): it holds the
// pod's namespaces (network, IPC, UTS) for the pod's containers to join, reaps zombies when it is
// PID 1 of a shared PID namespace, and exits on SIGTERM or SIGINT. It must stay tiny: it runs once
// per such pod.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sigs {
		if s == syscall.SIGCHLD {
			reap()
			continue
		}
		os.Exit(0)
	}
}

// reap collects every exited child so none lingers as a zombie.
func reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
