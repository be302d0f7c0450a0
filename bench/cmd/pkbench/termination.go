package main

import (
	"bufio"
	"context"
	"fmt"
	"log"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Termination scenarios: what each side does once a running pod's manifest is removed. The
// standalone kubelet drops a removed static pod from /pods at once, so no status can be
// compared; the containers write down what they saw instead. Each container logs to a hostPath
// directory (outDir in the manifest is that side's own) when it got its stop signal, when its
// preStop hook began and ended, and beats every 100 ms (appended; its last beat is when its processes
// ended: the exit after the signal, or the SIGKILL at the end of the grace period). Times are
// seconds after the manifest's removal, read from /proc/uptime (one clock for both sides).

// outDir is replaced in a termination scenario's manifest by the directory its containers write.
const outDir = "@OUT@"

// termTolerance is how far apart two sides' times of one event may be and still agree: both are
// sampled with 100 ms beats, podkeeper acts on a removal after 200 ms of quiet (an editor's
// save), and the kubelet's pod worker starts the kill when its turn comes.
const termTolerance = 0.5

// termC is container name of a termination scenario. It logs its start and its stop signal,
// then runs onTerm ("exit 0": exits; "": keeps running until killed; "-": no handler at all, so
// as the pid namespace's init it ignores SIGTERM). extra is more container lines.
func termC(name, onTerm, extra string) string { return termCSetup(name, "", onTerm, extra) }

// termCSetup is termC whose script begins with setup (a shell line ending in "; ").
func termCSetup(name, setup, onTerm, extra string) string {
	trap := fmt.Sprintf("trap 't term; %s' TERM; ", onTerm)
	if onTerm == "-" {
		trap = ""
	}
	// The beat forks nothing (a read that times out on a FIFO nobody writes, not sleep): with
	// a fork per beat, 40 containers beating kept 2 slow cores saturated (make conformance of
	// 2026-12-08 00:31), and the timings measured the machine, not the agents.
	script := fmt.Sprintf(`t() { read u _ </proc/uptime; echo "%s:$1 $u" >>/out/log; }; mkfifo /.beat-%s; `+
		`(exec 3<>/.beat-%s; while :; do read u _ </proc/uptime; echo $u >>/out/%s.alive; read -t 0.1 _ <&3; done) & `+
		`%st start; %swhile :; do sleep 3600 & wait; done`, name, name, name, name, setup, trap)
	return sh(name, script) + "    volumeMounts:\n    - name: out\n      mountPath: /out\n" + extra
}

// preStopExec is a preStop exec hook of container name that logs its start, sleeps secs and
// logs its end (then exits with code).
func preStopExec(name, secs string, code int) string {
	script := fmt.Sprintf(`read u _ </proc/uptime; echo "%s:prestop $u" >>/out/log; sleep %s; read u _ </proc/uptime; echo "%s:prestop-end $u" >>/out/log; exit %d`, name, secs, name, code)
	return fmt.Sprintf("    lifecycle:\n      preStop:\n        exec:\n          command: [\"sh\", \"-c\", %q]\n", script)
}

// termPod is a termination scenario's pod: podDoc with the grace period given and the out volume.
func termPod(name string, grace int, extra string, containers ...string) string {
	doc := podDoc(name, "Always", "  volumes:\n  - name: out\n    hostPath:\n      path: "+outDir+"\n      type: DirectoryOrCreate\n"+extra, containers...)
	return strings.Replace(doc, "terminationGracePeriodSeconds: 2\n", fmt.Sprintf("terminationGracePeriodSeconds: %d\n", grace), 1)
}

const sidecarAlways = "    restartPolicy: Always\n"

// httpStopHook serves a CGI at :8080/cgi-bin/stop (busybox httpd) that logs container name's
// preStop start, sleeps secs and logs its end: the setup of a termCSetup whose preStop is an
// httpGet of it.
func httpStopHook(name, secs string) string {
	return fmt.Sprintf(`mkdir -p /www/cgi-bin && printf '%%s\n' '#!/bin/sh' `+
		`'read u _ </proc/uptime; echo "%s:prestop $u" >>/out/log' 'sleep %s' `+
		`'read u _ </proc/uptime; echo "%s:prestop-end $u" >>/out/log' 'echo Content-type: text/plain' echo 'echo ok' `+
		`> /www/cgi-bin/stop && chmod +x /www/cgi-bin/stop && httpd -p 8080 -h /www; `, name, secs, name)
}

// httpGetStop is a preStop httpGet hook of path on port.
func httpGetStop(path string, port int) string {
	return fmt.Sprintf("    lifecycle:\n      preStop:\n        httpGet:\n          path: %s\n          port: %d\n", path, port)
}

var termScenarios = []scenario{
	{"term-exit", "exits at once on SIGTERM (grace 3 s)", termPod("tm-exit", 3, "", termC("c", "exit 0", ""))},
	{"term-ignore", "logs SIGTERM and keeps running (grace 3 s): killed at the end of the grace period", termPod("tm-ignore", 3, "", termC("c", "", ""))},
	{"term-no-handler", "no SIGTERM handler as the pid namespace's init, so the signal is ignored (grace 3 s)", termPod("tm-nohandler", 3, "", termC("c", "-", ""))},
	{"term-exit-slow", "takes 1.5 s to exit after SIGTERM (grace 3 s)", termPod("tm-exitslow", 3, "", termC("c", "sleep 1.5; exit 0", ""))},
	{"term-prestop", "a preStop exec hook of 1 s, then SIGTERM, kept running (grace 5 s, what the hook took counts against it)", termPod("tm-prestop", 5, "", termC("c", "", preStopExec("c", "1", 0)))},
	{"term-prestop-fraction", "a preStop exec hook of 1.3 s, SIGTERM kept running (grace 4 s: what a hook took comes off in whole seconds, 1 here)", termPod("tm-prestopfrac", 4, "", termC("c", "", preStopExec("c", "1.3", 0)))},
	{"term-prestop-over-grace", "a preStop exec hook of 10 s with a grace of 3 s: the signal after 3 s, then at least 2 s more", termPod("tm-prestoplong", 3, "", termC("c", "", preStopExec("c", "10", 0)))},
	{"term-prestop-fails", "a preStop exec hook that exits 1 at once; SIGTERM kept running (grace 3 s)", termPod("tm-prestopfail", 3, "", termC("c", "", preStopExec("c", "0", 1)))},
	{"term-prestop-sleep", "a preStop sleep of 1 s, SIGTERM kept running (grace 4 s)", termPod("tm-prestopsleep", 4, "", termC("c", "", "    lifecycle:\n      preStop:\n        sleep:\n          seconds: 1\n"))},
	{"term-grace-zero", "terminationGracePeriodSeconds 0 with a preStop hook: no hook, the kubelet's 2 s minimum", termPod("tm-gracezero", 0, "", termC("c", "", preStopExec("c", "1", 0)))},
	{"term-two", "two containers, one exits on SIGTERM, one keeps running (grace 3 s)", termPod("tm-two", 3, "", termC("a", "exit 0", ""), termC("b", "", ""))},
	{"term-sidecar", "a sidecar kept running on SIGTERM and an app taking 1 s to exit (grace 5 s): the sidecar's signal after the app ended", termPod("tm-sidecar", 5, "  initContainers:\n"+termC("side", "", sidecarAlways), termC("c", "sleep 1; exit 0", ""))},
	{"term-sidecars-order", "two sidecars, each 0.5 s to exit, and an app that exits at once: the sidecars end in reverse order", termPod("tm-sidecars", 5, "  initContainers:\n"+termC("s1", "sleep 0.5; exit 0", sidecarAlways)+termC("s2", "sleep 0.5; exit 0", sidecarAlways), termC("c", "exit 0", ""))},
	{"term-sidecar-prestop", "a sidecar with a preStop hook of 1 s and an app taking 2 s to exit (grace 6 s): the sidecar's hook runs at once, its signal after the app", termPod("tm-sidecarps", 6, "  initContainers:\n"+termC("side", "exit 0", sidecarAlways+preStopExec("side", "1", 0)), termC("c", "sleep 2; exit 0", ""))},
	{"term-prestop-http", "a preStop httpGet hook to the container's own httpd (a CGI logging its start, 1 s, its end), SIGTERM kept running (grace 4 s)", termPod("tm-prestophttp", 4, "", termCSetup("c", httpStopHook("c", "1"), "", httpGetStop("/cgi-bin/stop", 8080)))},
	{"term-prestop-sleep-whole-grace", "a preStop sleep as long as the grace period, 2 s (a longer one is refused, by both), SIGTERM kept running", termPod("tm-sleeplong", 2, "", termC("c", "", "    lifecycle:\n      preStop:\n        sleep:\n          seconds: 2\n"))},
	{"term-two-prestops", "two containers with a preStop hook of 1 s each (run at once), both exit on SIGTERM (grace 4 s)", termPod("tm-twops", 4, "", termC("a", "exit 0", preStopExec("a", "1", 0)), termC("b", "exit 0", preStopExec("b", "1", 0)))},
	{"term-sidecar-slow-app", "an app kept running on SIGTERM (grace 4 s) and a sidecar that exits on it: the sidecar's turn comes with the app's SIGKILL, and it still gets its signal", termPod("tm-sideslow", 4, "  initContainers:\n"+termC("side", "exit 0", sidecarAlways), termC("c", "", ""))},
	{"term-sidecar-init-running", "removed while a plain init container runs (1 s to exit on SIGTERM) after a sidecar (kept running on it; grace 4 s)", termPod("tm-sideinit", 4, "  initContainers:\n"+termC("side", "", sidecarAlways)+termC("init", "sleep 1; exit 0", ""), termC("c", "exit 0", ""))},
	{"term-grace-one", "terminationGracePeriodSeconds 1, SIGTERM kept running: the stop's 2 s minimum", termPod("tm-graceone", 1, "", termC("c", "", ""))},
	{"term-two-sidecars-killed", "two sidecars kept running on SIGTERM, an app that exits on it (grace 6 s): the later sidecar is SIGKILLed at 6 s, the earlier gets its signal then and 2 s more", termPod("tm-twoside", 6, "  initContainers:\n"+termC("s1", "", sidecarAlways)+termC("s2", "", sidecarAlways), termC("c", "exit 0", ""))},
	{"term-init-running", "removed while its init container runs (kept running on SIGTERM, grace 3 s)", termPod("tm-initrun", 3, "  initContainers:\n"+termC("init", "", ""), termC("c", "exit 0", ""))},
	{"term-prestop-exec-missing", "a preStop exec hook whose command does not exist: it fails at once, SIGTERM kept running (grace 3 s)", termPod("tm-psmissing", 3, "", termC("c", "", "    lifecycle:\n      preStop:\n        exec:\n          command: [\"/no/such/hook\"]\n"))},
	{"term-prestop-http-refused", "a preStop httpGet hook to a port nothing listens on: it fails at once, SIGTERM kept running (grace 3 s)", termPod("tm-pshttpref", 3, "", termC("c", "", httpGetStop("/stop", 8081)))},
	{"term-prestop-http-slow", "a preStop httpGet hook whose answer takes 10 s, grace 3 s: the signal when the grace runs out", termPod("tm-pshttpslow", 3, "", termCSetup("c", httpStopHook("c", "10"), "", httpGetStop("/cgi-bin/stop", 8080)))},
	{"term-prestop-stops-container", "a preStop exec hook that sends SIGTERM to the container's init itself (which exits on it), then sleeps 5 s (grace 4 s)", termPod("tm-psstops", 4, "", termC("c", "exit 0", "    lifecycle:\n      preStop:\n        exec:\n          command: [\"sh\", \"-c\", \"kill -TERM 1; sleep 5\"]\n"))},
	{"term-two-prestop-and-ignore", "two containers: one with a preStop hook of 2 s that exits on SIGTERM, one without a hook that ignores SIGTERM (grace 4 s): the second's signal does not wait for the first's hook", termPod("tm-twomixed", 4, "", termC("a", "exit 0", preStopExec("a", "2", 0)), termC("b", "", ""))},
}

// termEvent is one row of the termination comparison.
type termEvent struct {
	scenario, event string
	podkeeper       string // seconds after the removal, or "" when that side did not log it
	kubelet         string
	differs         bool
}

// readTermLog reads one side's directory of a scenario: each container's first time of each
// event (term, prestop, prestop-end) and its last beat ("end"), seconds after t0; the starts are
// left out (they happened before the removal).
func readTermLog(dir string, t0 float64) (map[string]float64, error) {
	out := map[string]float64{}
	f, err := os.Open(filepath.Join(dir, "log"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 2 || strings.HasSuffix(fields[0], ":start") {
			continue
		}
		v, err := strconv.ParseFloat(fields[1], 64)
		if err != nil {
			continue
		}
		if _, ok := out[fields[0]]; !ok {
			out[fields[0]] = v - t0
		}
	}
	alive, _ := filepath.Glob(filepath.Join(dir, "*.alive"))
	for _, a := range alive {
		b, err := os.ReadFile(a)
		if err != nil {
			continue
		}
		// Appended, not rewritten: a process killed between a truncation and its write would
		// leave an empty file.
		lines := strings.Fields(string(b))
		if len(lines) == 0 {
			continue
		}
		if v, err := strconv.ParseFloat(lines[len(lines)-1], 64); err == nil {
			out[strings.TrimSuffix(filepath.Base(a), ".alive")+":end"] = v - t0
		}
	}
	return out, sc.Err()
}

// compareTerm lists the events of one scenario on both sides, each marked when one side lacks
// it or the times are more than termTolerance apart. Pure.
func compareTerm(scenario string, pk, kb map[string]float64) []termEvent {
	list := keysOf(pk, kb)
	// In the kubelet's order of time, then by name.
	at := func(k string) float64 {
		if v, ok := kb[k]; ok {
			return v
		}
		return pk[k]
	}
	sort.Slice(list, func(i, j int) bool {
		if a, b := at(list[i]), at(list[j]); a != b {
			return a < b
		}
		return list[i] < list[j]
	})
	var out []termEvent
	for _, k := range list {
		e := termEvent{scenario: scenario, event: k}
		a, okA := pk[k]
		b, okB := kb[k]
		if okA {
			e.podkeeper = fmt.Sprintf("%.1f s", a)
		}
		if okB {
			e.kubelet = fmt.Sprintf("%.1f s", b)
		}
		e.differs = okA != okB || math.Abs(a-b) > termTolerance
		out = append(out, e)
	}
	return out
}

func uptime() (float64, error) {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, fmt.Errorf("/proc/uptime: empty")
	}
	return strconv.ParseFloat(f[0], 64)
}

// termBase is where the termination scenarios' containers write, one directory per side and
// scenario.
const termBase = "/tmp/podkeeper-conformance-termination"

// termSide is one agent as the termination phase drives it.
type termSide struct {
	name, manifests string
	pods            func(context.Context) (int, error) // how many pods it lists
}

// runTermination runs list under each side in turn (one side's work never delays the other's):
// written, running for a few seconds, removed, and each container's log read once all its
// containers ended.
func runTermination(ctx context.Context, pk *podkeeperRunner, kb *kubeletRunner, list []scenario) ([]termEvent, error) {
	if err := os.RemoveAll(termBase); err != nil {
		return nil, err
	}
	defer os.RemoveAll(termBase)
	sides := []termSide{
		{"podkeeper", pk.manifests, func(ctx context.Context) (int, error) {
			pl, err := pk.api.Pods(ctx)
			if err != nil {
				return 0, err
			}
			return len(pl.Items), nil
		}},
		{"kubelet", kb.manifests, func(ctx context.Context) (int, error) {
			kl, err := kb.pods(ctx)
			return len(kl), err
		}},
	}
	times := map[string]map[string]map[string]float64{} // side, scenario -> events
	for _, side := range sides {
		m, err := terminateOn(ctx, side, list)
		if err != nil {
			return nil, fmt.Errorf("termination scenarios on %s: %w", side.name, err)
		}
		times[side.name] = m
	}
	var out []termEvent
	for _, s := range list {
		out = append(out, compareTerm(s.name, times["podkeeper"][s.name], times["kubelet"][s.name])...)
	}
	return out, nil
}

// terminateOn runs list on one side and returns each scenario's events (readTermLog).
func terminateOn(ctx context.Context, side termSide, list []scenario) (map[string]map[string]float64, error) {
	dir := func(s scenario) string { return filepath.Join(termBase, side.name, s.name) }
	for _, s := range list {
		if err := placeManifest(side.manifests, s.name, strings.ReplaceAll(s.spec, outDir, dir(s))); err != nil {
			return nil, err
		}
	}
	// Running: every scenario's first container logged its start; then a few seconds more for
	// the rest (an app after its sidecars).
	deadline := time.Now().Add(90 * time.Second)
	for {
		missing := ""
		for _, s := range list {
			if fi, err := os.Stat(filepath.Join(dir(s), "log")); err != nil || fi.Size() == 0 {
				missing = s.name
			}
		}
		if missing == "" {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s did not start in 90 s", missing)
		}
		if err := pause(ctx, 500*time.Millisecond); err != nil {
			return nil, err
		}
	}
	if err := pause(ctx, 6*time.Second); err != nil {
		return nil, err
	}
	// The removal waits for a quiet machine, at most 20 s (the pods' own beats keep it from ever
	// being quite idle): the other side's clean-up of the last status batch (its containerd's
	// sandbox teardown, CNI DEL) must not delay this side's reaction (the run of 2026-12-07 03:31
	// had podkeeper's hooks and signals 0.5-0.7 s behind for that).
	if waited, err := waitQuiet(ctx, 20*time.Second); err != nil {
		return nil, err
	} else if waited > time.Second {
		log.Printf("termination scenarios: %s's removal waited %v for a quiet machine", side.name, waited.Round(100*time.Millisecond))
	}
	t0, err := uptime()
	if err != nil {
		return nil, err
	}
	log.Printf("termination scenarios: removing %s's manifests at uptime %.2f s", side.name, t0)
	for _, s := range list {
		if err := os.Remove(filepath.Join(side.manifests, s.name+".yaml")); err != nil {
			return nil, err
		}
	}
	// Ended: no beat moved for 2 s, and the side lists no pod.
	beats := func() string {
		var b strings.Builder
		files, _ := filepath.Glob(filepath.Join(termBase, side.name, "*", "*.alive"))
		for _, f := range files {
			fi, err := os.Stat(f)
			if err == nil {
				fmt.Fprintf(&b, "%s=%d ", f, fi.Size())
			}
		}
		return b.String()
	}
	last, since := beats(), time.Now()
	for end := time.Now().Add(2 * time.Minute); time.Now().Before(end); {
		if err := pause(ctx, 250*time.Millisecond); err != nil {
			return nil, err
		}
		if now := beats(); now != last {
			last, since = now, time.Now()
			continue
		}
		if time.Since(since) < 2*time.Second {
			continue
		}
		if n, err := side.pods(ctx); err == nil && n == 0 {
			break
		}
	}
	out := map[string]map[string]float64{}
	for _, s := range list {
		m, err := readTermLog(dir(s), t0)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		out[s.name] = m
	}
	return out, nil
}

// termMarkdown is the termination section of docs/conformance.md.
func termMarkdown(list []scenario, events []termEvent) string {
	var b strings.Builder
	w := func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }
	differ := 0
	for _, e := range events {
		if e.differs {
			differ++
		}
	}
	w("\n## Termination: after the manifest is removed\n\n")
	w("The standalone kubelet drops a removed static pod from `/pods` at once, so here the containers say what they saw: each logs, to a hostPath directory of its side, when it got SIGTERM (`term`), when its preStop hook began and ended, and beats every 100 ms; its last beat (`end`) is when its processes ended (its exit, or the SIGKILL at the end of the grace period). All the scenarios run at once on one side, then on the other (neither side's work delays the other's); their manifests are removed together once all run, 6 s after the last one started and once the machine is quiet (at most 20 s: the other side's clean-up of the last batch must not delay it). Times are seconds after the removal; two agree within %.1f s (podkeeper acts on a removal after 200 ms of quiet; beats are 100 ms apart).\n\n", termTolerance)
	w("| scenario | what |\n|---|---|\n")
	for _, s := range list {
		w("| %s | %s |\n", s.name, s.what)
	}
	w("\n%d events compared, %d differ.\n\n", len(events), differ)
	w("| scenario | container:event | podkeeper | kubelet | |\n|---|---|---|---|---|\n")
	for _, e := range events {
		mark := ""
		if e.differs {
			mark = "**differs**"
		}
		w("| %s | `%s` | %s | %s | %s |\n", e.scenario, e.event, orNone(e.podkeeper), orNone(e.kubelet), mark)
	}
	return b.String()
}
