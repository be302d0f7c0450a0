package api

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// restartingBackend's container gets a new log file (a new instance) when restart is called.
type restartingBackend struct {
	*fakeBackend
	mu   sync.Mutex
	path string
}

func (b *restartingBackend) ContainerLogPath(context.Context, *corev1.Pod, string, bool) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.path, nil
}

func TestFollowGoesOnWithTheNextInstance(t *testing.T) {
	old := followPoll
	followPoll = 20 * time.Millisecond
	t.Cleanup(func() { followPoll = old })
	dir := t.TempDir()
	first, second := filepath.Join(dir, "0.log"), filepath.Join(dir, "1.log")
	writeCRILog(t, first, "first-a", "first-b")
	be := &restartingBackend{fakeBackend: &fakeBackend{pods: []*corev1.Pod{apiPod("default", "web-node1", "uid-web", "main")}}, path: first}
	srv := httptest.NewServer(NewServer(be, testLogger()))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/pods/_/web-node1/log?follow=true&tail=1", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := make(chan string, 10)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func() string {
		select {
		case l := <-lines:
			return l
		case <-time.After(10 * time.Second):
			t.Fatal("no line within 10s")
		}
		return ""
	}
	if l := next(); l != "first-b" {
		t.Fatalf("tail=1 gave %q, want first-b", l)
	}
	// The container restarts: the follow goes on with all of the new instance's output.
	writeCRILog(t, second, "second-a", "second-b")
	be.mu.Lock()
	be.path = second
	be.mu.Unlock()
	got := []string{next(), next()}
	if strings.Join(got, ",") != "second-a,second-b" {
		t.Fatalf("after the restart got %v", got)
	}
}
