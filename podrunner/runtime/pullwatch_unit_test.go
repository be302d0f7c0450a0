package runtime

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestPullStalled(t *testing.T) {
	now := time.Date(2026, 12, 7, 21, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		open    int
		idle    time.Duration
		timeout time.Duration
		want    bool
	}{
		{"a response open, nothing for the timeout", 1, 5 * time.Second, 5 * time.Second, true},
		{"a response open, a byte just before the timeout", 1, 4999 * time.Millisecond, 5 * time.Second, false},
		{"nothing open (unpacking, resolving): never", 0, time.Hour, 5 * time.Second, false},
		{"several open, long idle", 3, time.Minute, 5 * time.Second, true},
		{"no timeout: never", 1, time.Hour, 0, false},
	} {
		if got := pullStalled(tc.open, now.Add(-tc.idle), now, tc.timeout); got != tc.want {
			t.Errorf("%s: pullStalled = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A registry that sends part of a blob and then nothing: the watched pull's context ends with a
// *PullStalledError after the timeout; one that keeps sending slowly (each gap shorter than the
// timeout) is never ended.
func TestWatchPullOnHTTP(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		switch r.URL.Path {
		case "/stall":
			_, _ = w.Write(make([]byte, 100))
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
			}
		case "/slow":
			for i := 0; i < 10; i++ {
				_, _ = w.Write(make([]byte, 100))
				w.(http.Flusher).Flush()
				time.Sleep(60 * time.Millisecond)
			}
		}
	}))
	defer srv.Close()

	get := func(path string, timeout time.Duration) (int64, error) {
		w := newPullWatch()
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		watchPull(ctx, w, timeout, cancel)
		client := &http.Client{Transport: w.wrap(nil)}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		resp, err := client.Do(req)
		if err != nil {
			return 0, context.Cause(ctx)
		}
		defer resp.Body.Close()
		n, err := io.Copy(io.Discard, resp.Body)
		if err != nil {
			return n, context.Cause(ctx)
		}
		return n, nil
	}

	began := time.Now()
	n, err := get("/stall", 300*time.Millisecond)
	var stalled *PullStalledError
	if !errors.As(err, &stalled) || stalled.Timeout != 300*time.Millisecond {
		t.Fatalf("stalled response: read %d bytes, err %v; want a *PullStalledError", n, err)
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Fatalf("stalled response ended after %v", took)
	}
	if n != 100 {
		t.Fatalf("stalled response: read %d bytes before the stall, want 100", n)
	}

	if n, err := get("/slow", 300*time.Millisecond); err != nil || n != 1000 {
		t.Fatalf("slow but moving response: read %d bytes, err %v; want all 1000", n, err)
	}
}
