package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	gocni "github.com/containerd/go-cni"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDefaultConflist(t *testing.T) {
	b, err := DefaultConflist(DefaultNetwork{Bridge: "br-test", Subnet: "10.77.0.0/24", DataDir: "/tmp/ipam"})
	if err != nil {
		t.Fatal(err)
	}
	var conf struct {
		CNIVersion string `json:"cniVersion"`
		Name       string
		Plugins    []struct {
			Type         string
			Bridge       string
			IsGateway    bool `json:"isGateway"`
			IPMasq       bool `json:"ipMasq"`
			Capabilities map[string]bool
			IPAM         struct {
				Type    string
				DataDir string `json:"dataDir"`
				Ranges  [][]struct{ Subnet string }
				Routes  []struct{ Dst string }
			}
		}
	}
	if err := json.Unmarshal(b, &conf); err != nil {
		t.Fatalf("default conflist is not JSON: %v\n%s", err, b)
	}
	if conf.CNIVersion != "1.0.0" || conf.Name != DefaultNetworkName || len(conf.Plugins) != 2 {
		t.Fatalf("conflist header/plugins wrong:\n%s", b)
	}
	br, pm := conf.Plugins[0], conf.Plugins[1]
	if br.Type != "bridge" || br.Bridge != "br-test" || !br.IsGateway || br.IPMasq {
		t.Errorf("bridge plugin (ipMasq must be off: one rule for the subnet instead): %+v", br)
	}
	m, err := MasqueradeOf(b)
	if err != nil || m == nil || *m != (Masquerade{Network: DefaultNetworkName, Bridge: "br-test", Subnet: "10.77.0.0/24"}) {
		t.Errorf("the default conflist asks for masquerade %+v (%v), want the subnet leaving br-test", m, err)
	}
	if want := (DefaultNetwork{Bridge: "br-test", Subnet: "10.77.0.0/24"}).Masquerade(); m != nil && *m != want {
		t.Errorf("DefaultNetwork.Masquerade %+v, the conflist asks for %+v", want, *m)
	}
	if br.IPAM.Type != "host-local" || br.IPAM.DataDir != "/tmp/ipam" || len(br.IPAM.Ranges) != 1 || br.IPAM.Ranges[0][0].Subnet != "10.77.0.0/24" ||
		len(br.IPAM.Routes) != 1 || br.IPAM.Routes[0].Dst != "0.0.0.0/0" {
		t.Errorf("ipam: %+v", br.IPAM)
	}
	if pm.Type != "portmap" || !pm.Capabilities["portMappings"] {
		t.Errorf("portmap plugin: %+v", pm)
	}

	def, err := DefaultConflist(DefaultNetwork{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(def), `"bridge": "podkeeper0"`) || !strings.Contains(string(def), `"subnet": "10.89.0.0/16"`) || strings.Contains(string(def), "dataDir") {
		t.Errorf("defaults not applied:\n%s", def)
	}
	v6, err := DefaultConflist(DefaultNetwork{Subnet: "fd00:89::/64"})
	if err != nil || !strings.Contains(string(v6), `"dst": "::/0"`) {
		t.Errorf("IPv6 subnet: %v\n%s", err, v6)
	}
}

func TestDefaultConflistRejectsBadInput(t *testing.T) {
	for _, d := range []DefaultNetwork{
		{Subnet: "10.89.0.0"},
		{Subnet: "10.89.0.1/16"},
		{Subnet: "10.89.0.0/31"},
		{Bridge: "a-bridge-name-too-long"},
		{Bridge: "bad/name"},
		{Bridge: "bad name"},
	} {
		if _, err := DefaultConflist(d); err == nil {
			t.Errorf("%+v accepted", d)
		}
	}
}

func TestEnsureCNIConfigKeepsUserConfig(t *testing.T) {
	dir := t.TempDir()
	p, err := EnsureCNIConfig(filepath.Join(dir, "missing", "net.d"), DefaultNetwork{})
	if err != nil || filepath.Base(p) != DefaultConflistName {
		t.Fatalf("empty (missing) dir: wrote %q, err %v", p, err)
	}
	user := filepath.Join(dir, "user")
	if err := os.MkdirAll(user, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(user, "README"), []byte("not a config"), 0o644); err != nil {
		t.Fatal(err)
	}
	if p, err := EnsureCNIConfig(user, DefaultNetwork{}); err != nil || p == "" {
		t.Fatalf("dir with only a non-config file: wrote %q, err %v", p, err)
	}
	other := filepath.Join(dir, "other")
	_ = os.MkdirAll(other, 0o755)
	_ = os.WriteFile(filepath.Join(other, "05-mine.conf"), []byte(`{}`), 0o644)
	if p, err := EnsureCNIConfig(other, DefaultNetwork{}); err != nil || p != "" {
		t.Fatalf("dir with the user's config: wrote %q, err %v", p, err)
	}
	if _, err := os.Stat(filepath.Join(other, DefaultConflistName)); !os.IsNotExist(err) {
		t.Fatal("default written next to the user's config")
	}
}

func TestPortMappings(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "a", Ports: []corev1.ContainerPort{
			{ContainerPort: 80, HostPort: 8080},
			{ContainerPort: 53, HostPort: 5353, Protocol: corev1.ProtocolUDP, HostIP: "127.0.0.1"},
			{ContainerPort: 9090}, // no hostPort: not mapped
		}},
		{Name: "b", Ports: []corev1.ContainerPort{{HostPort: 7000}}},
	}}}
	want := []gocni.PortMapping{
		{HostPort: 8080, ContainerPort: 80, Protocol: "tcp"},
		{HostPort: 5353, ContainerPort: 53, Protocol: "udp", HostIP: "127.0.0.1"},
		{HostPort: 7000, ContainerPort: 7000, Protocol: "tcp"},
	}
	if got := PortMappings(pod); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if got := decodePortMappings(encodePortMappings(want)); !reflect.DeepEqual(got, want) {
		t.Fatalf("label round trip: %+v", got)
	}
}

func TestResultIPs(t *testing.T) {
	res := &gocni.Result{Interfaces: map[string]*gocni.Config{
		"lo":        {IPConfigs: []*gocni.IPConfig{{IP: mustIP("127.0.0.1")}}, Sandbox: "/ns"},
		"podkeeper": {IPConfigs: nil}, // bridge (host side)
		"eth0": {Sandbox: "/ns", IPConfigs: []*gocni.IPConfig{
			{IP: mustIP("fd00::5")}, {IP: mustIP("10.89.0.5")},
		}},
	}}
	if got := resultIPs(res); !reflect.DeepEqual(got, []string{"10.89.0.5", "fd00::5"}) {
		t.Fatalf("got %v", got)
	}
	if got := resultIPs(nil); got != nil {
		t.Fatalf("nil result: %v", got)
	}
}

func mustIP(s string) net.IP { return net.ParseIP(s) }

func testPodSpec(name string, mut func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "prod"}}
	if mut != nil {
		mut(p)
	}
	return p
}

func TestPodHostnameAndFQDN(t *testing.T) {
	yes := true
	cases := []struct {
		name           string
		pod            *corev1.Pod
		wantHost, want string
		wantErr        bool
	}{
		{"pod name", testPodSpec("web-node1", nil), "web-node1", "", false},
		{"hostname", testPodSpec("web-node1", func(p *corev1.Pod) { p.Spec.Hostname = "web" }), "web", "", false},
		{"subdomain", testPodSpec("web-node1", func(p *corev1.Pod) { p.Spec.Hostname = "web"; p.Spec.Subdomain = "svc1" }), "web", "web.svc1.prod.svc.example.org", false},
		{"setHostnameAsFQDN", testPodSpec("x", func(p *corev1.Pod) { p.Spec.Subdomain = "s"; p.Spec.SetHostnameAsFQDN = &yes }), "x.s.prod.svc.example.org", "x.s.prod.svc.example.org", false},
		{"FQDN too long", testPodSpec(strings.Repeat("a", 60), func(p *corev1.Pod) { p.Spec.Subdomain = "s"; p.Spec.SetHostnameAsFQDN = &yes }), "", "", true},
		{"long pod name cut to 63", testPodSpec(strings.Repeat("b", 70), nil), strings.Repeat("b", 63), "", false},
		{"hostnameOverride wins, no FQDN", testPodSpec("web-node1", func(p *corev1.Pod) {
			o := "edge-gw.example.com"
			p.Spec.HostnameOverride, p.Spec.Hostname, p.Spec.Subdomain = &o, "web", "svc1"
		}), "edge-gw.example.com", "", false},
	}
	for _, tc := range cases {
		h, f, err := PodHostnameAndFQDN(tc.pod, "example.org")
		if (err != nil) != tc.wantErr || h != tc.wantHost || f != tc.want {
			t.Errorf("%s: got %q %q %v, want %q %q err=%v", tc.name, h, f, err, tc.wantHost, tc.want, tc.wantErr)
		}
	}
}

func TestHostsFile(t *testing.T) {
	pod := testPodSpec("web", func(p *corev1.Pod) {
		p.Spec.HostAliases = []corev1.HostAlias{{IP: "1.2.3.4", Hostnames: []string{"foo.local", "bar.local"}}, {IP: "5.6.7.8"}}
	})
	got := string(HostsFile(pod, []string{"10.89.0.7"}, "web", "web.sub.prod.svc.cluster.local", nil))
	want := "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" +
		"fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n" +
		"10.89.0.7\tweb.sub.prod.svc.cluster.local\tweb\n\n# Entries added by HostAliases.\n1.2.3.4\tfoo.local\tbar.local\n"
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	if got := string(HostsFile(testPodSpec("p", nil), []string{"10.89.0.8"}, "p", "", nil)); !strings.HasSuffix(got, "fe00::2\tip6-allrouters\n10.89.0.8\tp\n") {
		t.Fatalf("no subdomain:\n%s", got)
	}
	hostNet := testPodSpec("h", func(p *corev1.Pod) {
		p.Spec.HostNetwork = true
		p.Spec.HostAliases = []corev1.HostAlias{{IP: "9.9.9.9", Hostnames: []string{"nine"}}}
	})
	got = string(HostsFile(hostNet, nil, "node1", "", []byte("127.0.0.1 localhost\n192.168.1.5 node1")))
	if got != "# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost\n192.168.1.5 node1\n\n# Entries added by HostAliases.\n9.9.9.9\tnine\n" {
		t.Fatalf("hostNetwork hosts file:\n%s", got)
	}
}

func TestParseResolvConf(t *testing.T) {
	got := ParseResolvConf([]byte("# comment\ndomain old.example\nsearch a.example b.example ; trailing\nnameserver 10.0.0.2\nnameserver 10.0.0.3 # x\noptions ndots:2 timeout:1\noptions rotate\n"))
	want := ResolvSettings{Nameservers: []string{"10.0.0.2", "10.0.0.3"}, Searches: []string{"a.example", "b.example"}, Options: []string{"ndots:2", "timeout:1", "rotate"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

func TestResolvConf(t *testing.T) {
	host := ResolvSettings{Nameservers: []string{"192.168.1.1"}, Searches: []string{"lan"}, Options: []string{"timeout:2"}}
	two := "2"
	cfg := &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1", "192.168.1.1"}, Searches: []string{"extra.example"},
		Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: &two}, {Name: "edns0"}}}
	cluster := DNSConfig{ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local"}
	cases := []struct {
		name     string
		policy   corev1.DNSPolicy
		hostNet  bool
		dnsCfg   *corev1.PodDNSConfig
		dns      DNSConfig
		want     ResolvSettings
		warnings int
	}{
		{"Default is the host's", corev1.DNSDefault, false, nil, cluster, host, 0},
		{"ClusterFirst without cluster DNS falls back to the host's", corev1.DNSClusterFirst, false, nil, DNSConfig{}, host, 1},
		{"unset policy is ClusterFirst", "", false, nil, DNSConfig{}, host, 1},
		{"ClusterFirst with cluster DNS", corev1.DNSClusterFirst, false, nil, cluster, ResolvSettings{
			Nameservers: []string{"10.96.0.10"}, Searches: []string{"prod.svc.cluster.local", "svc.cluster.local", "cluster.local", "lan"}, Options: []string{"ndots:5"}}, 0},
		{"ClusterFirst on hostNetwork is Default", corev1.DNSClusterFirst, true, nil, cluster, host, 0},
		{"ClusterFirstWithHostNet uses cluster DNS", corev1.DNSClusterFirstWithHostNet, true, nil, cluster, ResolvSettings{
			Nameservers: []string{"10.96.0.10"}, Searches: []string{"prod.svc.cluster.local", "svc.cluster.local", "cluster.local", "lan"}, Options: []string{"ndots:5"}}, 0},
		{"None is only dnsConfig", corev1.DNSNone, false, cfg, cluster, ResolvSettings{
			Nameservers: []string{"1.1.1.1", "192.168.1.1"}, Searches: []string{"extra.example"}, Options: []string{"ndots:2", "edns0"}}, 0},
		{"dnsConfig merges into Default", corev1.DNSDefault, false, cfg, cluster, ResolvSettings{
			Nameservers: []string{"192.168.1.1", "1.1.1.1"}, Searches: []string{"lan", "extra.example"}, Options: []string{"timeout:2", "ndots:2", "edns0"}}, 0},
		{"dnsConfig options override ClusterFirst's ndots", corev1.DNSClusterFirst, false, cfg, cluster, ResolvSettings{
			Nameservers: []string{"10.96.0.10", "1.1.1.1", "192.168.1.1"}, Searches: []string{"prod.svc.cluster.local", "svc.cluster.local", "cluster.local", "lan", "extra.example"}, Options: []string{"ndots:2", "edns0"}}, 0},
		{"more than 3 nameservers are cut", corev1.DNSNone, false, &corev1.PodDNSConfig{Nameservers: []string{"1.0.0.1", "1.0.0.2", "1.0.0.3", "1.0.0.4"}}, cluster, ResolvSettings{
			Nameservers: []string{"1.0.0.1", "1.0.0.2", "1.0.0.3"}}, 1},
	}
	for _, tc := range cases {
		pod := testPodSpec("p", func(p *corev1.Pod) {
			p.Spec.DNSPolicy, p.Spec.HostNetwork, p.Spec.DNSConfig = tc.policy, tc.hostNet, tc.dnsCfg
		})
		got, warn := ResolvConf(pod, host, tc.dns)
		if !reflect.DeepEqual(normalize(got), normalize(tc.want)) || len(warn) != tc.warnings {
			t.Errorf("%s:\n got %+v (warnings %q)\nwant %+v (%d warnings)", tc.name, got, warn, tc.want, tc.warnings)
		}
	}
	// Search paths: at most 32.
	var many []string
	for i := 0; i < 40; i++ {
		many = append(many, "s"+string(rune('a'+i%26))+strings.Repeat("x", i))
	}
	got, warn := ResolvConf(testPodSpec("p", func(p *corev1.Pod) {
		p.Spec.DNSPolicy = corev1.DNSNone
		p.Spec.DNSConfig = &corev1.PodDNSConfig{Searches: many}
	}), host, cluster)
	if len(got.Searches) != 32 || len(warn) != 1 {
		t.Errorf("40 search paths: kept %d, warnings %q", len(got.Searches), warn)
	}
	if r := string(ResolvSettings{Nameservers: []string{"1.1.1.1"}, Searches: []string{"a", "b"}, Options: []string{"ndots:5"}}.Render()); r != "search a b\nnameserver 1.1.1.1\noptions ndots:5\n" {
		t.Errorf("render: %q", r)
	}
}

func normalize(r ResolvSettings) ResolvSettings {
	if len(r.Nameservers) == 0 {
		r.Nameservers = nil
	}
	if len(r.Searches) == 0 {
		r.Searches = nil
	}
	if len(r.Options) == 0 {
		r.Options = nil
	}
	return r
}

// applyOpts runs spec options on a bare spec, as containerd's own tests do.
func applyOpts(t *testing.T, opts ...oci.SpecOpts) *oci.Spec {
	t.Helper()
	s := &oci.Spec{Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{
		{Type: specs.PIDNamespace}, {Type: specs.IPCNamespace}, {Type: specs.UTSNamespace}, {Type: specs.MountNamespace}, {Type: specs.NetworkNamespace},
	}}, Mounts: []specs.Mount{{Destination: "/dev/shm", Type: "tmpfs", Source: "shm"}}}
	for _, o := range opts {
		if err := o(context.Background(), nil, &containers.Container{}, s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func nsPaths(s *oci.Spec) map[specs.LinuxNamespaceType]string {
	out := map[specs.LinuxNamespaceType]string{}
	for _, n := range s.Linux.Namespaces {
		out[n.Type] = n.Path
	}
	return out
}

func TestContainerNamespaceOpts(t *testing.T) {
	yes := true
	cases := []struct {
		name string
		mut  func(*corev1.Pod)
		want map[specs.LinuxNamespaceType]string // "" = new namespace; absent = the host's
		shm  string                              // source of /dev/shm
	}{
		{"default: join net, uts, ipc; own pid", nil, map[specs.LinuxNamespaceType]string{
			specs.NetworkNamespace: "/proc/42/ns/net", specs.UTSNamespace: "/proc/42/ns/uts", specs.IPCNamespace: "/proc/42/ns/ipc",
			specs.PIDNamespace: "", specs.MountNamespace: ""}, "shm"},
		{"shareProcessNamespace joins the sandbox's pid ns", func(p *corev1.Pod) { p.Spec.ShareProcessNamespace = &yes }, map[specs.LinuxNamespaceType]string{
			specs.NetworkNamespace: "/proc/42/ns/net", specs.UTSNamespace: "/proc/42/ns/uts", specs.IPCNamespace: "/proc/42/ns/ipc",
			specs.PIDNamespace: "/proc/42/ns/pid", specs.MountNamespace: ""}, "shm"},
		{"hostPID", func(p *corev1.Pod) { p.Spec.HostPID = true; p.Spec.ShareProcessNamespace = &yes }, map[specs.LinuxNamespaceType]string{
			specs.NetworkNamespace: "/proc/42/ns/net", specs.UTSNamespace: "/proc/42/ns/uts", specs.IPCNamespace: "/proc/42/ns/ipc",
			specs.MountNamespace: ""}, "shm"},
		{"hostIPC uses the host's ipc and /dev/shm", func(p *corev1.Pod) { p.Spec.HostIPC = true }, map[specs.LinuxNamespaceType]string{
			specs.NetworkNamespace: "/proc/42/ns/net", specs.UTSNamespace: "/proc/42/ns/uts",
			specs.PIDNamespace: "", specs.MountNamespace: ""}, "/dev/shm"},
		{"hostNetwork leaves net and uts to hostnameOpts", func(p *corev1.Pod) { p.Spec.HostNetwork = true }, map[specs.LinuxNamespaceType]string{
			specs.NetworkNamespace: "", specs.UTSNamespace: "", specs.IPCNamespace: "/proc/42/ns/ipc",
			specs.PIDNamespace: "", specs.MountNamespace: ""}, "shm"},
	}
	proc42 := func(t specs.LinuxNamespaceType) string { return "/proc/42/ns/" + nsFile(t) }
	for _, tc := range cases {
		pod := testPodSpec("p", tc.mut)
		opts, err := containerNamespaceOpts(pod, proc42)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		s := applyOpts(t, opts...)
		if got := nsPaths(s); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: namespaces %v, want %v", tc.name, got, tc.want)
		}
		if src := s.Mounts[0].Source; src != tc.shm {
			t.Errorf("%s: /dev/shm from %q, want %q", tc.name, src, tc.shm)
		}
	}
	// A sandbox whose process does not exist yet: the namespaces pinned ahead, or an error.
	pinned := func(t specs.LinuxNamespaceType) string {
		if t == specs.PIDNamespace {
			return ""
		}
		return "/pins/" + nsFile(t)
	}
	opts, err := containerNamespaceOpts(testPodSpec("p", nil), pinned)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := nsPaths(applyOpts(t, opts...)), map[specs.LinuxNamespaceType]string{
		specs.NetworkNamespace: "/pins/net", specs.UTSNamespace: "/pins/uts", specs.IPCNamespace: "/pins/ipc",
		specs.PIDNamespace: "", specs.MountNamespace: ""}; !reflect.DeepEqual(got, want) {
		t.Errorf("pinned namespaces %v, want %v", got, want)
	}
	if _, err := containerNamespaceOpts(testPodSpec("p", func(p *corev1.Pod) { p.Spec.ShareProcessNamespace = &yes }), pinned); !errors.Is(err, errNoSandboxNamespace) || !strings.Contains(err.Error(), "pid") {
		t.Errorf("shareProcessNamespace without the sandbox's process: %v, want errNoSandboxNamespace naming pid", err)
	}
	none := func(specs.LinuxNamespaceType) string { return "" }
	if _, err := containerNamespaceOpts(testPodSpec("p", nil), none); !errors.Is(err, errNoSandboxNamespace) {
		t.Errorf("no namespaces at all: %v, want errNoSandboxNamespace", err)
	}
	if _, err := containerNamespaceOpts(testPodSpec("p", func(p *corev1.Pod) { p.Spec.HostNetwork, p.Spec.HostIPC = true, true }), none); err != nil {
		t.Errorf("a pod with only host namespaces needs none of the sandbox's: %v", err)
	}
	sb := applyOpts(t, sandboxNamespaceOpts(testPodSpec("p", func(p *corev1.Pod) { p.Spec.HostPID, p.Spec.HostIPC = true, true }))...)
	if got := nsPaths(sb); !reflect.DeepEqual(got, map[specs.LinuxNamespaceType]string{specs.UTSNamespace: "", specs.MountNamespace: "", specs.NetworkNamespace: ""}) {
		t.Errorf("hostPID+hostIPC sandbox namespaces %v", got)
	}
}

func TestNamespacesAhead(t *testing.T) {
	yes := true
	pinnedAll := map[string]string{LabelNetns: "/run/netns/x", LabelNamespaces: "/pods/u/ns/x"}
	cases := []struct {
		name   string
		mut    func(*corev1.Pod)
		labels map[string]string
		want   bool
	}{
		{"network, UTS and IPC pinned", nil, pinnedAll, true},
		{"no CNI: the network namespace comes with the process", nil, map[string]string{LabelNamespaces: "/pods/u/ns/x"}, false},
		{"UTS and IPC not pinned", nil, map[string]string{LabelNetns: "/run/netns/x"}, false},
		{"shareProcessNamespace joins the process's PID namespace", func(p *corev1.Pod) { p.Spec.ShareProcessNamespace = &yes }, pinnedAll, false},
		{"hostPID wins over shareProcessNamespace", func(p *corev1.Pod) { p.Spec.ShareProcessNamespace, p.Spec.HostPID = &yes, true }, pinnedAll, true},
		{"hostNetwork: IPC pinned", func(p *corev1.Pod) { p.Spec.HostNetwork = true }, map[string]string{LabelNamespaces: "/pods/u/ns/x"}, true},
		{"hostNetwork and hostIPC: only the host's", func(p *corev1.Pod) { p.Spec.HostNetwork, p.Spec.HostIPC = true, true }, map[string]string{}, true},
	}
	for _, tc := range cases {
		if got := namespacesAhead(testPodSpec("p", tc.mut), tc.labels); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	// Without a process only where something is pinned: its life stands for the sandbox's.
	for _, tc := range cases {
		want := tc.want && (tc.labels[LabelNetns] != "" || tc.labels[LabelNamespaces] != "")
		if got := sandboxWithoutProcess(testPodSpec("p", tc.mut), tc.labels); got != want {
			t.Errorf("sandboxWithoutProcess: %s: %v, want %v", tc.name, got, want)
		}
	}
}

func TestConflistWithoutPortmap(t *testing.T) {
	def, err := DefaultConflist(DefaultNetwork{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, in string
		want     []string // plugin types left; nil: nothing to drop
		wantErr  bool
	}{
		{name: "default network", in: string(def), want: []string{"bridge"}},
		{name: "portmap in the middle", in: `{"cniVersion":"1.0.0","name":"n","plugins":[{"type":"ptp"},{"type":"portmap","snat":false},{"type":"tuning"}]}`, want: []string{"ptp", "tuning"}},
		{name: "no portmap", in: `{"cniVersion":"1.0.0","name":"n","plugins":[{"type":"ptp"}]}`},
		{name: "portmap only", in: `{"cniVersion":"1.0.0","name":"n","plugins":[{"type":"portmap"}]}`},
		{name: "single-plugin conf", in: `{"cniVersion":"1.0.0","name":"n","type":"bridge"}`},
		{name: "not JSON", in: `{"plugins":`, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, ok, err := ConflistWithoutPortmap([]byte(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error: %v", err, tc.wantErr)
			}
			if ok != (tc.want != nil) {
				t.Fatalf("ok = %v for %s", ok, tc.in)
			}
			if !ok {
				if b != nil {
					t.Fatalf("bytes returned with ok false: %s", b)
				}
				return
			}
			var out, in map[string]any
			if err := json.Unmarshal(b, &out); err != nil {
				t.Fatalf("result is not JSON: %v: %s", err, b)
			}
			_ = json.Unmarshal([]byte(tc.in), &in)
			var got []string
			for _, p := range out["plugins"].([]any) {
				got = append(got, p.(map[string]any)["type"].(string))
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("plugins %v, want %v", got, tc.want)
			}
			for k, v := range in { // every other key kept as it was
				if k != "plugins" && fmt.Sprint(out[k]) != fmt.Sprint(v) {
					t.Fatalf("key %s: %v, was %v", k, out[k], v)
				}
			}
		})
	}
}
