// Package e2e runs the podkeeper binary against a real containerd, as a user would: manifests
// written into a directory, state read back through `podkeeper get pods -o json`.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkeeper/podkeeper/internal/testenv"
	"github.com/podkeeper/podkeeper/podrunner"
	pkruntime "github.com/podkeeper/podkeeper/podrunner/runtime"
)

const node = "e2e"

var (
	env    *testenv.Containerd
	binDir string
)

func TestMain(m *testing.M) {
	var err error
	if binDir, err = testenv.Binaries(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: build binaries:", err)
		os.Exit(1)
	}
	// Images are imported by each agent from its <root-dir>/images, as on an air-gapped box.
	env, err = testenv.StartContainerd("unused")
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: cannot start the test containerd:", err)
		os.Exit(1)
	}
	code := m.Run()
	env.Stop()
	testenv.RemoveBinaries()
	os.Exit(code)
}

// agent is one `podkeeper run` process with its own dirs and containerd namespace.
type agent struct {
	t         testing.TB
	ns        string
	dir       string
	manifests string
	root      string
	logs      string
	sock      string
	address   string
	mu        *sync.Mutex
	cmd       *exec.Cmd
	out       *os.File
	bridge    string // the agent's own CNI bridge and pod subnet, never the host's defaults
	subnet    string
	extra     []string // more `podkeeper run` flags
	// cgroupParent is the agent's own pod cgroup parent (removed at cleanup) unless
	// PODKEEPER_CGROUP_PARENT names one the test owns.
	cgroupParent string
	ownCgroups   bool
}

func startAgent(t testing.TB, ns string) *agent {
	t.Helper()
	return startAgentAt(t, ns, env.Address)
}

// startAgentAt starts an agent against the containerd at address (which may not answer yet).
func startAgentAt(t testing.TB, ns, address string, extra ...string) *agent {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "pke-")
	if err != nil {
		t.Fatal(err)
	}
	a := &agent{t: t, ns: ns, dir: dir, manifests: filepath.Join(dir, "manifests"), root: filepath.Join(dir, "root"),
		logs: filepath.Join(dir, "logs"), sock: filepath.Join(dir, "api.sock"), mu: &sync.Mutex{}, address: address, extra: extra}
	a.bridge, a.subnet = agentNetwork()
	// A test may narrow the agent's own /24 (extra "--pod-subnet", "/29"), for the agent and
	// for its leak checks.
	for i := 0; i+1 < len(a.extra); i++ {
		if a.extra[i] == "--pod-subnet" && strings.HasPrefix(a.extra[i+1], "/") {
			a.subnet = strings.TrimSuffix(a.subnet, "/24") + a.extra[i+1]
			a.extra = append(a.extra[:i:i], a.extra[i+2:]...)
			break
		}
	}
	if a.cgroupParent = os.Getenv("PODKEEPER_CGROUP_PARENT"); a.cgroupParent == "" {
		a.cgroupParent, a.ownCgroups = filepath.Base(dir), true
		a.extra = append([]string{"--cgroup-parent", a.cgroupParent}, a.extra...)
	}
	for _, d := range []string{a.manifests, filepath.Join(a.root, "images"), a.logs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := testenv.BusyboxTarball(filepath.Join(a.root, "images", "busybox.tar")); err != nil {
		t.Fatal(err)
	}
	a.start()
	t.Cleanup(a.cleanup)
	return a
}

func (a *agent) start() {
	a.t.Helper()
	out, err := os.OpenFile(filepath.Join(a.dir, "agent.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		a.t.Fatal(err)
	}
	args := append([]string{"run",
		"--manifest-dir", a.manifests, "--root-dir", a.root, "--log-dir", a.logs, "--container-log-links-dir", a.logLinks(),
		"--containerd-address", a.address, "--containerd-namespace", a.ns,
		"--node-name", node, "--api-socket", a.sock, "--log-format", "text", "--resync", "5s",
		"--cni-conf-dir", a.network().ConfDir, "--netns-dir", a.network().NetnsDir, "--cni-bridge", a.bridge, "--pod-subnet", a.subnet,
		// The test's containerd runs runc with cgroupfs, whatever /etc/containerd/config.toml says.
		"--cgroup-driver", "cgroupfs"}, a.extra...)
	if os.Getenv("PODKEEPER_E2E_LOG") == "debug" {
		args = append(args, "--log-level", "debug")
	}
	cmd := exec.Command(filepath.Join(binDir, "podkeeper"), args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		a.t.Fatal(err)
	}
	a.mu.Lock()
	a.cmd, a.out = cmd, out
	a.mu.Unlock()
	a.eventually(20*time.Second, "agent answers", func() (bool, string) {
		err := exec.Command(filepath.Join(binDir, "podkeeper"), "--api-socket", a.sock, "get", "pods").Run()
		return err == nil, fmt.Sprint(err)
	})
}

// logLinks is the agent's own --container-log-links-dir (never the host's /var/log/containers).
func (a *agent) logLinks() string { return filepath.Join(a.dir, "containers") }

// kill9 ends the agent the hard way and waits for it to be gone.
func (a *agent) kill9() { a.end(syscall.SIGKILL) }

// stop ends the agent with SIGTERM (its pods keep running) and waits for it to be gone.
func (a *agent) stop() { a.end(syscall.SIGTERM) }

func (a *agent) end(sig syscall.Signal) {
	a.mu.Lock()
	defer a.mu.Unlock()
	_ = a.cmd.Process.Signal(sig)
	_ = a.cmd.Wait()
	a.out.Close()
}

// cleanup stops the agent, removes every pod it left (through containerd) and its dirs.
func (a *agent) cleanup() {
	a.mu.Lock()
	if a.cmd != nil && a.cmd.ProcessState == nil {
		_ = a.cmd.Process.Signal(syscall.SIGTERM)
		_ = a.cmd.Wait()
	}
	a.mu.Unlock()
	// Once the clean-up is done (so that a leak it finds comes with the log too): make
	// test-race's agent fails the test on a data race it reported, and the agent's log is shown
	// on failure or with PODKEEPER_E2E_LOG=1 (=debug: at debug level).
	defer func() {
		b, _ := os.ReadFile(filepath.Join(a.dir, "agent.log"))
		if r := testenv.RaceReports(b); testenv.Race() && r != "" {
			a.t.Errorf("the agent reported data races:\n%s", r)
		}
		if a.t.Failed() || os.Getenv("PODKEEPER_E2E_LOG") != "" {
			a.t.Logf("agent log:\n%s", b)
		}
		os.RemoveAll(a.dir)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if rt, err := pkruntime.Dial(ctx, pkruntime.Config{Address: a.address, Namespace: a.ns, Network: a.network(), RootDir: a.root}); err == nil {
		recs, _ := rt.ListContainers(ctx, "")
		uids := map[string]bool{}
		for _, r := range recs {
			uids[r.PodUID] = true
			// One deadline per container, not one for all: a shared minute ran out on 110 pods
			// and left the rest without CNI DEL (their iptables rules and IPs leaked).
			cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
			if err := rt.StopContainer(cctx, r.ID, 0); err != nil {
				a.t.Logf("cleanup: stop %s (state %s when listed): %v", r.ID, r.State, err)
				a.logStacks()
			}
			if err := rt.RemoveContainer(cctx, r.ID); err != nil { // sandboxes: CNI DEL releases IP, veth, iptables rules
				a.t.Logf("cleanup: remove %s: %v", r.ID, err)
			}
			ccancel()
		}
		// The agent leaves its pods running when it stops (an upgrade must not restart them), so
		// their files are the test's to remove, as the agent's termination of a pod does: memory
		// emptyDirs (tmpfs) and /dev/shm mounts, pinned namespaces. Before this, every run of a
		// test that ended with a pod up left such mounts behind.
		if ents, err := os.ReadDir(filepath.Join(a.root, "pods")); err == nil {
			for _, e := range ents { // pods whose containers are gone (a test deleted them)
				uids[e.Name()] = true
			}
		}
		for uid := range uids {
			if err := rt.RemovePodFiles(uid); err != nil {
				a.t.Errorf("cleanup: pod files of %s: %v", uid, err)
			}
		}
		rt.Close()
	}
	// Every container of the namespace is gone: so must be every runc shim containerd started for
	// it (an idle shim that nothing will tell to exit is a leak containerd's records do not show).
	var shims []int
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if shims = pkruntime.RuncShimPIDs(a.address, a.ns); len(shims) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(shims) > 0 {
		var ids []string
		for _, pid := range shims {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			ids = append(ids, fmt.Sprintf("%d %q", pid, strings.ReplaceAll(string(b), "\x00", " ")))
		}
		a.t.Errorf("cleanup: %d runc shims of namespace %s still running 10s after its last container's removal:\n%s", len(shims), a.ns, strings.Join(ids, "\n"))
		for _, pid := range shims { // started by this test's containerd for this test's namespace
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	// The subnet's masquerade rule outlives the agent (its pods do too); the test retires the
	// network here, before looking for what CNI DEL should have released.
	if err := pkruntime.RemoveMasquerade(ctx, a.network().ConfDir); err != nil {
		a.t.Errorf("cleanup: %v", err)
	}
	// Every pod's CNI DEL ran (by the agent or just above): no rule of the agent's subnet is left.
	if hits, err := testenv.IptablesMentions(a.subnet); err != nil {
		a.t.Errorf("cleanup: %v", err)
	} else if len(hits) > 0 {
		a.t.Errorf("cleanup: %d iptables rules of pod subnet %s leaked:\n%s", len(hits), a.subnet, strings.Join(hits, "\n"))
	}
	_ = exec.Command("ip", "link", "del", a.bridge).Run()
	if a.ownCgroups {
		removeCgroupParent(a.t, a.cgroupParent)
	}
	if mps := testenv.MountsUnder(a.dir); len(mps) > 0 {
		a.t.Errorf("cleanup: %d mounts left under the agent's dirs after every pod's files were removed: %v", len(mps), mps)
		testenv.UnmountUnder(a.dir)
	}
}

var agentSeq atomic.Int32

// agentNetwork picks a bridge name and /24 pod subnet of the agent's own.
func agentNetwork() (bridge, subnet string) {
	n := int(agentSeq.Add(1)) + os.Getpid()*7
	return fmt.Sprintf("pke%x", n&0xffffff), fmt.Sprintf("10.%d.%d.0/24", 150+(n>>8)%40, n&0xff)
}

// logStacks logs the goroutine stacks of the namespace's runc shims and of their containerd
// (both dump them on SIGUSR1, the shims through containerd's log) and the processes the shims
// run, when a container could not be stopped: what a shim was waiting on.
func (a *agent) logStacks() {
	logFile := filepath.Join(filepath.Dir(a.address), "containerd.log")
	before, _ := os.ReadFile(logFile)
	var procs []string
	for _, pid := range pkruntime.RuncShimPIDs(a.address, a.ns) {
		_ = syscall.Kill(pid, syscall.SIGUSR1) // a shim this test's containerd started
		out, _ := exec.Command("ps", "-o", "pid,ppid,etimes,stat,wchan:32,args", "--ppid", strconv.Itoa(pid)).CombinedOutput()
		procs = append(procs, fmt.Sprintf("shim %d runs:\n%s", pid, out))
	}
	// containerd also writes its dump (the same as in its log) to <tmp>/containerd.<pid>.stacks.log:
	// removed, not left behind in /tmp.
	var dumpFile string
	if pid := env.PID(); a.address == env.Address && pid > 0 { // the package's containerd (a case with its own has its own log)
		dumpFile = filepath.Join(os.TempDir(), fmt.Sprintf("containerd.%d.stacks.log", pid))
		_ = syscall.Kill(pid, syscall.SIGUSR1)
	}
	time.Sleep(2 * time.Second)
	after, _ := os.ReadFile(logFile)
	if len(after) > len(before) {
		after = after[len(before):]
	}
	if dumpFile != "" {
		os.Remove(dumpFile)
	}
	a.t.Logf("%s\ncontainerd's log since (stack dumps):\n%s", strings.Join(procs, "\n"), after)
}

// network is the agent's pod network as `podkeeper run` builds it from the agent's flags.
func (a *agent) network() pkruntime.NetworkConfig {
	return pkruntime.NetworkConfig{
		ConfDir:  filepath.Join(a.dir, "net.d"),
		BinDirs:  pkruntime.DefaultCNIBinDirs,
		NetnsDir: filepath.Join(a.dir, "netns"),
		Default:  pkruntime.DefaultNetwork{Bridge: a.bridge, Subnet: a.subnet, DataDir: filepath.Join(a.root, "cni", "networks")},
	}
}

func (a *agent) cli(args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(binDir, "podkeeper"), append([]string{"--api-socket", a.sock}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("podkeeper %s: %v: %s", strings.Join(args, " "), err, errb.String())
	}
	return out.String() + errb.String(), nil
}

func (a *agent) pods() ([]corev1.Pod, error) {
	out, err := a.cli("get", "pods", "-o", "json")
	if err != nil {
		return nil, err
	}
	// `get pods` prints manifest warnings to stderr after the JSON; cut at the JSON's end.
	dec := json.NewDecoder(strings.NewReader(out))
	var l corev1.PodList
	if err := dec.Decode(&l); err != nil {
		return nil, fmt.Errorf("decode get pods -o json: %v: %s", err, out)
	}
	return l.Items, nil
}

func (a *agent) write(name, content string) {
	a.t.Helper()
	tmp := filepath.Join(a.manifests, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		a.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(a.manifests, name)); err != nil {
		a.t.Fatal(err)
	}
}

func (a *agent) remove(name string) {
	a.t.Helper()
	if err := os.Remove(filepath.Join(a.manifests, name)); err != nil {
		a.t.Fatal(err)
	}
}

// eventually polls cond every 100 ms until it holds or timeout passes.
func (a *agent) eventually(timeout time.Duration, what string, cond func() (bool, string)) {
	a.t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, info := cond()
		if ok {
			return
		}
		last = info
		if time.Now().After(deadline) {
			a.t.Fatalf("timed out after %v waiting for %s; last: %s", timeout, what, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitPod waits until the pod with full name name satisfies cond, and returns it.
func (a *agent) waitPod(timeout time.Duration, name, what string, cond func(p *corev1.Pod) bool) *corev1.Pod {
	a.t.Helper()
	var found *corev1.Pod
	a.eventually(timeout, name+" "+what, func() (bool, string) {
		pods, err := a.pods()
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for i := range pods {
			p := &pods[i]
			seen = append(seen, fmt.Sprintf("%s(%s,%s)", p.Name, p.Status.Phase, p.UID))
			if p.Name == name && p.DeletionTimestamp == nil && cond(p) {
				found = p
				return true, ""
			}
		}
		return false, strings.Join(seen, " ")
	})
	return found
}

// waitGone waits until no pod named name (of any UID, or of uid when set) is listed.
func (a *agent) waitGone(timeout time.Duration, name string, uid string) {
	a.t.Helper()
	a.eventually(timeout, name+" gone", func() (bool, string) {
		pods, err := a.pods()
		if err != nil {
			return false, err.Error()
		}
		for _, p := range pods {
			if p.Name == name && (uid == "" || string(p.UID) == uid) {
				return false, fmt.Sprintf("%s %s %s", p.Name, p.UID, p.Status.Phase)
			}
		}
		return true, ""
	})
}

// records lists the containers containerd holds for one pod (a direct look, not the agent's).
func (a *agent) records(uid string) []podrunner.ContainerRecord {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rt, err := pkruntime.Dial(ctx, pkruntime.Config{Address: a.address, Namespace: a.ns})
	if err != nil {
		a.t.Fatal(err)
	}
	defer rt.Close()
	recs, err := rt.ListContainers(ctx, uid)
	if err != nil {
		a.t.Fatal(err)
	}
	return recs
}

// pidOf returns the task PID of the newest running instance of container name, or 0.
func (a *agent) pidOf(uid, name string) uint32 {
	v := podrunner.NewPodView(a.records(uid))
	if r, ok := v.Latest(name); ok && r.State == podrunner.StateRunning {
		return r.PID
	}
	return 0
}

// runningPID returns the task PID of the newest running instance of container name.
func (a *agent) runningPID(uid, name string) uint32 {
	a.t.Helper()
	v := podrunner.NewPodView(a.records(uid))
	r, ok := v.Latest(name)
	if !ok || r.State != podrunner.StateRunning {
		a.t.Fatalf("container %s of %s is not running: %+v", name, uid, r)
	}
	return r.PID
}

func running(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running == nil {
			return false
		}
	}
	return len(p.Status.ContainerStatuses) > 0
}

func status(p *corev1.Pod, name string) corev1.ContainerStatus {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == name {
			return cs
		}
	}
	return corev1.ContainerStatus{}
}

func podYAML(name, policy string, grace int, extraSpec string, containers ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\nspec:\n  restartPolicy: %s\n  terminationGracePeriodSeconds: %d\n", name, policy, grace)
	b.WriteString(extraSpec)
	b.WriteString("  containers:\n")
	for _, c := range containers {
		b.WriteString(c)
	}
	return b.String()
}

func shContainer(name, script string, extra string) string {
	return fmt.Sprintf("  - name: %s\n    image: busybox\n    imagePullPolicy: IfNotPresent\n    command: [\"sh\", \"-c\", %q]\n%s", name, script, extra)
}
