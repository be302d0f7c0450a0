package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var now = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }

func running() corev1.ContainerState {
	return corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: ago(time.Hour)}}
}

func waiting(reason string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
}

func terminated(code int32, reason string) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason,
		StartedAt: ago(2 * time.Hour), FinishedAt: ago(time.Hour)}}
}

// printPod builds a pod with one container per app state and one init container per init state.
func printPod(phase corev1.PodPhase, inits []corev1.ContainerState, apps ...corev1.ContainerState) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-node1", Namespace: "default", CreationTimestamp: ago(2 * time.Hour)},
		Spec:       corev1.PodSpec{NodeName: "node1"},
		Status:     corev1.PodStatus{Phase: phase},
	}
	for i, s := range inits {
		name := "init" + string(rune('a'+i))
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: name, Image: "busybox"})
		p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, corev1.ContainerStatus{Name: name, State: s})
	}
	for i, s := range apps {
		name := "app" + string(rune('a'+i))
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: name, Image: "busybox"})
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: name, State: s, Ready: s.Running != nil,
		})
	}
	return p
}

func TestPodStatusReason(t *testing.T) {
	terminating := printPod(corev1.PodRunning, nil, running())
	del := ago(time.Second)
	terminating.DeletionTimestamp = &del
	evicted := printPod(corev1.PodFailed, nil)
	evicted.Status.Reason = "Evicted" // as kubectl: a container's state, when there is one, wins

	tests := []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"running", printPod(corev1.PodRunning, nil, running(), running()), "Running"},
		{"crash loop", printPod(corev1.PodRunning, nil, running(), waiting("CrashLoopBackOff")), "CrashLoopBackOff"},
		{"completed", printPod(corev1.PodSucceeded, nil, terminated(0, "Completed")), "Completed"},
		{"completed and running", printPod(corev1.PodRunning, nil, terminated(0, "Completed"), running()), "Running"},
		{"error", printPod(corev1.PodFailed, nil, terminated(1, "Error")), "Error"},
		{"exit code without reason", printPod(corev1.PodFailed, nil, terminated(3, "")), "ExitCode:3"},
		{"creating", printPod(corev1.PodPending, nil, waiting("ContainerCreating")), "ContainerCreating"},
		{"image pull", printPod(corev1.PodPending, nil, waiting("ErrImagePull")), "ErrImagePull"},
		{"image pull backoff", printPod(corev1.PodPending, nil, waiting("ImagePullBackOff")), "ImagePullBackOff"},
		{"init running", printPod(corev1.PodPending, []corev1.ContainerState{running()}, waiting("PodInitializing")), "Init:0/1"},
		{"second init running", printPod(corev1.PodPending, []corev1.ContainerState{terminated(0, "Completed"), running()}, waiting("PodInitializing")), "Init:1/2"},
		{"init waiting PodInitializing", printPod(corev1.PodPending, []corev1.ContainerState{waiting("PodInitializing")}, waiting("PodInitializing")), "Init:0/1"},
		{"init error", printPod(corev1.PodPending, []corev1.ContainerState{terminated(1, "Error")}, waiting("PodInitializing")), "Init:Error"},
		{"init exit code", printPod(corev1.PodPending, []corev1.ContainerState{terminated(2, "")}, waiting("PodInitializing")), "Init:ExitCode:2"},
		{"init crash loop", printPod(corev1.PodPending, []corev1.ContainerState{waiting("CrashLoopBackOff")}, waiting("PodInitializing")), "Init:CrashLoopBackOff"},
		{"init done", printPod(corev1.PodRunning, []corev1.ContainerState{terminated(0, "Completed")}, running()), "Running"},
		{"terminating", terminating, "Terminating"},
		{"pod reason", evicted, "Evicted"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := podStatusReason(tc.pod); got != tc.want {
				t.Errorf("podStatusReason = %q, want %q", got, tc.want)
			}
		})
	}
}

// BUG: kubectl shows "Terminating" only for a pod that is not in a terminal phase; a Succeeded
// (or Failed) pod being removed keeps showing Completed (Error). podStatusReason shows
// Terminating. Fix in printers.go: `if p.DeletionTimestamp != nil && p.Status.Phase !=
// corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {`.
func TestPodStatusReasonTerminatingTerminalPod(t *testing.T) {
	p := printPod(corev1.PodSucceeded, nil, terminated(0, "Completed"))
	del := ago(time.Second)
	p.DeletionTimestamp = &del
	if got := podStatusReason(p); got != "Completed" {
		t.Errorf("podStatusReason of a Succeeded pod being removed = %q, want %q (as kubectl prints it)", got, "Completed")
	}
}

func TestRestartsColumn(t *testing.T) {
	p := printPod(corev1.PodRunning, []corev1.ContainerState{terminated(0, "Completed")}, running(), running())
	if got := restarts(p, now); got != "0" {
		t.Errorf("no restarts: %q, want 0", got)
	}
	p.Status.ContainerStatuses[0].RestartCount = 1
	p.Status.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: 1, FinishedAt: ago(20 * time.Minute)}}
	p.Status.ContainerStatuses[1].RestartCount = 1
	p.Status.ContainerStatuses[1].LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: 1, FinishedAt: ago(5 * time.Minute)}}
	if got := restarts(p, now); got != "2 (5m ago)" {
		t.Errorf("restarts = %q, want %q (sum, with the latest termination)", got, "2 (5m ago)")
	}
	q := printPod(corev1.PodRunning, nil, running())
	q.Status.ContainerStatuses[0].RestartCount = 3
	if got := restarts(q, now); got != "3" {
		t.Errorf("restarts without a last state = %q, want 3", got)
	}
}

func fields(line string) string { return strings.Join(strings.Fields(line), " ") }

func TestPrintPodTable(t *testing.T) {
	a := printPod(corev1.PodRunning, nil, running(), waiting("CrashLoopBackOff"))
	a.Status.PodIP = "10.0.0.5"
	a.Status.ContainerStatuses[1].RestartCount = 4
	a.Status.ContainerStatuses[1].LastTerminationState = terminated(1, "Error")
	b := printPod(corev1.PodPending, nil, waiting("ContainerCreating"))
	b.Name, b.Namespace = "db-node1", "data"
	pods := []corev1.Pod{*a, *b}

	var out bytes.Buffer
	printPodTable(&out, pods, false, false, now)
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	want := []string{
		"NAME READY STATUS RESTARTS AGE",
		"web-node1 1/2 CrashLoopBackOff 4 (60m ago) 120m",
		"db-node1 0/1 ContainerCreating 0 120m",
	}
	if len(lines) != len(want) {
		t.Fatalf("table:\n%s", out.String())
	}
	for i := range want {
		if fields(lines[i]) != want[i] {
			t.Errorf("line %d = %q, want %q", i, fields(lines[i]), want[i])
		}
	}
	// Columns are aligned: STATUS starts at the same offset on every line.
	col := strings.Index(lines[0], "STATUS")
	if strings.Index(lines[1], "CrashLoopBackOff") != col || strings.Index(lines[2], "ContainerCreating") != col {
		t.Errorf("columns not aligned:\n%s", out.String())
	}

	out.Reset()
	printPodTable(&out, pods, true, true, now)
	lines = strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	want = []string{
		"NAMESPACE NAME READY STATUS RESTARTS AGE IP NODE",
		"default web-node1 1/2 CrashLoopBackOff 4 (60m ago) 120m 10.0.0.5 node1",
		"data db-node1 0/1 ContainerCreating 0 120m <none> node1",
	}
	for i := range want {
		if i >= len(lines) || fields(lines[i]) != want[i] {
			t.Errorf("wide line %d = %q, want %q", i, fields(lines[min(i, len(lines)-1)]), want[i])
		}
	}
}

func TestDescribePod(t *testing.T) {
	p := printPod(corev1.PodRunning, nil, running())
	p.Status.HostIP = "10.0.0.5"
	p.Status.QOSClass = corev1.PodQOSBestEffort
	p.Labels = map[string]string{"app": "web"}
	p.Status.ContainerStatuses[0].ContainerID = "containerd://abc"
	p.Status.ContainerStatuses[0].RestartCount = 3
	p.Status.ContainerStatuses[0].LastTerminationState = terminated(2, "Error")
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	events := []corev1.Event{
		{Type: "Normal", Reason: "Started", Message: "Started container appa", Count: 1,
			FirstTimestamp: ago(time.Hour), LastTimestamp: ago(time.Hour),
			Source: corev1.EventSource{Component: "podkeeper", Host: "node1"}},
		{Type: "Warning", Reason: "BackOff", Message: "Back-off restarting failed container appa", Count: 3,
			FirstTimestamp: ago(10 * time.Minute), LastTimestamp: ago(time.Minute),
			Source: corev1.EventSource{Component: "podkeeper", Host: "node1"}},
	}
	var out bytes.Buffer
	describePod(&out, p, events, now)
	s := out.String()
	for _, re := range []string{
		`(?m)^Name:\s+web-node1$`,
		`(?m)^Namespace:\s+default$`,
		`(?m)^Node:\s+node1/10\.0\.0\.5$`,
		`(?m)^Labels:\s+app=web$`,
		`(?m)^Status:\s+Running$`,
		`(?m)^\s+Container ID:\s+containerd://abc$`,
		`(?m)^\s+State:\s+Running$`,
		`(?m)^\s+Last State:\s+Terminated$`,
		`(?m)^\s+Exit Code:\s+2$`,
		`(?m)^\s+Restart Count:\s+3$`,
		`(?m)^\s+Ready\s+True$`,
		`(?m)^QoS Class:\s+BestEffort$`,
		`(?m)^Events:$`,
		`(?m)^\s+Type\s+Reason\s+Age\s+From\s+Message$`,
		`(?m)^\s+Normal\s+Started\s+60m\s+podkeeper, node1\s+Started container appa$`,
		`(?m)^\s+Warning\s+BackOff\s+60s \(x3 over 10m\)\s+podkeeper, node1\s+Back-off restarting failed container appa$`,
	} {
		if !regexp.MustCompile(re).MatchString(s) {
			t.Errorf("describe output does not match %s:\n%s", re, s)
		}
	}

	out.Reset()
	describePod(&out, p, nil, now)
	if !strings.Contains(out.String(), "Events:\t<none>") && !regexp.MustCompile(`(?m)^Events:\s+<none>$`).MatchString(out.String()) {
		t.Errorf("no events: %s", out.String())
	}
}

// A started sidecar (init container with restartPolicy Always) no longer holds the pod in Init,
// and it counts in READY, as kubectl shows it.
func TestSidecarInStatusAndReady(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	pod := printPod(corev1.PodRunning, []corev1.ContainerState{terminated(0, "Completed"), running()}, running())
	pod.Spec.InitContainers[1].RestartPolicy = &always
	pod.Status.InitContainerStatuses[1].Ready = true
	pod.Status.ContainerStatuses[0].Ready = true
	if got := podStatusReason(pod); got != "Running" {
		t.Errorf("status with a running sidecar = %q, want Running", got)
	}
	if got := readyCount(pod); got != "2/2" {
		t.Errorf("READY with a ready sidecar = %q, want 2/2", got)
	}
	pod.Status.InitContainerStatuses[1].State = waiting("ContainerCreating")
	pod.Status.InitContainerStatuses[1].Ready = false
	if got := podStatusReason(pod); got != "Init:ContainerCreating" {
		t.Errorf("status with a sidecar not started = %q", got)
	}
	if got := readyCount(pod); got != "1/2" {
		t.Errorf("READY = %q, want 1/2", got)
	}
}
