package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podkeeper/podkeeper/manifests"
	"github.com/podkeeper/podkeeper/podrunner"
)

func pod(ns, name string, lbl map[string]string) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-n1", Labels: lbl,
		Annotations: map[string]string{manifests.AnnotationManifestName: name}}}
}

func TestPodFilter(t *testing.T) {
	items := []corev1.Pod{
		pod("default", "web", map[string]string{"app": "web", "tier": "front"}),
		pod("default", "db", map[string]string{"app": "db"}),
		pod("kube-system", "etcd", map[string]string{"component": "etcd"}),
	}
	for _, tc := range []struct {
		ns, name, sel string
		want          string // names, comma separated
		err           string
	}{
		{want: "web-n1,db-n1,etcd-n1"},
		{ns: "default", want: "web-n1,db-n1"},
		{name: "web", want: "web-n1"},
		{name: "web-n1", want: "web-n1"},
		{sel: "app=web", want: "web-n1"},
		{sel: "app in (web,db)", want: "web-n1,db-n1"},
		{sel: "!app", want: "etcd-n1"},
		{sel: "app!=web,tier", want: ""},
		{name: "nope", err: "pod nope not found (pods: web-n1, db-n1, etcd-n1)"},
		{ns: "kube-system", name: "web", err: "pod web not found (pods: etcd-n1)"},
		{ns: "other", name: "web", err: "pod web not found (no pods)"},
		{sel: "app in (", err: "-l"},
	} {
		f, err := newPodFilter(tc.ns, tc.name, tc.sel)
		var got []corev1.Pod
		if err == nil {
			got, err = f.apply(items)
		}
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%+v: err %v, want %q", tc, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%+v: %v", tc, err)
			continue
		}
		var names []string
		for _, p := range got {
			names = append(names, p.Name)
		}
		if s := strings.Join(names, ","); s != tc.want {
			t.Errorf("%+v: got %s, want %s", tc, s, tc.want)
		}
	}
}

func TestWatchPrinterPrintsChangesOnly(t *testing.T) {
	now := time.Now()
	p := pod("default", "web", nil)
	p.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
	p.Spec.Containers = []corev1.Container{{Name: "c"}}
	p.Status.Phase = corev1.PodPending
	var b bytes.Buffer
	wp := &watchPrinter{w: &b, last: map[string]string{}}
	wp.header([]corev1.Pod{p}, now)
	wp.row(&p, now, false)
	wp.row(&p, now.Add(time.Hour), false) // only AGE differs: nothing printed
	q := p.DeepCopy()
	q.Status.Phase = corev1.PodRunning
	q.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	wp.row(q, now, false)
	wp.row(q, now, true)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("want header + 3 rows, got:\n%s", b.String())
	}
	for i, want := range []string{"NAME", "Pending", "Running", "Deleted"} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d %q lacks %q", i, lines[i], want)
		}
	}
	// Rows line up with the header: READY starts in the same column.
	col := strings.Index(lines[0], "READY")
	for _, l := range lines[1:] {
		if len(l) <= col || l[col-1] != ' ' || l[col] == ' ' {
			t.Errorf("row %q not aligned with header %q", l, lines[0])
		}
	}
}

func TestProgressLine(t *testing.T) {
	for _, tc := range []struct {
		b    podrunner.BlobProgress
		want string
	}{
		{podrunner.BlobProgress{Digest: "sha256:0123456789abcdef", Offset: 0, Total: 2048}, "0123456789ab [>         ] 0B/2.0KiB"},
		{podrunner.BlobProgress{Digest: "sha256:0123456789abcdef", Offset: 1024, Total: 2048}, "0123456789ab [=====>    ] 1.0KiB/2.0KiB"},
		{podrunner.BlobProgress{Digest: "sha256:0123456789abcdef", Offset: 2048, Total: 2048, Done: true}, "0123456789ab [==========] done 2.0KiB"},
		{podrunner.BlobProgress{Digest: "sha256:0123456789abcdef", Offset: 5, Total: 0}, "0123456789ab [>         ] 5B/0B"},
	} {
		if got := progressLine(tc.b, 10); got != tc.want {
			t.Errorf("progressLine(%+v) = %q, want %q", tc.b, got, tc.want)
		}
	}
}

func TestPlainProgressPrintsStartAndDone(t *testing.T) {
	var b bytes.Buffer
	p := &progressPrinter{w: &b}
	blob := podrunner.BlobProgress{Digest: "sha256:aaaaaaaaaaaaaaaa", Total: 100}
	p.update(podrunner.PullProgress{Blobs: []podrunner.BlobProgress{blob}})
	blob.Offset = 50
	p.update(podrunner.PullProgress{Blobs: []podrunner.BlobProgress{blob}})
	blob.Offset, blob.Done = 100, true
	p.update(podrunner.PullProgress{Blobs: []podrunner.BlobProgress{blob}})
	p.update(podrunner.PullProgress{Blobs: []podrunner.BlobProgress{blob}, Done: true})
	want := "aaaaaaaaaaaa: downloading 100B\naaaaaaaaaaaa: done 100B\n"
	if b.String() != want {
		t.Fatalf("got %q, want %q", b.String(), want)
	}
}

func TestLineWriterKeepsLinesWhole(t *testing.T) {
	var out bytes.Buffer
	var mu sync.Mutex
	a := &lineWriter{mu: &mu, out: &out, prefix: []byte("[a] ")}
	c := &lineWriter{mu: &mu, out: &out, prefix: []byte("[c] ")}
	a.Write([]byte("hel"))
	c.Write([]byte("one\ntw"))
	a.Write([]byte("lo\n"))
	c.Write([]byte("o"))
	c.flush()
	if want := "[c] one\n[a] hello\n[c] two\n"; out.String() != want {
		t.Fatalf("got %q, want %q", out.String(), want)
	}
}

func TestDescribeProbeAndEnvSource(t *testing.T) {
	p := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Host: "127.0.0.1", Port: intstr.FromInt32(8480), Path: "/"}}}
	if got, want := describeProbe(p), "http-get http://127.0.0.1:8480/ delay=0s timeout=1s period=10s #success=1 #failure=3"; got != want {
		t.Errorf("describeProbe = %q, want %q", got, want)
	}
	p = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("http")}}, PeriodSeconds: 2, FailureThreshold: 5, InitialDelaySeconds: 3}
	if got, want := describeProbe(p), "tcp-socket :http delay=3s timeout=1s period=2s #success=1 #failure=5"; got != want {
		t.Errorf("describeProbe = %q, want %q", got, want)
	}
	for _, tc := range []struct {
		src  *corev1.EnvVarSource
		want string
	}{
		{&corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}, "(v1:metadata.name)"},
		{&corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}, "<set to the key 'k' in secret 's'>"},
		{&corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}, Key: "k"}}, "<set to the key 'k' of config map 'c'>"},
	} {
		if got := envSource(tc.src); got != tc.want {
			t.Errorf("envSource = %q, want %q", got, tc.want)
		}
	}
}
