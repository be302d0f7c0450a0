// Package api is podkeeper's local HTTP API on a unix socket, and the client the CLI uses.
//
//	GET /healthz                                  "ok"
//	GET /pods                                     v1.PodList with status
//	GET /pods/{namespace}/{name}                  v1.Pod ("_" as namespace: any)
//	GET /pods/{namespace}/{name}/log              container output (container, previous, follow,
//	                                              tail, sinceSeconds, timestamps)
//	GET /events[?uid=UID]                         v1.EventList
//	GET /manifest-errors                          manifest files that could not be used
//	POST /pods/{namespace}/{name}/exec            run a command in a container (an upgraded
//	                                              stream: see exec.go)
//	GET /manifests                                every manifest file: declared objects, state
//	GET /stats/summary                            CPU and memory usage (the kubelet's summary shape)
//	GET /node                                     v1.Node: capacity, allocatable, conditions
package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podkeeper/podkeeper/podrunner"
	"github.com/podkeeper/podkeeper/podrunner/crilog"
)

// Backend is what the API reads. podrunner.Manager implements it.
type Backend interface {
	Pods() []*corev1.Pod
	FindPod(namespace, name string) (*corev1.Pod, error)
	Events(uid types.UID) []corev1.Event
	ContainerLogPath(ctx context.Context, pod *corev1.Pod, container string, previous bool) (string, error)
	// ManifestErrors lists the manifest files that could not be used, as of the latest snapshot.
	ManifestErrors() []ManifestError
}

// ManifestError is a manifest file podkeeper could not use (wholly or at all).
type ManifestError struct {
	Path         string `json:"path"`
	Error        string `json:"error"`
	KeptLastGood bool   `json:"keptLastGood"`
}

// Server serves the API of one backend.
type Server struct {
	b   Backend
	log *slog.Logger
	mux *http.ServeMux
}

// NewServer returns the API handler.
func NewServer(b Backend, log *slog.Logger) *Server {
	s := &Server{b: b, log: log, mux: http.NewServeMux()}
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	s.mux.HandleFunc("GET /pods", s.listPods)
	s.mux.HandleFunc("GET /pods/{ns}/{name}", s.getPod)
	s.mux.HandleFunc("GET /pods/{ns}/{name}/log", s.podLog)
	s.mux.HandleFunc("POST /pods/{ns}/{name}/exec", s.exec) // exec.go
	s.mux.HandleFunc("GET /events", s.events)
	s.mux.HandleFunc("GET /manifests", s.manifests)
	s.mux.HandleFunc("GET /stats/summary", s.statsSummary)
	s.mux.HandleFunc("GET /node", s.node)
	s.mux.HandleFunc("GET /manifest-errors", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, b.ManifestErrors()) })
	return s
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Listen creates the unix socket (mode 0600, parent dir created) and serves until ctx ends.
func (s *Server) Listen(ctx context.Context, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("api socket dir: %w", err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove stale api socket: %w", err)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return fmt.Errorf("chmod api socket: %w", err)
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("api server: %w", err)
	}
	return nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// writeError sends a v1.Status-like error with an HTTP code that matches its kind.
func writeError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	reason := metav1.StatusReasonInternalError
	switch {
	case errors.Is(err, podrunner.ErrNotFound):
		code, reason = http.StatusNotFound, metav1.StatusReasonNotFound
	case errors.Is(err, errBadRequest), errors.Is(err, podrunner.ErrNoLogsYet):
		code, reason = http.StatusBadRequest, metav1.StatusReasonBadRequest
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Message: err.Error(), Reason: reason, Code: int32(code),
	})
}

var errBadRequest = errors.New("bad request")

func (s *Server) listPods(w http.ResponseWriter, _ *http.Request) {
	list := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
	for _, p := range s.b.Pods() {
		p.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
		list.Items = append(list.Items, *p)
	}
	if list.Items == nil {
		list.Items = []corev1.Pod{}
	}
	writeJSON(w, list)
}

func (s *Server) find(r *http.Request) (*corev1.Pod, error) {
	ns := r.PathValue("ns")
	if ns == "_" {
		ns = ""
	}
	return s.b.FindPod(ns, r.PathValue("name"))
}

func (s *Server) getPod(w http.ResponseWriter, r *http.Request) {
	p, err := s.find(r)
	if err != nil {
		writeError(w, err)
		return
	}
	p.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
	writeJSON(w, p)
}

func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	list := corev1.EventList{TypeMeta: metav1.TypeMeta{Kind: "EventList", APIVersion: "v1"}}
	list.Items = s.b.Events(types.UID(r.URL.Query().Get("uid")))
	if list.Items == nil {
		list.Items = []corev1.Event{}
	}
	writeJSON(w, list)
}

// DefaultContainer picks the container logs and exec use when none is named: the only one, or
// an error listing the choices (as kubectl words it).
func DefaultContainer(p *corev1.Pod) (string, error) {
	if len(p.Spec.Containers) == 1 {
		return p.Spec.Containers[0].Name, nil
	}
	var names []string
	for _, c := range p.Spec.Containers {
		names = append(names, c.Name)
	}
	for _, c := range p.Spec.InitContainers {
		names = append(names, c.Name)
	}
	return "", fmt.Errorf("%w: a container name must be specified for pod %s, choose one of: [%s]", errBadRequest, p.Name, strings.Join(names, " "))
}

func (s *Server) podLog(w http.ResponseWriter, r *http.Request) {
	p, err := s.find(r)
	if err != nil {
		writeError(w, err)
		return
	}
	q := r.URL.Query()
	container := q.Get("container")
	if container == "" {
		if container, err = DefaultContainer(p); err != nil {
			writeError(w, err)
			return
		}
	}
	path, err := s.b.ContainerLogPath(r.Context(), p, container, q.Get("previous") == "true")
	if err != nil {
		writeError(w, err)
		return
	}
	opts := crilog.ReadOptions{Tail: -1, Follow: q.Get("follow") == "true", Timestamps: q.Get("timestamps") == "true"}
	if v := q.Get("tail"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			writeError(w, fmt.Errorf("%w: tail: %v", errBadRequest, err))
			return
		}
		opts.Tail = n
	}
	if v := q.Get("sinceSeconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			writeError(w, fmt.Errorf("%w: sinceSeconds: %v", errBadRequest, err))
			return
		}
		opts.Since = time.Now().Add(-time.Duration(n) * time.Second)
	}
	if v := q.Get("sinceTime"); v != "" {
		if q.Get("sinceSeconds") != "" {
			writeError(w, fmt.Errorf("%w: at most one of sinceTime or sinceSeconds may be specified", errBadRequest))
			return
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			writeError(w, fmt.Errorf("%w: sinceTime: %v", errBadRequest, err))
			return
		}
		opts.Since = t
	}
	var limit int64
	if v := q.Get("limitBytes"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			writeError(w, fmt.Errorf("%w: limitBytes: must be greater than 0, not %q", errBadRequest, v))
			return
		}
		limit = n
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	out := io.Writer(w)
	if f, ok := w.(http.Flusher); ok && opts.Follow {
		out = flushWriter{w, f}
	}
	if limit > 0 {
		out = &limitWriter{w: out, left: limit}
	}
	if opts.Follow && q.Get("previous") != "true" {
		s.followAcrossRestarts(r.Context(), p, container, path, opts, out)
		return
	}
	if err := crilog.ReadLog(r.Context(), path, opts, out); err != nil && !errors.Is(err, errLimitReached) {
		if errors.Is(err, os.ErrNotExist) {
			writeError(w, fmt.Errorf("log of container %s in pod %s %w (%s)", container, p.Name, podrunner.ErrNotFound, path))
			return
		}
		s.log.Warn("read log", "path", path, "err", err)
	}
}

// errLimitReached ends a log read once its limitBytes are written.
var errLimitReached = errors.New("limitBytes reached")

// limitWriter passes on at most left bytes, then fails every write with errLimitReached: the
// output ends there, in the middle of a line if that is where the limit falls (as the kubelet's).
type limitWriter struct {
	w    io.Writer
	left int64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, errLimitReached
	}
	cut := false
	if int64(len(p)) > l.left {
		p, cut = p[:l.left], true
	}
	n, err := l.w.Write(p)
	l.left -= int64(n)
	if err == nil && cut {
		err = errLimitReached
	}
	return n, err
}

// followPoll is how often a follow checks whether the container was restarted.
var followPoll = time.Second

// followAcrossRestarts follows the container's current log and, when the container is
// restarted (a new instance, a new log file), goes on with the new instance's output from its
// start, until the client goes away. (kubectl's follow ends with the instance; a restart here
// shows as the next lines.)
func (s *Server) followAcrossRestarts(ctx context.Context, p *corev1.Pod, container, path string, opts crilog.ReadOptions, out io.Writer) {
	poll := followPoll
	for ctx.Err() == nil {
		rctx, cancel := context.WithCancel(ctx)
		next := make(chan string, 1)
		go func() {
			t := time.NewTicker(poll)
			defer t.Stop()
			for {
				select {
				case <-rctx.Done():
					return
				case <-t.C:
				}
				np, err := s.b.ContainerLogPath(rctx, p, container, false)
				if err == nil && np != path {
					// Let the reader drain what the old instance wrote last, then switch.
					select {
					case <-rctx.Done():
					case <-time.After(poll):
					}
					next <- np
					cancel()
					return
				}
			}
		}()
		err := crilog.ReadLog(rctx, path, opts, out)
		cancel()
		if errors.Is(err, errLimitReached) {
			return
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) && ctx.Err() == nil {
			s.log.Warn("follow log", "path", path, "err", err)
		}
		select {
		case np := <-next:
			path = np
			opts.Tail, opts.Since = -1, time.Time{} // all of the new instance's output
		default:
			if errors.Is(err, os.ErrNotExist) && ctx.Err() == nil {
				// no log file yet: wait for one
				select {
				case <-ctx.Done():
				case <-time.After(poll):
				}
				continue
			}
			return
		}
	}
}

type flushWriter struct {
	w io.Writer
	f http.Flusher
}

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	f.f.Flush()
	return n, err
}
