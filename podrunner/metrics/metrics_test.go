package metrics

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodCollector(t *testing.T) {
	pods := []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-n1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "httpd", RestartCount: 3, Ready: true}}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "job-n1"}, Status: corev1.PodStatus{Phase: corev1.PodSucceeded,
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "init"}}, ContainerStatuses: []corev1.ContainerStatus{{Name: "main"}}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "new-n1"}}, // no phase yet: Pending
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewPodCollector(func() []*corev1.Pod { return pods }))
	want := `
# HELP podkeeper_container_ready 1 when the container is ready.
# TYPE podkeeper_container_ready gauge
podkeeper_container_ready{container="httpd",namespace="default",pod="web-n1"} 1
podkeeper_container_ready{container="init",namespace="default",pod="job-n1"} 0
podkeeper_container_ready{container="main",namespace="default",pod="job-n1"} 0
# HELP podkeeper_container_restarts Restart count of each container of each pod.
# TYPE podkeeper_container_restarts gauge
podkeeper_container_restarts{container="httpd",namespace="default",pod="web-n1"} 3
podkeeper_container_restarts{container="init",namespace="default",pod="job-n1"} 0
podkeeper_container_restarts{container="main",namespace="default",pod="job-n1"} 0
# HELP podkeeper_pods Pods by phase.
# TYPE podkeeper_pods gauge
podkeeper_pods{phase="Failed"} 0
podkeeper_pods{phase="Pending"} 1
podkeeper_pods{phase="Running"} 1
podkeeper_pods{phase="Succeeded"} 1
podkeeper_pods{phase="Unknown"} 0
`
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, f := range fams {
		if _, err := expfmt.MetricFamilyToText(&b, f); err != nil {
			t.Fatal(err)
		}
	}
	if got := b.String(); strings.TrimSpace(got) != strings.TrimSpace(want) {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestHandlerHealthAndReadiness(t *testing.T) {
	var readyErr error = errors.New("waiting for containerd")
	srv := httptest.NewServer(Handler(func() error { return readyErr }))
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	if code, body := get("/readyz"); code != 503 || !strings.Contains(body, "waiting for containerd") {
		t.Fatalf("/readyz not ready: %d %q", code, body)
	}
	readyErr = nil
	if code, body := get("/readyz"); code != 200 || body != "ok\n" {
		t.Fatalf("/readyz ready: %d %q", code, body)
	}
	ObserveImagePull(0, nil)
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, `podkeeper_image_pull_duration_seconds_count{result="success"}`) || !strings.Contains(body, "go_goroutines") {
		t.Fatalf("/metrics: %d\n%s", code, body)
	}
}
