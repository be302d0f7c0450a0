package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// When does an agent first probe a container it has just started? Each pod's container first
// fetches http://127.0.0.1:<port>/start/<pod> (hostNetwork), then sleeps; its readiness and
// liveness probes are httpGets of /ready/<pod> and /live/<pod> on the same recorder, which
// answers 200 to everything. The recorder notes the first arrival of each path on its own clock,
// so "container running -> first probe" is measured the same way for every agent, without
// reading either agent's timestamps (the kubelet's startedAt has a one-second resolution).

// probeClock is the recorder: first arrival time of each path.
type probeClock struct {
	ln    net.Listener
	srv   *http.Server
	mu    sync.Mutex
	first map[string]time.Time
}

func newProbeClock() (*probeClock, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("probe clock: %w", err)
	}
	c := &probeClock{ln: ln, first: map[string]time.Time{}}
	c.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		c.mu.Lock()
		if _, ok := c.first[r.URL.Path]; !ok {
			c.first[r.URL.Path] = now
		}
		c.mu.Unlock()
		_, _ = w.Write([]byte("ok\n"))
	})}
	go func() { _ = c.srv.Serve(ln) }()
	return c, nil
}

func (c *probeClock) port() int { return c.ln.Addr().(*net.TCPAddr).Port }

func (c *probeClock) Close() { _ = c.srv.Close() }

// since is the first arrival of /<what>/<pod> minus that of /start/<pod>; false while either
// has not arrived.
func (c *probeClock) since(what, pod string) (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok1 := c.first["/start/"+pod]
	f, ok2 := c.first["/"+what+"/"+pod]
	return f.Sub(s), ok1 && ok2
}

// firstProbeManifest is pod name: it reports its start to the clock, then sleeps, with a
// readiness and a liveness probe (httpGet every second, the liveness one with failureThreshold
// 1, as in the liveness figure) on the clock.
func firstProbeManifest(name string, port int) string {
	cmd := fmt.Sprintf("wget -q -O /dev/null http://127.0.0.1:%d/start/%s; %s", port, name, sleeper)
	return benchPod(name, "  hostNetwork: true\n", cmd,
		httpGetProbe("readinessProbe", "/ready/"+name, port, "")+
			httpGetProbe("livenessProbe", "/live/"+name, port, "      failureThreshold: 1\n"))
}

// measureFirstProbes runs n such pods on t at once and returns, per pod, container running ->
// first readiness probe and -> first liveness probe.
func measureFirstProbes(ctx context.Context, t probeTarget, n int) (ready, live sample, err error) {
	clock, err := newProbeClock()
	if err != nil {
		return nil, nil, err
	}
	defer clock.Close()
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("fp-%d", i)
		if err := t.writeManifest(name, firstProbeManifest(name, clock.port())); err != nil {
			return nil, nil, err
		}
	}
	deadline := time.Now().Add(startTimeout(n) + 10*time.Second)
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("fp-%d", i)
		for {
			r, ok1 := clock.since("ready", name)
			l, ok2 := clock.since("live", name)
			if ok1 && ok2 {
				ready, live = append(ready, r), append(live, l)
				break
			}
			if time.Now().After(deadline) {
				return nil, nil, fmt.Errorf("first probes: %s: start, readiness or liveness probe never reached the clock (%s)", name, clock.seen(name))
			}
			if err := pause(ctx, 20*time.Millisecond); err != nil {
				return nil, nil, err
			}
		}
	}
	// No restart may have happened: every probe of these pods succeeds.
	pods, err := t.podList(ctx)
	if err != nil {
		return nil, nil, err
	}
	for i := range pods {
		for _, cs := range pods[i].Status.ContainerStatuses {
			if strings.HasPrefix(pods[i].Name, "fp-") && cs.RestartCount != 0 {
				return nil, nil, fmt.Errorf("first probes: %s restarted %d times though every probe succeeds", pods[i].Name, cs.RestartCount)
			}
		}
	}
	return ready, live, nil
}

func (c *probeClock) seen(pod string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var s []string
	for k := range c.first {
		if strings.HasSuffix(k, "/"+pod) {
			s = append(s, k)
		}
	}
	return "seen: " + strings.Join(s, " ")
}
