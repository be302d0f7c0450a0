package runtime

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// DefaultPullProgressTimeout is how long a pull may wait with a registry request open and no
// byte coming before it is given up: containerd's CRI (1.7 on) default image_pull_progress_timeout.
const DefaultPullProgressTimeout = 5 * time.Minute

// PullStalledError ends a pull whose registry stopped sending: a link that drops packets without
// a reset leaves the connection open and containerd's fetch would wait for good. The pull is an
// ErrImagePull like any other, tried again after its back-off (from the start: the retries in
// TestChaosRegistryStall ask for whole blobs again).
type PullStalledError struct{ Timeout time.Duration }

func (e *PullStalledError) Error() string {
	return fmt.Sprintf("no progress for %s: the registry stopped sending (--image-pull-progress-timeout)", e.Timeout)
}

// pullStalled is the watchdog's decision: a pull with requests open (sent and unanswered, or a
// response being read) that saw no byte, no new request and no request end for timeout. Time
// with nothing open (containerd unpacking, resolving in between) never counts.
func pullStalled(open int, last, now time.Time, timeout time.Duration) bool {
	return timeout > 0 && open > 0 && now.Sub(last) >= timeout
}

// pullWatch follows the registry traffic of one pull (every request of its resolver's HTTP
// clients goes through wrap).
type pullWatch struct {
	mu   sync.Mutex
	open int       // requests sent whose response is not fully read or closed
	last time.Time // the last sign of progress
}

func newPullWatch() *pullWatch { return &pullWatch{last: time.Now()} }

func (w *pullWatch) progress(delta int) {
	w.mu.Lock()
	w.open += delta
	w.last = time.Now()
	w.mu.Unlock()
}

// stalled reports whether the pull made no progress for timeout as of now.
func (w *pullWatch) stalled(now time.Time, timeout time.Duration) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return pullStalled(w.open, w.last, now, timeout)
}

// wrap returns rt (nil: http.DefaultTransport) with its traffic counted by w.
func (w *pullWatch) wrap(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	return watchedTransport{w: w, rt: rt}
}

type watchedTransport struct {
	w  *pullWatch
	rt http.RoundTripper
}

func (t watchedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.w.progress(1)
	resp, err := t.rt.RoundTrip(req)
	if err != nil || resp.Body == nil {
		t.w.progress(-1)
		return resp, err
	}
	resp.Body = &watchedBody{w: t.w, body: resp.Body}
	return resp, nil
}

// watchedBody counts the bytes read from a response and ends the request's open count once, at
// end of body, a read error or Close.
type watchedBody struct {
	w    *pullWatch
	body io.ReadCloser
	once sync.Once
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if n > 0 {
		b.w.progress(0)
	}
	if err != nil {
		b.done()
	}
	return n, err
}

func (b *watchedBody) Close() error {
	b.done()
	return b.body.Close()
}

func (b *watchedBody) done() { b.once.Do(func() { b.w.progress(-1) }) }

// watchPull cancels ctx with a *PullStalledError once w has made no progress for timeout; the
// watch ends with ctx (cancel it when the pull returns).
func watchPull(ctx context.Context, w *pullWatch, timeout time.Duration, cancel context.CancelCauseFunc) {
	go func() {
		tick := time.NewTicker(max(timeout/8, 50*time.Millisecond))
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tick.C:
				if w.stalled(now, timeout) {
					cancel(&PullStalledError{Timeout: timeout})
					return
				}
			}
		}
	}()
}
