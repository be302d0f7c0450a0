package probes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func hostPort(t *testing.T, rawURL string) (string, int) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	h, p, _ := net.SplitHostPort(u.Host)
	n, _ := strconv.Atoi(p)
	return h, n
}

func runProbe(t *testing.T, p *corev1.Probe, c *corev1.Container, ex Execer, host string) Outcome {
	t.Helper()
	if c == nil {
		c = &corev1.Container{Name: "app"}
	}
	h, err := newHandler(p, c, ex, newTransport())
	if err != nil {
		t.Fatalf("newHandler: %v", err)
	}
	return h(context.Background(), Target{ContainerID: "c1", Host: func() string { return host }}, SpecOf(Readiness, p).Timeout)
}

func httpProbe(port int, path string, scheme corev1.URIScheme, headers ...corev1.HTTPHeader) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
		Path: path, Port: intstr.FromInt32(int32(port)), Scheme: scheme, HTTPHeaders: headers,
	}}}
}

func TestHTTPProbe(t *testing.T) {
	var lastUA, lastHost, lastX atomic.Value
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		lastUA.Store(r.UserAgent())
		lastHost.Store(r.Host)
		lastX.Store(r.Header.Get("X-Probe"))
		_, _ = io.WriteString(w, "fine")
	})
	mux.HandleFunc("/status/{code}", func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(r.PathValue("code"))
		w.WriteHeader(code)
	})
	mux.HandleFunc("/query", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("x") != "1" {
			w.WriteHeader(400)
		}
	})
	mux.HandleFunc("/redirect-local", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/status/500", http.StatusFound) })
	mux.HandleFunc("/redirect-loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/redirect-loop", http.StatusFound) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) { time.Sleep(1500 * time.Millisecond) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	host, port := hostPort(t, srv.URL)
	// A redirect to another host is not followed: its 3xx is a success with a warning.
	mux.HandleFunc("/redirect-away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, fmt.Sprintf("http://localhost:%d/status/500", port), http.StatusFound)
	})
	tls := httptest.NewTLSServer(mux)
	defer tls.Close()
	_, tlsPort := hostPort(t, tls.URL)

	cases := []struct {
		name    string
		probe   *corev1.Probe
		result  Result
		warning bool
		output  string
	}{
		{"200 is success", httpProbe(port, "/ok", ""), Success, false, "fine"},
		{"path without a slash", httpProbe(port, "ok", "HTTP"), Success, false, "fine"},
		{"399 is success", httpProbe(port, "/status/399", ""), Success, true, "Probe terminated redirects"},
		{"500 is failure", httpProbe(port, "/status/500", ""), Failure, false, "HTTP probe failed with statuscode: 500"},
		{"404 is failure", httpProbe(port, "/status/404", ""), Failure, false, "HTTP probe failed with statuscode: 404"},
		{"query kept", httpProbe(port, "/query?x=1", ""), Success, false, ""},
		{"redirect on the same host is followed", httpProbe(port, "/redirect-local", ""), Failure, false, "HTTP probe failed with statuscode: 500"},
		{"redirect to another host is not", httpProbe(port, "/redirect-away", ""), Success, true, "Probe terminated redirects"},
		{"redirect loop stops after 10", httpProbe(port, "/redirect-loop", ""), Failure, false, "stopped after 10 redirects"},
		{"https without certificate verification", httpProbe(tlsPort, "/ok", corev1.URISchemeHTTPS), Success, false, "fine"},
		{"connection refused", httpProbe(freePort(t), "/", ""), Failure, false, "connection refused"},
		{"timeout", httpProbe(port, "/slow", ""), Failure, false, "Client.Timeout exceeded"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := runProbe(t, tc.probe, nil, nil, host)
			if o.Result != tc.result || o.Warning != tc.warning || !strings.Contains(o.Output, tc.output) || o.Err != nil {
				t.Fatalf("got %+v, want result %v warning %v output containing %q", o, tc.result, tc.warning, tc.output)
			}
		})
	}

	t.Run("headers, user agent and Host", func(t *testing.T) {
		o := runProbe(t, httpProbe(port, "/ok", "", corev1.HTTPHeader{Name: "X-Probe", Value: "yes"}, corev1.HTTPHeader{Name: "Host", Value: "example.test"}), nil, nil, host)
		if o.Result != Success {
			t.Fatalf("got %+v", o)
		}
		if lastUA.Load() != UserAgent || lastHost.Load() != "example.test" || lastX.Load() != "yes" {
			t.Fatalf("server saw UA %q Host %q X-Probe %q", lastUA.Load(), lastHost.Load(), lastX.Load())
		}
		runProbe(t, httpProbe(port, "/ok", "", corev1.HTTPHeader{Name: "user-agent", Value: "mine"}), nil, nil, host)
		if lastUA.Load() != "mine" {
			t.Fatalf("User-Agent header not replaced: %q", lastUA.Load())
		}
	})
	t.Run("named port", func(t *testing.T) {
		p := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ok", Port: intstr.FromString("web")}}}
		c := &corev1.Container{Name: "app", Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: int32(port)}}}
		if o := runProbe(t, p, c, nil, host); o.Result != Success {
			t.Fatalf("got %+v", o)
		}
		if _, err := newHandler(&corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("nope")}}}, c, nil, nil); err == nil {
			t.Fatal("unknown port name accepted")
		}
	})
	t.Run("the probe's host wins over the pod IP", func(t *testing.T) {
		p := httpProbe(port, "/ok", "")
		p.HTTPGet.Host = host
		if o := runProbe(t, p, nil, nil, "192.0.2.1"); o.Result != Success {
			t.Fatalf("got %+v", o)
		}
	})
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestTCPProbe(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	tcp := func(port int) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(int32(port))}}}
	}
	if o := runProbe(t, tcp(port), nil, nil, ""); o.Result != Success {
		t.Fatalf("listening port: %+v", o)
	}
	o := runProbe(t, tcp(freePort(t)), nil, nil, "")
	if o.Result != Failure || !strings.Contains(o.Output, "connection refused") || !strings.HasPrefix(o.Output, "dial tcp 127.0.0.1:") {
		t.Fatalf("closed port: %+v", o)
	}
}

func TestGRPCProbe(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	go func() { _ = srv.Serve(l) }()
	defer srv.Stop()
	port := l.Addr().(*net.TCPAddr).Port
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("db", healthpb.HealthCheckResponse_NOT_SERVING)
	g := func(port int, service *string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: int32(port), Service: service}}}
	}
	db, missing := "db", "missing"
	cases := []struct {
		name   string
		probe  *corev1.Probe
		result Result
		output string
	}{
		{"serving", g(port, nil), Success, "service healthy"},
		{"not serving", g(port, &db), Failure, `service unhealthy (responded with "NOT_SERVING")`},
		{"unknown service", g(port, &missing), Failure, "health rpc probe failed"},
		{"nothing listening", g(freePort(t), nil), Failure, "failed to connect service"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := runProbe(t, tc.probe, nil, nil, "127.0.0.1")
			if o.Result != tc.result || !strings.Contains(o.Output, tc.output) {
				t.Fatalf("got %+v, want %v %q", o, tc.result, tc.output)
			}
		})
	}
	// A server without the health service.
	l2, _ := net.Listen("tcp", "127.0.0.1:0")
	bare := grpc.NewServer()
	go func() { _ = bare.Serve(l2) }()
	defer bare.Stop()
	if o := runProbe(t, g(l2.Addr().(*net.TCPAddr).Port, nil), nil, nil, "127.0.0.1"); o.Result != Failure || !strings.Contains(o.Output, "does not implement the grpc health protocol") {
		t.Fatalf("no health service: %+v", o)
	}
}

// fakeExec answers Exec with fn.
type fakeExec func(ctx context.Context, id string, cmd []string, out io.Writer) (int, error)

func (f fakeExec) Exec(ctx context.Context, id string, cmd []string, out io.Writer) (int, error) {
	return f(ctx, id, cmd, out)
}

func TestExecProbe(t *testing.T) {
	ex := fakeExec(func(ctx context.Context, id string, cmd []string, out io.Writer) (int, error) {
		switch cmd[0] {
		case "ok":
			return 0, nil
		case "fail":
			_, _ = io.WriteString(out, "cat: can't open '/tmp/healthy': No such file or directory\n")
			return 1, nil
		case "hang":
			<-ctx.Done()
			return -1, fmt.Errorf("exec: killed: %w", ctx.Err())
		case "gone":
			return -1, fmt.Errorf("exec in %s: %w", id, ErrNotRunning)
		case "big":
			_, _ = io.WriteString(out, strings.Repeat("x", 3*maxOutput))
			return 1, nil
		}
		return -1, errors.New("no such runtime")
	})
	e := func(cmd ...string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: cmd}}}
	}
	if o := runProbe(t, e("ok"), nil, ex, ""); o.Result != Success {
		t.Fatalf("ok: %+v", o)
	}
	if o := runProbe(t, e("fail"), nil, ex, ""); o.Result != Failure || !strings.Contains(o.Output, "can't open") {
		t.Fatalf("fail: %+v", o)
	}
	start := time.Now()
	if o := runProbe(t, e("hang", "10"), nil, ex, ""); o.Result != Failure || o.Output != `command "hang 10" timed out` {
		t.Fatalf("hang: %+v", o)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("hanging exec not cut at its 1 s timeout: %v", took)
	}
	if o := runProbe(t, e("gone"), nil, ex, ""); o.Result != Unknown {
		t.Fatalf("not running: %+v", o)
	}
	if o := runProbe(t, e("other"), nil, ex, ""); o.Result != Failure || o.Err == nil {
		t.Fatalf("runtime error: %+v", o)
	}
	if o := runProbe(t, e("big"), nil, ex, ""); len(o.Output) != maxOutput {
		t.Fatalf("output not capped: %d bytes", len(o.Output))
	}
}
