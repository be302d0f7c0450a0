package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podkeeper/podkeeper/podrunner"
	"github.com/podkeeper/podkeeper/podrunner/crilog"
)

// fakeBackend serves fixed pods, events and log files.
type fakeBackend struct {
	pods   []*corev1.Pod
	events []corev1.Event
	logs   map[string]string // "pod/container" or "pod/container/previous" -> path
	errs   []ManifestError

	mu       sync.Mutex
	findArgs []string
}

func (b *fakeBackend) Pods() []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(b.pods))
	for _, p := range b.pods {
		out = append(out, p.DeepCopy())
	}
	return out
}

func (b *fakeBackend) FindPod(ns, name string) (*corev1.Pod, error) {
	b.mu.Lock()
	b.findArgs = append(b.findArgs, ns+"|"+name)
	b.mu.Unlock()
	var names []string
	for _, p := range b.pods {
		if ns != "" && p.Namespace != ns {
			continue
		}
		names = append(names, p.Name)
		if p.Name == name {
			return p.DeepCopy(), nil
		}
	}
	return nil, fmt.Errorf("pod %s %w (pods: %s)", name, podrunner.ErrNotFound, strings.Join(names, ", "))
}

func (b *fakeBackend) Events(uid types.UID) []corev1.Event {
	var out []corev1.Event
	for _, e := range b.events {
		if uid == "" || e.InvolvedObject.UID == uid {
			out = append(out, e)
		}
	}
	return out
}

func (b *fakeBackend) ContainerLogPath(_ context.Context, p *corev1.Pod, c string, previous bool) (string, error) {
	key := p.Name + "/" + c
	if previous {
		key += "/previous"
	}
	if path, ok := b.logs[key]; ok {
		return path, nil
	}
	if c == "pending" {
		return "", fmt.Errorf("container %q in pod %q is waiting to start: ContainerCreating (%w)", c, p.Name, podrunner.ErrNoLogsYet)
	}
	return "", fmt.Errorf("container %s %w", c, podrunner.ErrNotFound)
}

func (b *fakeBackend) ManifestErrors() []ManifestError { return b.errs }

func apiPod(ns, name, uid string, containers ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)}}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c, Image: "busybox"})
	}
	return p
}

// writeCRILog writes lines to a CRI log file at path with crilog.
func writeCRILog(t *testing.T, path string, lines ...string) {
	t.Helper()
	w, err := crilog.NewWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	s := w.Stream(crilog.Stdout)
	for _, l := range lines {
		if _, err := io.WriteString(s, l+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func newBackend(t *testing.T) *fakeBackend {
	dir := t.TempDir()
	cur := filepath.Join(dir, "web", "main", "1.log")
	prev := filepath.Join(dir, "web", "main", "0.log")
	writeCRILog(t, cur, "one", "two", "three", "four")
	writeCRILog(t, prev, "old-a", "old-b")
	return &fakeBackend{
		pods: []*corev1.Pod{
			apiPod("default", "web-node1", "uid-web", "main"),
			apiPod("kube-system", "multi-node1", "uid-multi", "a", "b"),
		},
		events: []corev1.Event{
			{ObjectMeta: metav1.ObjectMeta{Name: "e1"}, InvolvedObject: corev1.ObjectReference{UID: "uid-web"}, Reason: "Started"},
			{ObjectMeta: metav1.ObjectMeta{Name: "e2"}, InvolvedObject: corev1.ObjectReference{UID: "uid-multi"}, Reason: "Pulled"},
		},
		logs: map[string]string{"web-node1/main": cur, "web-node1/main/previous": prev,
			"web-node1/gone": filepath.Join(dir, "missing.log")},
		errs: []ManifestError{{Path: "/etc/pods/bad.yaml", Error: "yaml: line 3", KeptLastGood: true}},
	}
}

func testLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func get(t *testing.T, srv *httptest.Server, path string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func decodeStatus(t *testing.T, b []byte) metav1.Status {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("not a Status: %v: %s", err, b)
	}
	return st
}

func TestServerListPods(t *testing.T) {
	srv := httptest.NewServer(NewServer(newBackend(t), testLogger()))
	defer srv.Close()
	code, b := get(t, srv, "/pods")
	if code != http.StatusOK {
		t.Fatalf("GET /pods: %d %s", code, b)
	}
	var l corev1.PodList
	if err := json.Unmarshal(b, &l); err != nil {
		t.Fatal(err)
	}
	if l.Kind != "PodList" || l.APIVersion != "v1" || len(l.Items) != 2 {
		t.Fatalf("list = %s/%s with %d items", l.APIVersion, l.Kind, len(l.Items))
	}
	for _, p := range l.Items {
		if p.Kind != "Pod" || p.APIVersion != "v1" {
			t.Errorf("item %s has kind %q apiVersion %q", p.Name, p.Kind, p.APIVersion)
		}
	}
	if l.Items[0].Name != "web-node1" || l.Items[1].Name != "multi-node1" {
		t.Errorf("items = %s, %s", l.Items[0].Name, l.Items[1].Name)
	}

	// No pods: an empty list, not null.
	empty := httptest.NewServer(NewServer(&fakeBackend{}, testLogger()))
	defer empty.Close()
	_, b = get(t, empty, "/pods")
	if !bytes.Contains(b, []byte(`"items": []`)) {
		t.Errorf("empty list = %s, want items []", b)
	}
}

func TestServerGetPod(t *testing.T) {
	be := newBackend(t)
	srv := httptest.NewServer(NewServer(be, testLogger()))
	defer srv.Close()
	code, b := get(t, srv, "/pods/default/web-node1")
	var p corev1.Pod
	if code != http.StatusOK || json.Unmarshal(b, &p) != nil || p.Name != "web-node1" || p.Kind != "Pod" {
		t.Fatalf("GET pod: %d %s", code, b)
	}

	code, b = get(t, srv, "/pods/_/nope")
	if code != http.StatusNotFound {
		t.Fatalf("GET missing pod: %d %s, want 404", code, b)
	}
	st := decodeStatus(t, b)
	if st.Kind != "Status" || st.Status != metav1.StatusFailure || st.Reason != metav1.StatusReasonNotFound || st.Code != 404 {
		t.Errorf("status = %+v", st)
	}
	if !strings.Contains(st.Message, "pod nope not found") || !strings.Contains(st.Message, "web-node1") {
		t.Errorf("message = %q, want the not-found text with the pods", st.Message)
	}
	be.mu.Lock()
	last := be.findArgs[len(be.findArgs)-1]
	be.mu.Unlock()
	if last != "|nope" {
		t.Errorf("FindPod got %q, want namespace \"_\" turned into any (\"\")", last)
	}
}

func TestServerEventsAndManifestErrors(t *testing.T) {
	srv := httptest.NewServer(NewServer(newBackend(t), testLogger()))
	defer srv.Close()
	_, b := get(t, srv, "/events?uid=uid-web")
	var l corev1.EventList
	if err := json.Unmarshal(b, &l); err != nil {
		t.Fatal(err)
	}
	if l.Kind != "EventList" || len(l.Items) != 1 || l.Items[0].Name != "e1" {
		t.Errorf("events of uid-web = %s", b)
	}
	_, b = get(t, srv, "/events")
	if err := json.Unmarshal(b, &l); err != nil || len(l.Items) != 2 {
		t.Errorf("all events = %s", b)
	}
	_, b = get(t, srv, "/manifest-errors")
	var me []ManifestError
	if err := json.Unmarshal(b, &me); err != nil || len(me) != 1 || me[0].Path != "/etc/pods/bad.yaml" || !me[0].KeptLastGood {
		t.Errorf("manifest errors = %s", b)
	}
	code, b := get(t, srv, "/healthz")
	if code != 200 || strings.TrimSpace(string(b)) != "ok" {
		t.Errorf("healthz = %d %q", code, b)
	}
}

func TestServerPodLog(t *testing.T) {
	srv := httptest.NewServer(NewServer(newBackend(t), testLogger()))
	defer srv.Close()
	for _, tc := range []struct {
		path, want string
	}{
		{"/pods/default/web-node1/log", "one\ntwo\nthree\nfour\n"},       // the only container by default
		{"/pods/_/web-node1/log?container=main&tail=2", "three\nfour\n"}, // tail
		{"/pods/_/web-node1/log?container=main&tail=0", ""},              // tail 0
		{"/pods/_/web-node1/log?previous=true", "old-a\nold-b\n"},        // previous instance
		{"/pods/_/web-node1/log?previous=true&tail=1", "old-b\n"},        // both
		{"/pods/_/web-node1/log?container=main&sinceSeconds=3600", "one\ntwo\nthree\nfour\n"},
		{"/pods/_/web-node1/log?sinceTime=2000-01-01T00:00:00Z", "one\ntwo\nthree\nfour\n"},
		{"/pods/_/web-node1/log?sinceTime=2999-01-01T00:00:00Z", ""},
		{"/pods/_/web-node1/log?limitBytes=6", "one\ntw"}, // cut in the middle of a line, as the kubelet's
		{"/pods/_/web-node1/log?limitBytes=19", "one\ntwo\nthree\nfour\n"},
		{"/pods/_/web-node1/log?limitBytes=1000", "one\ntwo\nthree\nfour\n"},
		{"/pods/_/web-node1/log?tail=2&limitBytes=3", "thr"},
		{"/pods/_/web-node1/log?follow=true&limitBytes=6", "one\ntw"}, // a follow ends at the limit
	} {
		code, b := get(t, srv, tc.path)
		if code != http.StatusOK || string(b) != tc.want {
			t.Errorf("GET %s = %d %q, want 200 %q", tc.path, code, b, tc.want)
		}
	}
	code, b := get(t, srv, "/pods/_/web-node1/log?timestamps=true&tail=1")
	if code != 200 || !strings.HasSuffix(string(b), " four\n") {
		t.Errorf("timestamps = %d %q", code, b)
	} else if _, err := time.Parse(time.RFC3339Nano, strings.Fields(string(b))[0]); err != nil {
		t.Errorf("timestamp prefix of %q: %v", b, err)
	}

	for _, tc := range []struct {
		path     string
		code     int
		contains string
	}{
		{"/pods/_/multi-node1/log", 400, "a container name must be specified for pod multi-node1, choose one of: [a b]"},
		{"/pods/_/web-node1/log?tail=abc", 400, "tail"},
		{"/pods/_/web-node1/log?sinceSeconds=x", 400, "sinceSeconds"},
		{"/pods/_/web-node1/log?sinceTime=yesterday", 400, "sinceTime"},
		{"/pods/_/web-node1/log?sinceTime=2000-01-01T00:00:00Z&sinceSeconds=5", 400, "at most one of sinceTime or sinceSeconds may be specified"},
		{"/pods/_/web-node1/log?limitBytes=0", 400, "limitBytes: must be greater than 0"},
		{"/pods/_/web-node1/log?limitBytes=-3", 400, "limitBytes: must be greater than 0"},
		{"/pods/_/nope/log", 404, "pod nope not found"},
		{"/pods/_/web-node1/log?container=other", 404, "container other not found"},
		{"/pods/_/web-node1/log?container=gone", 404, "log of container gone in pod web-node1 not found"},
		{"/pods/_/web-node1/log?container=pending", 400, `container "pending" in pod "web-node1" is waiting to start: ContainerCreating`},
	} {
		code, b := get(t, srv, tc.path)
		if code != tc.code {
			t.Errorf("GET %s = %d %s, want %d", tc.path, code, b, tc.code)
			continue
		}
		if st := decodeStatus(t, b); !strings.Contains(st.Message, tc.contains) {
			t.Errorf("GET %s: message %q, want it to contain %q", tc.path, st.Message, tc.contains)
		}
	}
}

func TestDefaultContainer(t *testing.T) {
	if c, err := DefaultContainer(apiPod("default", "one", "u", "main")); err != nil || c != "main" {
		t.Fatalf("single container: %q, %v", c, err)
	}
	p := apiPod("default", "multi", "u", "a", "b")
	p.Spec.InitContainers = []corev1.Container{{Name: "setup"}}
	_, err := DefaultContainer(p)
	if err == nil || !errors.Is(err, errBadRequest) {
		t.Fatalf("multi-container: %v, want a bad request", err)
	}
	if !strings.Contains(err.Error(), "a container name must be specified for pod multi, choose one of: [a b setup]") {
		t.Errorf("message = %q", err)
	}
}

// serveSocket serves b on a unix socket in a short temporary directory and returns a client.
func serveSocket(t *testing.T, b Backend) *Client {
	t.Helper()
	dir, err := os.MkdirTemp("", "pkapi")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "run", "api.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- NewServer(b, testLogger()).Listen(ctx, sock) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Listen: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Listen did not return")
		}
	})
	c := NewClient(sock)
	deadline := time.Now().Add(10 * time.Second)
	for c.Healthz(context.Background()) != nil {
		if time.Now().After(deadline) {
			t.Fatal("api socket never answered")
		}
		time.Sleep(5 * time.Millisecond)
	}
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || fi.Mode()&os.ModeSocket == 0 {
		t.Errorf("socket mode = %s, want a 0600 socket", fi.Mode())
	}
	return c
}

func TestClientOverUnixSocket(t *testing.T) {
	c := serveSocket(t, newBackend(t))
	ctx := context.Background()

	l, err := c.Pods(ctx)
	if err != nil || len(l.Items) != 2 {
		t.Fatalf("Pods: %v, %v", l, err)
	}
	p, err := c.Pod(ctx, "", "web-node1")
	if err != nil || p.UID != "uid-web" {
		t.Fatalf("Pod: %v, %v", p, err)
	}
	_, err = c.Pod(ctx, "", "nope")
	var apiErr *Error
	if !errors.As(err, &apiErr) || apiErr.Code != 404 || !strings.Contains(apiErr.Message, "pod nope not found") {
		t.Fatalf("Pod(nope): %v, want an API 404 error with the server's message", err)
	}
	if strings.Contains(err.Error(), "{") {
		t.Errorf("error shows raw JSON: %q", err)
	}
	ev, err := c.Events(ctx, "uid-multi")
	if err != nil || len(ev.Items) != 1 || ev.Items[0].Reason != "Pulled" {
		t.Fatalf("Events: %v, %v", ev, err)
	}

	var out bytes.Buffer
	if err := c.Logs(ctx, "", "web-node1", LogOptions{Tail: 2}, &out); err != nil || out.String() != "three\nfour\n" {
		t.Fatalf("Logs tail 2: %q, %v", out.String(), err)
	}
	out.Reset()
	if err := c.Logs(ctx, "default", "web-node1", LogOptions{Container: "main", Previous: true, Tail: -1}, &out); err != nil || out.String() != "old-a\nold-b\n" {
		t.Fatalf("Logs previous: %q, %v", out.String(), err)
	}
	out.Reset()
	err = c.Logs(ctx, "", "multi-node1", LogOptions{Tail: -1}, &out)
	if !errors.As(err, &apiErr) || apiErr.Code != 400 || !strings.Contains(err.Error(), "choose one of: [a b]") {
		t.Fatalf("Logs of a multi-container pod: %v", err)
	}
	me, err := c.ManifestErrors(ctx)
	if err != nil || len(me) != 1 {
		t.Fatalf("ManifestErrors: %v, %v", me, err)
	}
}

func TestClientMissingSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "none.sock")
	c := NewClient(sock)
	_, err := c.Pods(context.Background())
	if err == nil {
		t.Fatal("no error without an agent")
	}
	msg := err.Error()
	for _, want := range []string{sock, "is `podkeeper run` running?", "no agent listening"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not contain %q", msg, want)
		}
	}
}

func TestIsNoLogsYet(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&Error{Code: 400, Message: `container "c" in pod "p" is waiting to start: ContainerCreating`}, true},
		{&Error{Code: 400, Message: `container "c" in pod "p" is waiting to start - no logs yet`}, true},
		{fmt.Errorf("container c: %w", &Error{Code: 400, Message: `previous terminated container "c" in pod "p" not found`}), true},
		{&Error{Code: 404, Message: `container "c" in pod "p" is waiting to start: ContainerCreating`}, false},
		{&Error{Code: 400, Message: "tail: bad"}, false},
		{errors.New(`container "c" in pod "p" is waiting to start`), false},
	} {
		if got := IsNoLogsYet(tc.err); got != tc.want {
			t.Errorf("IsNoLogsYet(%v) = %v", tc.err, got)
		}
	}
}
