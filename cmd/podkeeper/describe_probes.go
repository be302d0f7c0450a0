package main

import (
	"fmt"
	"io"
	"strings"

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
			fmt.Fprintf(w, "    %s:\t%s\n", p.name, probeSummary(p.probe))
		}
	}
}

func probeSummary(p *corev1.Probe) string {
	attrs := fmt.Sprintf("delay=%ds timeout=%ds period=%ds #success=%d #failure=%d",
		p.InitialDelaySeconds, p.TimeoutSeconds, p.PeriodSeconds, p.SuccessThreshold, p.FailureThreshold)
	h := p.ProbeHandler
	switch {
	case h.Exec != nil:
		return fmt.Sprintf("exec [%s] %s", strings.Join(h.Exec.Command, " "), attrs)
	case h.HTTPGet != nil:
		g := h.HTTPGet
		return fmt.Sprintf("http-get %s://%s:%s%s %s", strings.ToLower(string(g.Scheme)), g.Host, g.Port.String(), g.Path, attrs)
	case h.TCPSocket != nil:
		return fmt.Sprintf("tcp-socket %s:%s %s", h.TCPSocket.Host, h.TCPSocket.Port.String(), attrs)
	case h.GRPC != nil:
		svc := ""
		if h.GRPC.Service != nil {
			svc = " " + *h.GRPC.Service
		}
		return fmt.Sprintf("grpc <pod>:%d%s %s", h.GRPC.Port, svc, attrs)
	}
	return "unknown " + attrs
}
