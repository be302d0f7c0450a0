package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	gocni "github.com/containerd/go-cni"
	corev1 "k8s.io/api/core/v1"
)

// Pod networking through CNI.
//
// Design (what survives what):
//
//   - Every non-hostNetwork sandbox gets a network namespace that podkeeper creates itself and pins
//     with a bind mount on a file, <NetnsDir>/pk-<containerd namespace>-<sandbox ID> (by default
//     under /run/netns, so `ip netns exec` works), the way the CRI does. CNI ADD runs on that file
//     BEFORE the pause process starts; the pause process is then created inside it (its OCI spec
//     names the path). The pod's IPs and the netns path are recorded in the sandbox's labels.
//   - Because the namespace is pinned by a file rather than held by the pause process, teardown
//     (CNI DEL) works the same whether the pause process runs, died, or the whole agent was
//     restarted (kill -9): everything teardown needs is in the labels plus the file. /run is a
//     tmpfs: after a reboot the file is gone, and teardown runs DEL without a namespace, which
//     the plugins accept (host-local still releases the IP by container ID).
//   - Teardown runs when a sandbox is stopped (as the kubelet's StopPodSandbox) and again, as a
//     no-op, when it is removed; it is idempotent and marks the sandbox released in its labels.
//     At agent start, netns files with no sandbox container (a crash between ADD and create) are
//     torn down too.
//
// The CNI configuration is the first file of ConfDir (sorted by name, as containerd does); when
// ConfDir has none, podkeeper writes DefaultConflistName there from NetworkConfig.Default. A
// changed directory is re-read before the next pod's setup. The loopback network is always added
// (as the CRI does), so the pod's lo is up whatever the user's config says. The default network's
// outbound NAT is one rule for its subnet that the agent keeps (masq.go), set up when the config
// is loaded, before any pod's CNI ADD.

// Labels a sandbox carries about its network.
const (
	LabelPodIPs          = "podkeeper.io/pod-ips"          // comma-separated, the default interface's IPs (IPv4 first)
	LabelNetns           = "podkeeper.io/netns"            // the pinned network namespace file
	LabelNetworkReleased = "podkeeper.io/network-released" // "true" once CNI DEL succeeded
	LabelPortMappings    = "podkeeper.io/port-mappings"    // JSON hostPort mappings given to CNI ADD, for DEL
)

// DefaultConflistName is the file podkeeper writes into an empty CNI config dir.
const DefaultConflistName = "10-podkeeper.conflist"

// Defaults of the network podkeeper writes when the CNI config dir has none. They do not clash
// with containerd's own example network (cni0, 10.88.0.0/16) nor docker's (docker0, 172.17/16).
const (
	DefaultNetworkName = "podkeeper"
	DefaultBridge      = "podkeeper0"
	DefaultPodSubnet   = "10.89.0.0/16"
)

// DefaultCNIBinDirs are searched for plugins, in order: Debian's containernetworking-plugins, then
// the upstream location.
var DefaultCNIBinDirs = []string{"/usr/lib/cni", "/opt/cni/bin"}

// NetworkConfig says how pods get their network. A zero NetworkConfig (empty ConfDir) means no
// CNI: each pod still gets its own network namespace, with only loopback up.
type NetworkConfig struct {
	ConfDir  string   // CNI config dir, e.g. /etc/cni/net.d
	BinDirs  []string // CNI plugin dirs; default DefaultCNIBinDirs
	NetnsDir string   // where pinned network namespaces live; default /run/netns
	Default  DefaultNetwork
}

// DefaultNetwork describes the conflist written when ConfDir has none.
type DefaultNetwork struct {
	Name    string // network name; default DefaultNetworkName
	Bridge  string // bridge interface; default DefaultBridge
	Subnet  string // pod subnet (CIDR); default DefaultPodSubnet
	DataDir string // host-local's dataDir (IP reservations); empty: the plugin's /var/lib/cni/networks
}

func (d DefaultNetwork) withDefaults() DefaultNetwork {
	if d.Name == "" {
		d.Name = DefaultNetworkName
	}
	if d.Bridge == "" {
		d.Bridge = DefaultBridge
	}
	if d.Subnet == "" {
		d.Subnet = DefaultPodSubnet
	}
	return d
}

// DefaultConflist renders podkeeper's default network: a bridge with host-local IPAM on the pod
// subnet (the bridge is the pods' gateway) followed by portmap for hostPort. Traffic leaving the
// node is masqueraded by one rule for the subnet that the agent keeps (the conflist's "podkeeper"
// key asks for it; see masq.go), not by the bridge plugin's per-pod chains. Pure; it rejects a bad bridge name or subnet with a clear error.
func DefaultConflist(d DefaultNetwork) ([]byte, error) {
	d = d.withDefaults()
	if err := validIfName(d.Bridge); err != nil {
		return nil, fmt.Errorf("bridge name %q: %w", d.Bridge, err)
	}
	ip, ipnet, err := net.ParseCIDR(d.Subnet)
	if err != nil {
		return nil, fmt.Errorf("pod subnet %q: %w", d.Subnet, err)
	}
	if !ip.Equal(ipnet.IP) {
		return nil, fmt.Errorf("pod subnet %q: not a network address (did you mean %s?)", d.Subnet, ipnet)
	}
	ones, bits := ipnet.Mask.Size()
	if bits-ones < 2 {
		return nil, fmt.Errorf("pod subnet %q: too small for a gateway and a pod", d.Subnet)
	}
	defaultRoute := "0.0.0.0/0"
	if ip.To4() == nil {
		defaultRoute = "::/0"
	}
	ipam := map[string]any{
		"type":   "host-local",
		"ranges": [][]map[string]string{{{"subnet": ipnet.String()}}},
		"routes": []map[string]string{{"dst": defaultRoute}},
	}
	if d.DataDir != "" {
		ipam["dataDir"] = d.DataDir
	}
	conf := map[string]any{
		"cniVersion":          "1.0.0",
		"name":                d.Name,
		conflistMasqueradeKey: conflistMasquerade{Masquerade: true},
		"plugins": []map[string]any{
			{
				"type":        "bridge",
				"bridge":      d.Bridge,
				"isGateway":   true,
				"ipMasq":      false, // one rule for the subnet instead (masq.go)
				"hairpinMode": true,
				"ipam":        ipam,
			},
			{
				// snat (the default) also sets route_localnet on the bridge and masquerades
				// 127.0.0.1 sources, so a hostPort answers on the node's 127.0.0.1.
				"type":         "portmap",
				"capabilities": map[string]bool{"portMappings": true},
			},
		},
	}
	out, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

func validIfName(n string) error {
	if n == "" || len(n) > 15 {
		return errors.New("must be 1 to 15 characters")
	}
	if n == "." || n == ".." {
		return errors.New("not a valid interface name")
	}
	for _, c := range n {
		if c == '/' || c == ':' || c <= ' ' || c > '~' {
			return fmt.Errorf("character %q not allowed", c)
		}
	}
	return nil
}

// cniConfFiles lists the CNI config files of dir, sorted, as libcni picks them.
func cniConfFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		switch filepath.Ext(e.Name()) {
		case ".conf", ".conflist", ".json":
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out)
	return out, nil
}

// EnsureCNIConfig writes the default conflist into dir when dir holds no CNI config, and returns
// the path written ("" when the user's config is there).
func EnsureCNIConfig(dir string, d DefaultNetwork) (string, error) {
	files, err := cniConfFiles(dir)
	if err != nil {
		return "", fmt.Errorf("read CNI config dir %s: %w", dir, err)
	}
	if len(files) > 0 {
		return "", nil
	}
	b, err := DefaultConflist(d)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create CNI config dir: %w", err)
	}
	p := filepath.Join(dir, DefaultConflistName)
	tmp := p + ".tmp" // not a config extension: never half-read
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return "", fmt.Errorf("write default CNI config: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return "", fmt.Errorf("write default CNI config: %w", err)
	}
	return p, nil
}

// podNetwork runs CNI for sandboxes. Safe for concurrent use.
type podNetwork struct {
	cfg NetworkConfig
	ns  string // containerd namespace, part of the netns file names
	log *slog.Logger

	mu    sync.Mutex
	cni   netChains
	stamp string // what the config dir looked like when cni was loaded
}

// netChains are the pod network loaded from the config dir: its plugin chain as written, and the
// same chain without its portmap plugins for the pods that map no hostPort (portmap does nothing
// for them but costs a plugin exec on every ADD and DEL; nil when the chain has no portmap).
type netChains struct{ full, noPorts gocni.CNI }

// forPorts is the chain for a pod with these hostPort mappings: the same at ADD and at DEL,
// since DEL is given the mappings ADD was. Pure.
func (c netChains) forPorts(ports []gocni.PortMapping) gocni.CNI {
	if len(ports) == 0 && c.noPorts != nil {
		return c.noPorts
	}
	return c.full
}

func newPodNetwork(cfg NetworkConfig, containerdNS string, log *slog.Logger) (*podNetwork, error) {
	if len(cfg.BinDirs) == 0 {
		cfg.BinDirs = DefaultCNIBinDirs
	}
	if cfg.NetnsDir == "" {
		cfg.NetnsDir = "/run/netns"
	}
	if _, err := DefaultConflist(cfg.Default); err != nil {
		return nil, fmt.Errorf("default pod network: %w", err)
	}
	n := &podNetwork{cfg: cfg, ns: containerdNS, log: log}
	if _, err := n.load(); err != nil {
		// A broken user config must not stop the agent (running pods are adopted and kept):
		// sandboxes fail with this error until it is fixed, and the dir is re-read each time.
		log.Error("CNI config not usable; pods without hostNetwork cannot start until it is fixed", "dir", cfg.ConfDir, "err", err)
	}
	return n, nil
}

// load (re)reads the CNI config when the directory changed, writing the default when it is empty,
// and returns the chains to use. It takes n.mu.
//
// The loopback interface is not CNI's: pinNewNetns brings it up when it makes the namespace (the
// CRI adds CNI's loopback plugin to every pod, one more plugin exec on each ADD and DEL; measured
// on this 2-core machine, the loopback and portmap execs were about 40% of a pod's CNI time).
func (n *podNetwork) load() (netChains, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	written, err := EnsureCNIConfig(n.cfg.ConfDir, n.cfg.Default)
	if err != nil {
		return netChains{}, err
	}
	if written != "" {
		n.log.Info("no CNI config found; wrote podkeeper's default network", "file", written,
			"bridge", n.cfg.Default.withDefaults().Bridge, "subnet", n.cfg.Default.withDefaults().Subnet)
	}
	stamp, err := dirStamp(n.cfg.ConfDir)
	if err != nil {
		return netChains{}, err
	}
	if n.cni.full != nil && stamp == n.stamp {
		return n.cni, nil
	}
	keep := func(err error) (netChains, error) {
		if n.cni.full != nil {
			n.log.Warn("changed CNI config: still using the previous one", "err", err)
			return n.cni, nil
		}
		return netChains{}, err
	}
	full, err := n.newCNI(gocni.WithDefaultConf)
	if err != nil {
		return keep(fmt.Errorf("load CNI config from %s: %w", n.cfg.ConfDir, err))
	}
	chains := netChains{full: full}
	if b, ok, err := n.withoutPortmap(); err != nil {
		n.log.Debug("CNI config: every pod runs its portmap plugin", "err", err)
	} else if ok {
		if c, err := n.newCNI(gocni.WithConfListBytes(b)); err != nil {
			n.log.Debug("CNI config: every pod runs its portmap plugin", "err", err)
		} else {
			chains.noPorts = c
		}
	}
	if err := n.ensureMasquerade(); err != nil {
		return keep(fmt.Errorf("its masquerade rule cannot be set up: %w", err))
	}
	if n.cni.full != nil {
		n.log.Info("CNI config changed; reloaded", "dir", n.cfg.ConfDir)
	}
	n.cni, n.stamp = chains, stamp
	return chains, nil
}

// newCNI loads one pod network (the loopback is not CNI's: see load).
func (n *podNetwork) newCNI(conf gocni.Opt) (gocni.CNI, error) {
	c, err := gocni.New(
		gocni.WithMinNetworkCount(1),
		gocni.WithPluginConfDir(n.cfg.ConfDir),
		gocni.WithPluginDir(n.cfg.BinDirs),
		gocni.WithInterfacePrefix("eth"),
	)
	if err != nil {
		return nil, fmt.Errorf("CNI: %w", err)
	}
	if err := c.Load(conf); err != nil {
		return nil, err
	}
	return c, nil
}

// withoutPortmap reads the config in use (the dir's first file) and returns it without its
// portmap plugins; ok is false when it has none to drop.
func (n *podNetwork) withoutPortmap() (b []byte, ok bool, err error) {
	files, err := cniConfFiles(n.cfg.ConfDir)
	if err != nil || len(files) == 0 {
		return nil, false, err
	}
	raw, err := os.ReadFile(files[0])
	if err != nil {
		return nil, false, fmt.Errorf("read CNI config: %w", err)
	}
	return ConflistWithoutPortmap(raw)
}

// ConflistWithoutPortmap returns a conflist without its plugins of type portmap; ok is false
// (and b nil) when there is nothing to drop: not a conflist, no portmap, or nothing else left.
// Every other key is kept as it was. Pure.
func ConflistWithoutPortmap(raw []byte) (b []byte, ok bool, err error) {
	var conf map[string]json.RawMessage
	if err := json.Unmarshal(raw, &conf); err != nil {
		return nil, false, fmt.Errorf("CNI config: %w", err)
	}
	var plugins []json.RawMessage
	if p, found := conf["plugins"]; !found || json.Unmarshal(p, &plugins) != nil {
		return nil, false, nil
	}
	kept := plugins[:0:0]
	for _, p := range plugins {
		var t struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(p, &t); err == nil && t.Type == "portmap" {
			continue
		}
		kept = append(kept, p)
	}
	if len(kept) == len(plugins) || len(kept) == 0 {
		return nil, false, nil
	}
	conf["plugins"], err = json.Marshal(kept)
	if err != nil {
		return nil, false, err
	}
	b, err = json.Marshal(conf)
	if err != nil {
		return nil, false, err
	}
	return b, true, nil
}

// ensureMasquerade sets up the subnet's masquerade rule when the config in use (the dir's first
// file) asks for one, as podkeeper's default network does. Called with n.mu held.
func (n *podNetwork) ensureMasquerade() error {
	files, err := cniConfFiles(n.cfg.ConfDir)
	if err != nil || len(files) == 0 {
		return err
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		return fmt.Errorf("read CNI config: %w", err)
	}
	m, err := MasqueradeOf(b)
	if err != nil {
		return fmt.Errorf("CNI config %s: %w", files[0], err)
	}
	if m == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.Ensure(ctx); err != nil {
		return fmt.Errorf("pod network %s: %w", m.Network, err)
	}
	n.log.Debug("masquerade rule in place", "network", m.Network, "subnet", m.Subnet, "bridge", m.Bridge)
	return nil
}

// dirStamp summarises the config files of dir (names, sizes, mtimes) to notice edits.
func dirStamp(dir string) (string, error) {
	files, err := cniConfFiles(dir)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			continue
		}
		fmt.Fprintf(&b, "%s %d %d\n", f, fi.Size(), fi.ModTime().UnixNano())
	}
	return b.String(), nil
}

// netnsPath is the pinned namespace file of a sandbox.
func (n *podNetwork) netnsPath(sandboxID string) string {
	return filepath.Join(n.cfg.NetnsDir, n.netnsPrefix()+sandboxID)
}

func (n *podNetwork) netnsPrefix() string { return "pk-" + n.ns + "-" }

// pin creates the sandbox's pinned network namespace (releasing one a crash left behind).
func (n *podNetwork) pin(ctx context.Context, sandboxID string) (string, error) {
	if _, err := n.load(); err != nil {
		return "", err
	}
	path := n.netnsPath(sandboxID)
	if _, err := os.Stat(path); err == nil {
		// Left by a crash between setup and the sandbox's creation: release it first.
		if err := n.teardown(ctx, sandboxID, path, cachedPortMappings(sandboxID)); err != nil {
			return "", fmt.Errorf("release leftover network of %s: %w", sandboxID, err)
		}
	}
	if err := pinNewNetns(path); err != nil {
		return "", fmt.Errorf("create network namespace: %w", err)
	}
	return path, nil
}

// cniTimeout bounds one CNI ADD or DEL (every plugin of the chain): a plugin that never returns
// (waiting on its daemon, on a lock held elsewhere) fails the sandbox's creation, which is then
// tried again, instead of holding the pod for good. The kubelet's runtime-request-timeout (2 m)
// bounds its CRI calls, these included. A variable for tests.
var cniTimeout = 2 * time.Minute

// withCNITimeout runs one CNI call under cniTimeout; a call the timeout ended says so.
func withCNITimeout(ctx context.Context, call func(context.Context) error) error {
	cctx, cancel := context.WithTimeout(ctx, cniTimeout)
	defer cancel()
	err := call(cctx)
	if err != nil && errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		err = fmt.Errorf("no answer within %s (a plugin hangs; the kubelet's runtime-request-timeout): %w", cniTimeout, err)
	}
	return err
}

// attach runs CNI ADD for the sandbox in the pinned namespace path and returns the pod's IPs. On
// failure the network is torn down (the namespace removed) before it returns.
func (n *podNetwork) attach(ctx context.Context, sandboxID, path string, pod *corev1.Pod) ([]string, error) {
	chains, err := n.load()
	if err != nil {
		_ = removePinnedNs(path)
		return nil, err
	}
	ports := PortMappings(pod)
	var res *gocni.Result
	err = withCNITimeout(ctx, func(ctx context.Context) (err error) {
		res, err = chains.forPorts(ports).Setup(ctx, sandboxID, path, n.nsOpts(sandboxID, pod, ports)...)
		return err
	})
	if err != nil {
		if derr := n.teardown(context.WithoutCancel(ctx), sandboxID, path, ports); derr != nil {
			n.log.Warn("undo failed CNI setup", "sandbox", sandboxID, "err", derr)
		}
		return nil, fmt.Errorf("CNI setup of pod network: %w", err)
	}
	ips := resultIPs(res)
	if len(ips) == 0 {
		_ = n.teardown(context.WithoutCancel(ctx), sandboxID, path, ports)
		return nil, errors.New("CNI setup of pod network: the plugins gave the pod no IP address")
	}
	return ips, nil
}

// teardown detaches the sandbox from the CNI network (CNI DEL) and removes its pinned namespace.
// Idempotent; it works when the namespace file is already gone (DEL then runs without one, and
// IPAM still releases the address). ports must be the hostPort mappings ADD was given: portmap
// removes the DNAT rules of exactly those.
func (n *podNetwork) teardown(ctx context.Context, sandboxID, path string, ports []gocni.PortMapping) error {
	chains, err := n.load()
	if err != nil {
		return err
	}
	nsPath := path
	if path == "" || !isNsFile(path) {
		nsPath = ""
	}
	if err := withCNITimeout(ctx, func(ctx context.Context) error {
		return chains.forPorts(ports).Remove(ctx, sandboxID, nsPath, n.nsOpts(sandboxID, nil, ports)...)
	}); err != nil {
		return fmt.Errorf("CNI teardown of pod network: %w", err)
	}
	// A sandbox made by an agent before 2026-12-05 also ran CNI's loopback plugin, whose cached
	// result libcni keeps until a DEL of that network; the namespace goes anyway.
	_ = os.Remove(filepath.Join(cniCacheDir, "results", "cni-loopback-"+sandboxID+"-lo"))
	if path != "" {
		if err := removePinnedNs(path); err != nil {
			return fmt.Errorf("remove network namespace %s: %w", path, err)
		}
	}
	return nil
}

// nsOpts are the CNI_ARGS (as the CRI passes them) and capability args (hostPort mappings).
func (n *podNetwork) nsOpts(sandboxID string, pod *corev1.Pod, ports []gocni.PortMapping) []gocni.NamespaceOpts {
	labels := map[string]string{
		"IgnoreUnknown":              "1",
		"K8S_POD_INFRA_CONTAINER_ID": sandboxID,
	}
	var opts []gocni.NamespaceOpts
	if pod != nil {
		labels["K8S_POD_NAMESPACE"] = pod.Namespace
		labels["K8S_POD_NAME"] = pod.Name
		labels["K8S_POD_UID"] = string(pod.UID)
	}
	if len(ports) > 0 {
		opts = append(opts, gocni.WithCapabilityPortMap(ports))
	}
	return append([]gocni.NamespaceOpts{gocni.WithLabels(labels)}, opts...)
}

// PortMappings are the hostPort mappings of a pod's containers, for portmap's portMappings
// capability. Protocol defaults to TCP and is lower-cased, as the CRI passes it. Pure.
func PortMappings(pod *corev1.Pod) []gocni.PortMapping {
	var out []gocni.PortMapping
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort <= 0 {
				continue
			}
			proto := strings.ToLower(string(p.Protocol))
			if proto == "" {
				proto = "tcp"
			}
			cp := p.ContainerPort
			if cp == 0 {
				cp = p.HostPort
			}
			out = append(out, gocni.PortMapping{HostPort: p.HostPort, ContainerPort: cp, Protocol: proto, HostIP: p.HostIP})
		}
	}
	return out
}

// resultIPs are the IPs of the pod's default interface (eth0), IPv4 first.
func resultIPs(res *gocni.Result) []string {
	if res == nil {
		return nil
	}
	var v4, v6 []string
	names := make([]string, 0, len(res.Interfaces))
	for name := range res.Interfaces {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if name == "lo" {
			continue
		}
		cfg := res.Interfaces[name]
		if cfg == nil || cfg.Sandbox == "" {
			continue // a host-side interface (bridge, veth peer)
		}
		for _, ipc := range cfg.IPConfigs {
			if ipc.IP == nil || ipc.IP.IsLoopback() {
				continue
			}
			if ipc.IP.To4() != nil {
				v4 = append(v4, ipc.IP.String())
			} else {
				v6 = append(v6, ipc.IP.String())
			}
		}
		if len(v4)+len(v6) > 0 {
			break // the first (default) interface only
		}
	}
	return append(v4, v6...)
}

// gcOrphans tears down pinned namespaces of this containerd namespace whose sandbox container
// does not exist (a crash between CNI ADD and the sandbox's creation). exists reports whether a
// container of that ID exists. Errors are logged; it never fails the agent.
func (n *podNetwork) gcOrphans(ctx context.Context, exists func(id string) (bool, error)) {
	ents, err := os.ReadDir(n.cfg.NetnsDir)
	if err != nil {
		return
	}
	prefix := n.netnsPrefix()
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		id := strings.TrimPrefix(e.Name(), prefix)
		ok, err := exists(id)
		if err != nil || ok {
			continue
		}
		if err := n.teardown(ctx, id, filepath.Join(n.cfg.NetnsDir, e.Name()), cachedPortMappings(id)); err != nil {
			n.log.Warn("release orphaned pod network", "sandbox", id, "err", err)
			continue
		}
		n.log.Info("released orphaned pod network", "sandbox", id)
	}
}

// cniCacheDir is libcni's result cache (go-cni's default).
const cniCacheDir = "/var/lib/cni"

// cachedPortMappings reads the hostPort mappings a sandbox's CNI ADD was given from libcni's
// result cache (/var/lib/cni/results), for a sandbox whose labels are gone (an orphan).
func cachedPortMappings(sandboxID string) []gocni.PortMapping {
	files, _ := filepath.Glob(filepath.Join(cniCacheDir, "results", "*-"+sandboxID+"-eth*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var cached struct {
			CapabilityArgs struct {
				PortMappings []gocni.PortMapping `json:"portMappings"`
			} `json:"capabilityArgs"`
		}
		if json.Unmarshal(b, &cached) == nil && len(cached.CapabilityArgs.PortMappings) > 0 {
			return cached.CapabilityArgs.PortMappings
		}
	}
	return nil
}

// encodePortMappings and decodePortMappings keep the mappings in a sandbox label.
func encodePortMappings(pm []gocni.PortMapping) string {
	if len(pm) == 0 {
		return ""
	}
	b, _ := json.Marshal(pm)
	return string(b)
}

func decodePortMappings(s string) []gocni.PortMapping {
	if s == "" {
		return nil
	}
	var pm []gocni.PortMapping
	if err := json.Unmarshal([]byte(s), &pm); err != nil {
		return nil
	}
	return pm
}
