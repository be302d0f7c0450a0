package manifests

import (
	"strings"
	"testing"
)

func TestProbeDefaults(t *testing.T) {
	data := pod("a") + "    readinessProbe:\n      httpGet:\n        port: 8080\n    livenessProbe:\n      tcpSocket:\n        port: 8080\n      periodSeconds: 1\n"
	pods, err := DecodeFile("/etc/pods/x.yaml", []byte(data), "node1")
	if err != nil {
		t.Fatal(err)
	}
	c := pods[0].Spec.Containers[0]
	r, l := c.ReadinessProbe, c.LivenessProbe
	if r.PeriodSeconds != 10 || r.TimeoutSeconds != 1 || r.SuccessThreshold != 1 || r.FailureThreshold != 3 || r.HTTPGet.Scheme != "HTTP" || r.HTTPGet.Path != "/" {
		t.Fatalf("readiness defaults: %+v %+v", r, r.HTTPGet)
	}
	if l.PeriodSeconds != 1 || l.FailureThreshold != 3 {
		t.Fatalf("liveness defaults: %+v", l)
	}
}

func TestProbeValidation(t *testing.T) {
	tests := []struct {
		name  string
		extra string
		want  []string
	}{
		{"no handler", "    livenessProbe:\n      periodSeconds: 1\n",
			[]string{"spec.containers[0].livenessProbe: Required value: must specify a handler type"}},
		{"two handlers", "    livenessProbe:\n      exec:\n        command: [\"true\"]\n      tcpSocket:\n        port: 80\n",
			[]string{"spec.containers[0].livenessProbe: Forbidden: may not specify more than 1 handler type"}},
		{"liveness success threshold", "    livenessProbe:\n      successThreshold: 2\n      exec:\n        command: [\"true\"]\n",
			[]string{"spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1"}},
		{"bad numbers", "    readinessProbe:\n      periodSeconds: -1\n      initialDelaySeconds: -2\n      terminationGracePeriodSeconds: 5\n      exec:\n        command: [\"true\"]\n",
			[]string{"readinessProbe.initialDelaySeconds: Invalid value: -2", "readinessProbe.periodSeconds: Invalid value: -1", "readinessProbe.terminationGracePeriodSeconds: Invalid value: 5: must not be set for readinessProbes"}},
		{"unknown port name", "    readinessProbe:\n      httpGet:\n        port: web\n",
			[]string{`spec.containers[0].readinessProbe.httpGet.port: Invalid value: "web": no container port named "web"`}},
		{"bad scheme and grpc port", "    readinessProbe:\n      httpGet:\n        port: 80\n        scheme: FTP\n    livenessProbe:\n      grpc:\n        port: 0\n",
			[]string{"livenessProbe.grpc.port: Invalid value: 0", `readinessProbe.httpGet.scheme: Unsupported value: "FTP"`}},
		{"empty exec", "    startupProbe:\n      exec:\n        command: []\n",
			[]string{"spec.containers[0].startupProbe.exec.command: Required value"}},
		// A sleep hook may not outlast the grace period (the pod's default 30 s here), as the
		// kubelet refuses such a static pod (make conformance's first try of a 5 s sleep with a
		// grace of 2 s: the kubelet never ran it, podkeeper did).
		{"sleep hook longer than the grace period", "    lifecycle:\n      preStop:\n        sleep:\n          seconds: 31\n",
			[]string{"spec.containers[0].lifecycle.preStop.sleep.seconds: Invalid value: 31: must be non-negative and less than terminationGracePeriodSeconds (30)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fe := mustFail(t, pod("a")+tt.extra)
			var got []string
			for _, p := range fe.Problems {
				got = append(got, p.String())
			}
			all := strings.Join(got, "\n")
			if len(got) != len(tt.want) {
				t.Fatalf("problems:\n%s\nwant %d containing %q", all, len(tt.want), tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Fatalf("problems:\n%s\nwant one containing %q", all, w)
				}
			}
		})
	}
	// A named port of the container is fine.
	ok := pod("a") + "    ports:\n    - name: web\n      containerPort: 80\n    readinessProbe:\n      httpGet:\n        port: web\n"
	if _, err := DecodeFile("/etc/pods/x.yaml", []byte(ok), "node1"); err != nil {
		t.Fatalf("named port: %v", err)
	}
}
