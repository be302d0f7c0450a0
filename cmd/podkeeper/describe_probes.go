package main

import (
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
)

// describeProbes prints a container's probes as kubectl describe does:
//
//	Liveness:   http-get http://:8080/healthz delay=0s timeout=1s period=10s #success=1 #failure=3
func describeProbes(w io.Writer, c corev1.Container) {
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
	}{{"Liveness", c.LivenessProbe}, {"Readiness", c.ReadinessProbe}, {"Startup", c.StartupProbe}} {
		if p.probe != nil {
			fmt.Fprintf(w, "    %s:\t%s\n", p.name, describeProbe(p.probe))
		}
	}
}
