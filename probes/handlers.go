package probes

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Outcome is what one run of a probe handler saw.
type Outcome struct {
	// Result is Success or Failure; Unknown means the run could not reach the container (it is
	// not running any more) and does not count.
	Result Result
	// Warning marks a success with a caveat (an HTTP redirect not followed): recorded as a
	// ProbeWarning event, counted as a success.
	Warning bool
	// Output is what the kubelet would print after "<Kind> probe failed: ".
	Output string
	// Err is set when the probe itself could not be run (counted as a failure; the event says
	// "errored").
	Err error
}

// Execer runs a command inside a running container. The runtime implements it.
type Execer interface {
	// Exec runs cmd in container id with stdout and stderr both written to out, and returns its
	// exit code. When ctx ends first the process is killed and an error wrapping ctx.Err() is
	// returned. For a container that is not running it returns an error wrapping ErrNotRunning.
	Exec(ctx context.Context, id string, cmd []string, out io.Writer) (int, error)
}

// ErrNotRunning is wrapped by an Execer's error for a container that is not running.
var ErrNotRunning = errors.New("container not running")

// maxOutput bounds what a probe keeps of a command's output or a response body (the kubelet's
// 10 KiB).
const maxOutput = 10 << 10

// UserAgent is sent by HTTP and gRPC probes ("kube-probe/" as the kubelet's, so applications
// that recognise probes by it keep doing so).
const UserAgent = "kube-probe/podkeeper"

// Target says where a container's probes go.
type Target struct {
	ContainerID string
	// Host returns the address HTTP, TCP and gRPC probes use when the probe names no host: the
	// pod's IP. Empty (or a nil Host): 127.0.0.1.
	Host func() string
}

func (t Target) host(probeHost string) string {
	if probeHost != "" {
		return probeHost
	}
	if t.Host != nil {
		if h := t.Host(); h != "" {
			return h
		}
	}
	return "127.0.0.1"
}

// handler runs one probe once.
type handler func(ctx context.Context, t Target, timeout time.Duration) Outcome

// newHandler builds the handler of probe p of container c.
func newHandler(p *corev1.Probe, c *corev1.Container, ex Execer, tr *http.Transport) (handler, error) {
	h := p.ProbeHandler
	switch {
	case h.Exec != nil:
		if len(h.Exec.Command) == 0 {
			return nil, errors.New("exec probe without a command")
		}
		cmd := append([]string(nil), h.Exec.Command...)
		return func(ctx context.Context, t Target, timeout time.Duration) Outcome {
			return runExec(ctx, ex, t.ContainerID, cmd, timeout)
		}, nil
	case h.HTTPGet != nil:
		g := *h.HTTPGet
		port, err := ResolvePort(g.Port, c)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, t Target, timeout time.Duration) Outcome {
			return runHTTP(ctx, tr, &g, t.host(g.Host), port, timeout)
		}, nil
	case h.TCPSocket != nil:
		s := *h.TCPSocket
		port, err := ResolvePort(s.Port, c)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, t Target, timeout time.Duration) Outcome {
			return runTCP(ctx, net.JoinHostPort(t.host(s.Host), strconv.Itoa(port)), timeout)
		}, nil
	case h.GRPC != nil:
		port := int(h.GRPC.Port)
		if port <= 0 || port > 65535 {
			return nil, fmt.Errorf("grpc probe: invalid port %d", port)
		}
		service := ""
		if h.GRPC.Service != nil {
			service = *h.GRPC.Service
		}
		return func(ctx context.Context, t Target, timeout time.Duration) Outcome {
			return runGRPC(ctx, net.JoinHostPort(t.host(""), strconv.Itoa(port)), service, timeout)
		}, nil
	}
	return nil, errors.New("probe has no handler (want exec, httpGet, tcpSocket or grpc)")
}

// ResolvePort turns a port number or a container port name into a number (probes and lifecycle
// hooks name ports the same way).
func ResolvePort(p intstr.IntOrString, c *corev1.Container) (int, error) {
	if p.Type == intstr.String {
		if n, err := strconv.Atoi(p.StrVal); err == nil {
			p = intstr.FromInt32(int32(n))
		} else {
			for _, cp := range c.Ports {
				if cp.Name == p.StrVal {
					return int(cp.ContainerPort), nil
				}
			}
			return 0, fmt.Errorf("couldn't find port %q in container %q", p.StrVal, c.Name)
		}
	}
	if p.IntVal <= 0 || p.IntVal > 65535 {
		return 0, fmt.Errorf("invalid port %d", p.IntVal)
	}
	return int(p.IntVal), nil
}

// limitedBuffer keeps the first maxOutput bytes written to it and drops the rest.
type limitedBuffer struct{ b bytes.Buffer }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := maxOutput - l.b.Len(); room > 0 {
		if len(p) > room {
			l.b.Write(p[:room])
		} else {
			l.b.Write(p)
		}
	}
	return len(p), nil
}

func runExec(ctx context.Context, ex Execer, id string, cmd []string, timeout time.Duration) Outcome {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var out limitedBuffer
	code, err := ex.Exec(ctx, id, cmd, &out)
	switch {
	case errors.Is(err, ErrNotRunning):
		return Outcome{Result: Unknown, Err: err}
	case err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		// The kubelet's wording (ExecProbeTimeout): a timed-out command is a failure.
		return Outcome{Result: Failure, Output: fmt.Sprintf("command %q timed out", strings.Join(cmd, " "))}
	case err != nil:
		return Outcome{Result: Failure, Err: err}
	case code != 0:
		return Outcome{Result: Failure, Output: out.b.String()}
	}
	return Outcome{Result: Success, Output: out.b.String()}
}

// HTTPGetURL builds the URL of an httpGet action (probe or lifecycle hook) against host:port; the
// path keeps its query string.
func HTTPGetURL(g *corev1.HTTPGetAction, host string, port int) *url.URL {
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	u := &url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port))}
	path := g.Path
	if path != "" && !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	if pu, err := url.Parse(path); err == nil {
		u.Path, u.RawPath, u.RawQuery = pu.Path, pu.RawPath, pu.RawQuery
	} else {
		u.Path = path
	}
	if u.Path == "" {
		u.Path = "/"
	}
	return u
}

// newTransport is the HTTP transport probes share: no proxy, no keep-alive (every probe is a
// fresh connection, as the kubelet's), no certificate verification.
func newTransport() *http.Transport {
	return &http.Transport{
		Proxy:               nil,
		DisableKeepAlives:   true,
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // probes skip verification, as the kubelet's
		TLSHandshakeTimeout: 10 * time.Second,
	}
}

// redirectPolicy follows redirects as the kubelet's probes do: up to 10, and only to the same
// host; a redirect elsewhere ends the chain and its 3xx answer is the result (a success with a
// warning).
func redirectPolicy(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	return nil
}

func runHTTP(ctx context.Context, tr *http.Transport, g *corev1.HTTPGetAction, host string, port int, timeout time.Duration) Outcome {
	u := HTTPGetURL(g, host, port)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Outcome{Result: Failure, Err: err}
	}
	req.Header.Set("User-Agent", UserAgent)
	req.Header.Set("Accept", "*/*")
	overridden := map[string]bool{}
	for _, h := range g.HTTPHeaders {
		k := http.CanonicalHeaderKey(h.Name)
		if k == "Host" {
			req.Host = h.Value
			continue
		}
		if (k == "User-Agent" || k == "Accept") && !overridden[k] {
			req.Header.Del(k) // the probe's own value replaces the default
			overridden[k] = true
		}
		req.Header.Add(k, h.Value)
	}
	client := &http.Client{Transport: tr, Timeout: timeout, CheckRedirect: redirectPolicy}
	resp, err := client.Do(req)
	if err != nil {
		return Outcome{Result: Failure, Output: err.Error()}
	}
	defer resp.Body.Close()
	var body limitedBuffer
	_, _ = io.Copy(&body, io.LimitReader(resp.Body, maxOutput))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return Outcome{Result: Success, Output: body.b.String()}
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return Outcome{Result: Success, Warning: true, Output: "Probe terminated redirects, Response body: " + body.b.String()}
	}
	return Outcome{Result: Failure, Output: fmt.Sprintf("HTTP probe failed with statuscode: %d", resp.StatusCode)}
}

func runTCP(ctx context.Context, addr string, timeout time.Duration) Outcome {
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return Outcome{Result: Failure, Output: err.Error()}
	}
	_ = conn.Close()
	return Outcome{Result: Success}
}

func runGRPC(ctx context.Context, addr, service string, timeout time.Duration) Outcome {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUserAgent(UserAgent))
	if err != nil {
		return Outcome{Result: Failure, Output: fmt.Sprintf("failed to connect service %q: %v", addr, err)}
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		st, _ := status.FromError(err)
		switch st.Code() {
		case codes.Unimplemented:
			return Outcome{Result: Failure, Output: fmt.Sprintf("this server does not implement the grpc health protocol (grpc.health.v1.Health): %s", st.Message())}
		case codes.DeadlineExceeded:
			return Outcome{Result: Failure, Output: fmt.Sprintf("timeout: health rpc did not complete within %v", timeout)}
		case codes.Unavailable:
			return Outcome{Result: Failure, Output: fmt.Sprintf("timeout: failed to connect service %q within %v: %s", addr, timeout, st.Message())}
		}
		return Outcome{Result: Failure, Output: fmt.Sprintf("error: health rpc probe failed: %v", err)}
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return Outcome{Result: Failure, Output: fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus().String())}
	}
	return Outcome{Result: Success, Output: "service healthy"}
}
