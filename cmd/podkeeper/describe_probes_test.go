package main

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestProbeSummary(t *testing.T) {
	svc := "db"
	cases := []struct {
		p    corev1.Probe
		want string
	}{
		{corev1.Probe{PeriodSeconds: 10, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3,
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Scheme: "HTTP", Path: "/healthz", Port: intstr.FromInt32(8080)}}},
			"http-get http://:8080/healthz delay=0s timeout=1s period=10s #success=1 #failure=3"},
		{corev1.Probe{InitialDelaySeconds: 5, PeriodSeconds: 5, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3,
			ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/healthy"}}}},
			"exec [cat /tmp/healthy] delay=5s timeout=1s period=5s #success=1 #failure=3"},
		{corev1.Probe{PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 30,
			ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("web")}}},
			"tcp-socket :web delay=0s timeout=1s period=1s #success=1 #failure=30"},
		{corev1.Probe{PeriodSeconds: 1, TimeoutSeconds: 2, SuccessThreshold: 1, FailureThreshold: 3,
			ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090, Service: &svc}}},
			"grpc <pod>:9090 db delay=0s timeout=2s period=1s #success=1 #failure=3"},
	}
	for _, tc := range cases {
		if got := describeProbe(&tc.p); got != tc.want {
			t.Errorf("describeProbe = %q, want %q", got, tc.want)
		}
	}
}
