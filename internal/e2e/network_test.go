package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkeeper/podkeeper/internal/testenv"
)

// Pod networking end to end with the real binary and the default network it writes: pod IPs in
// `get pods`, pod-to-pod traffic, a hostPort on 127.0.0.1, and everything released when the
// manifests go, also after a `kill -9` of the agent.
func TestPodNetworkEndToEnd(t *testing.T) {
	testenv.HoldPortmapChains(t)
	a := startAgent(t, "pk-e2e-net")
	_, subnet, _ := net.ParseCIDR(a.subnet)
	// (the API answers before the agent has reached containerd and set up networking: poll)
	a.eventually(30*time.Second, "the agent writes its default network config", func() (bool, string) {
		b, err := os.ReadFile(filepath.Join(a.network().ConfDir, "10-podkeeper.conflist"))
		return err == nil && strings.Contains(string(b), a.bridge), fmt.Sprint(err, string(b))
	})
	// Outbound NAT is one rule for the subnet, which the agent keeps (not a chain per pod).
	masq := "podkeeper podkeeper: masquerade pods leaving " + a.bridge
	a.eventually(10*time.Second, "one masquerade rule for the pod subnet", func() (bool, string) {
		hits, err := testenv.IptablesMentions(masq)
		return err == nil && len(hits) == 1 && strings.Contains(hits[0], "-s "+a.subnet), fmt.Sprint(hits, err)
	})
	hostPort := func() int {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port
	}()
	a.write("server.yaml", podYAML("server", "Always", 1, "",
		shContainer("web", "mkdir -p /www && echo hello-e2e > /www/index.html && exec httpd -f -p 8080 -h /www",
			fmt.Sprintf("    ports:\n    - containerPort: 8080\n      hostPort: %d\n", hostPort))))
	server := a.waitPod(30*time.Second, "server-e2e", "Running with a pod IP", func(p *corev1.Pod) bool { return running(p) && p.Status.PodIP != "" })
	ip := net.ParseIP(server.Status.PodIP)
	if !subnet.Contains(ip) || len(server.Status.PodIPs) != 1 {
		t.Fatalf("server pod IP %q (%v) not in the agent's subnet %s", server.Status.PodIP, server.Status.PodIPs, subnet)
	}
	wide, err := a.cli("get", "pods", "-o", "wide")
	if err != nil || !strings.Contains(wide, server.Status.PodIP) {
		t.Fatalf("get pods -o wide lacks the pod IP %s: %v\n%s", server.Status.PodIP, err, wide)
	}

	// A client pod fetches from the server by pod IP; its log shows what it got.
	a.write("client.yaml", podYAML("client", "Always", 1, "", shContainer("get",
		"while ! wget -q -O - http://"+server.Status.PodIP+":8080/index.html; do sleep 0.5; done; sleep 3600", "")))
	a.waitPod(30*time.Second, "client-e2e", "Running", running)
	a.eventually(30*time.Second, "client log shows the server's page", func() (bool, string) {
		out, err := a.cli("logs", "client-e2e")
		return err == nil && strings.Contains(out, "hello-e2e"), fmt.Sprint(out, err)
	})
	cl := &http.Client{Timeout: 3 * time.Second}
	a.eventually(30*time.Second, "hostPort answers on 127.0.0.1", func() (bool, string) {
		resp, err := cl.Get(fmt.Sprintf("http://127.0.0.1:%d/index.html", hostPort))
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.TrimSpace(string(b)) == "hello-e2e", string(b)
	})

	// The agent dies hard and comes back: the pods keep their IPs, and removal still releases them.
	a.kill9()
	a.start()
	again := a.waitPod(30*time.Second, "server-e2e", "Running after the restart", running)
	if again.Status.PodIP != server.Status.PodIP {
		t.Fatalf("pod IP changed across an agent restart: %s -> %s", server.Status.PodIP, again.Status.PodIP)
	}
	a.remove("server.yaml")
	a.remove("client.yaml")
	a.waitGone(60*time.Second, "server-e2e", "")
	a.waitGone(60*time.Second, "client-e2e", "")
	ipam := filepath.Join(a.root, "cni", "networks", "podkeeper")
	ents, _ := os.ReadDir(ipam)
	for _, e := range ents {
		if net.ParseIP(e.Name()) != nil {
			t.Errorf("IP %s still reserved after the pods were removed", e.Name())
		}
	}
	if out, _ := exec.Command("ip", "-o", "link", "show", "master", a.bridge).CombinedOutput(); strings.TrimSpace(string(out)) != "" {
		t.Errorf("veths left on %s:\n%s", a.bridge, out)
	}
	if out, _ := exec.Command("iptables-save").CombinedOutput(); strings.Contains(string(out), fmt.Sprintf("--dports %d ", hostPort)) {
		t.Errorf("hostPort %d DNAT rule left after the pod was removed", hostPort)
	}
}
