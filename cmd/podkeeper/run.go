package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"
	"golang.org/x/term"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podkeeper/podkeeper/cgroup"
	"github.com/podkeeper/podkeeper/podrunner"
	"github.com/podkeeper/podkeeper/podrunner/api"
	"github.com/podkeeper/podkeeper/podrunner/crilog"
	"github.com/podkeeper/podkeeper/podrunner/runtime"
	"github.com/podkeeper/podkeeper/watcher"
)

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "localhost"
	}
	return strings.ToLower(h)
}

func runCommand() *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "config", Usage: "YAML file setting any of these flags by name (flags on the command line win)"},
		altsrc.NewStringFlag(&cli.StringFlag{Name: "manifest-dir", Value: "/etc/podkeeper/manifests", Usage: "directory of pod manifests (*.yaml, *.yml, *.json)"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "root-dir", Value: "/var/lib/podkeeper", Usage: "podkeeper's state: pod files, FIFOs, images/ to auto-import"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "log-dir", Value: "/var/log/pods", Usage: "container logs, as <ns>_<pod>_<uid>/<container>/<n>.log"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "containerd-address", Value: "/run/containerd/containerd.sock", Usage: "containerd socket"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "containerd-namespace", Value: "podkeeper", Usage: "containerd namespace of podkeeper's containers"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "containerd", Value: "external", Usage: "external: use (and wait for) the containerd at --containerd-address; managed: if none answers there, run one as podkeeper's child"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "node-name", Value: hostname(), Usage: "node name; static pods are named <name>-<node-name>"}),
		altsrc.NewStringSliceFlag(&cli.StringSliceFlag{Name: "allowed-unsafe-sysctls", Usage: "unsafe sysctls (or patterns ending in *, e.g. kernel.msg*) pods may set besides the safe ones, as the kubelet's flag; each must be namespaced"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "node-labels", Usage: "more node labels, key=value,...: pods' nodeSelector and node affinity are matched against them (and kubernetes.io/hostname, os, arch)"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "api-socket", Value: defaultAPISocket, EnvVars: []string{"PODKEEPER_API_SOCKET"}, Usage: "unix socket of the local API (mode 0600)"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "pause-binary", Usage: "sandbox process binary (default: podkeeper-pause next to podkeeper, else in PATH)"}),
		altsrc.NewBoolFlag(&cli.BoolFlag{Name: "always-pause", Usage: "run a pause process in every pod's sandbox, as the kubelet's runtimes do; by default only pods that need one get it (shareProcessNamespace, or hostNetwork with hostIPC): the others' namespaces are pinned without a process"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "cni-conf-dir", Value: "/etc/cni/net.d", Usage: "CNI config dir: its first config (by name) is the pod network; when it has none, podkeeper writes " + runtime.DefaultConflistName + " there (bridge + host-local + portmap). Empty: no CNI, pods get loopback only"}),
		altsrc.NewStringSliceFlag(&cli.StringSliceFlag{Name: "cni-bin-dir", Value: cli.NewStringSlice(runtime.DefaultCNIBinDirs...), Usage: "CNI plugin dirs, searched in order"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "cni-bridge", Value: runtime.DefaultBridge, Usage: "bridge of the default network podkeeper writes"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "pod-subnet", Value: runtime.DefaultPodSubnet, Usage: "pod subnet of the default network podkeeper writes"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "netns-dir", Value: "/run/netns", Usage: "where pods' network namespaces are pinned (pk-<namespace>-<sandbox>)"}),
		altsrc.NewStringSliceFlag(&cli.StringSliceFlag{Name: "cluster-dns", Usage: "DNS servers for dnsPolicy ClusterFirst (none: ClusterFirst falls back to the host's resolv.conf, as the kubelet does)"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "cluster-domain", Value: "cluster.local", Usage: "cluster domain of pod FQDNs and ClusterFirst search paths"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "resolv-conf", Value: "/etc/resolv.conf", Usage: "host resolv.conf that dnsPolicy Default copies"}),

		altsrc.NewBoolFlag(&cli.BoolFlag{Name: "strict-permissions", Usage: "refuse manifests a non-root user or group can write (default: warn loudly)"}),
		altsrc.NewDurationFlag(&cli.DurationFlag{Name: "resync", Value: 20 * time.Second, Usage: "full re-list period of the manifest directory"}),
		altsrc.NewDurationFlag(&cli.DurationFlag{Name: "sync-frequency", Value: podrunner.DefaultResync, Usage: "how often each pod's containers are re-read from containerd beside its exit events (the kubelet's syncFrequency)"}),
		altsrc.NewIntFlag(&cli.IntFlag{Name: "max-parallel-starts", Value: 0, Usage: "sandbox creations and container starts in flight at once, the rest wait their turn (0: 4 per CPU, at least 8; -1: no bound)"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "container-log-max-size", Value: "10Mi", Usage: "size at which a container's log file is rotated (the kubelet's containerLogMaxSize); rotated files but the newest are gzipped"}),
		altsrc.NewIntFlag(&cli.IntFlag{Name: "container-log-max-files", Value: crilog.DefaultMaxFiles, Usage: "log files kept per container instance, the live one included (the kubelet's containerLogMaxFiles; at least 2)"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "container-log-links-dir", Value: "/var/log/containers", Usage: "a symlink <pod>_<namespace>_<container>-<container ID>.log to each started container's log file, as the kubelet makes for log shippers; empty: none"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "log-format", Value: "auto", Usage: "agent log format: auto (text on a terminal, JSON otherwise), text, json"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "log-level", Value: "info", Usage: "debug, info, warn, error"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "metrics-address", Usage: "serve Prometheus /metrics, /healthz and /readyz on this host:port (e.g. 127.0.0.1:10255); empty: off"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "registry-config-dir", Value: defaultRegistryConfigDir, Usage: "registry hosts in containerd's hosts.toml layout (<dir>/<host>/hosts.toml: mirrors, plain-HTTP registries, CAs)"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "docker-config", Value: defaultDockerConfig, Usage: "docker config.json with node-wide registry credentials (read at every pull; may be missing)"}),
		altsrc.NewDurationFlag(&cli.DurationFlag{Name: "image-pull-progress-timeout", Value: runtime.DefaultPullProgressTimeout, Usage: "give up a pull (ErrImagePull, tried again after its back-off) when its registry requests bring no byte for this long, as containerd's CRI does; 0: wait for good"}),
	}
	flags = append(flags, resourceFlags()...)
	flags = append(flags, evictionFlags()...)
	flags = append(flags, imageGCFlags()...)
	return &cli.Command{
		Name:   "run",
		Usage:  "run the agent: keep the pods of the manifest directory running",
		Flags:  flags,
		Before: altsrc.InitInputSourceWithContext(flags, altsrc.NewYamlSourceFromFlagFunc("config")),
		Action: runAgent,
	}
}

func newLogger(format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: %w", level, err)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "auto", "":
		if term.IsTerminal(int(os.Stderr.Fd())) {
			return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
		}
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want auto, text or json", format)
}

// findPause locates the sandbox binary.
func findPause(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "podkeeper-pause")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		p := filepath.Join(dir, "podkeeper-pause")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("podkeeper-pause not found next to podkeeper or in PATH (build it with `make build`, or give --pause-binary)")
}

// hostIP is the node's first global unicast IPv4 address.
func hostIP() string {
	ifs, err := net.Interfaces()
	if err != nil {
		return ""
	}
	for _, i := range ifs {
		if i.Flags&net.FlagUp == 0 || i.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
				return n.IP.String()
			}
		}
	}
	return ""
}

func runAgent(c *cli.Context) error {
	log, err := newLogger(c.String("log-format"), c.String("log-level"))
	if err != nil {
		return err
	}
	slog.SetDefault(log)
	runtime.RouteClientLog(log)
	for _, f := range []string{"resync", "sync-frequency"} {
		if d := c.Duration(f); d <= 0 {
			return fmt.Errorf("--%s must be positive, not %s", f, d)
		}
	}
	pause, err := findPause(c.String("pause-binary"))
	if err != nil {
		return err
	}
	node := c.String("node-name")
	labels, err := nodeLabels(node, c.String("node-labels"))
	if err != nil {
		return err
	}
	sysctls, err := sysctlAllowlist(c.StringSlice("allowed-unsafe-sysctls"))
	if err != nil {
		return err
	}
	logMaxSize, logMaxFiles, err := containerLogRotation(c)
	if err != nil {
		return err
	}
	root := c.String("root-dir")
	for _, d := range []string{root, filepath.Join(root, "images"), c.String("log-dir")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	address := c.String("containerd-address")
	switch mode := c.String("containerd"); mode {
	case "external":
	case "managed":
		if runtime.Answers(address) {
			log.Info("a containerd already answers; using it", "address", address)
			break
		}
		m, err := runtime.StartManaged(ctx, runtime.ManagedConfig{
			Address: address,
			Root:    filepath.Join(root, "containerd"),
			State:   filepath.Join(filepath.Dir(address), "state"),
			LogFile: filepath.Join(root, "containerd.log"),
			Logger:  log,
		})
		if err != nil {
			return err
		}
		defer m.Stop()
	default:
		return fmt.Errorf("--containerd %q: want external or managed", mode)
	}

	var wg sync.WaitGroup
	defer wg.Wait()
	rec := podrunner.NewRecorder(node, 2000)
	var mgr *podrunner.Manager
	errs := &manifestErrors{}

	// The API answers (with no pods) while containerd is still being waited for.
	cgroups, err := newCgroupManager(c, log)
	if err != nil {
		return err
	}
	backend := &lateBackend{errs: errs, node: node, labels: labels, cg: cgroups}
	if err := startMetrics(ctx, c.String("metrics-address"), backend, &wg, log); err != nil {
		return err // before any goroutine of ours runs: a bad address fails at once
	}
	srv := api.NewServer(backend, log)
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := srv.Listen(ctx, c.String("api-socket")); err != nil {
			log.Error("local API stopped", "err", err)
			stop()
		}
	}()

	capacity, allocatable, err := nodeResources(c)
	if err != nil {
		return err
	}
	rt, err := runtime.Connect(ctx, runtime.Config{
		Allocatable:         allocatable,
		Cgroups:             cgroups,
		Address:             address,
		Namespace:           c.String("containerd-namespace"),
		RootDir:             root,
		PauseBinary:         pause,
		AlwaysPause:         c.Bool("always-pause"),
		Logger:              log,
		RegistryConfigDir:   c.String("registry-config-dir"),
		DockerConfig:        c.String("docker-config"),
		PullProgressTimeout: pullProgressTimeout(c.Duration("image-pull-progress-timeout")),
		Network:             networkConfig(c, root),
		MaxParallelStarts:   c.Int("max-parallel-starts"),
		LogMaxSize:          logMaxSize,
		LogMaxFiles:         logMaxFiles,
		LogLinksDir:         c.String("container-log-links-dir"),
		DNS: runtime.DNSConfig{
			ClusterDNS:    c.StringSlice("cluster-dns"),
			ClusterDomain: c.String("cluster-domain"),
			ResolvConf:    c.String("resolv-conf"),
		},
	})
	if err != nil {
		return err
	}
	defer rt.Close()
	log.Info("connected to containerd", "address", address, "namespace", c.String("containerd-namespace"))
	if n, err := runtime.PruneLogLinks(c.String("container-log-links-dir"), c.String("log-dir")); err != nil {
		log.Warn("removing dangling container log links", "removed", n, "err", err)
	} else if n > 0 {
		log.Info("removed dangling container log links", "removed", n, "dir", c.String("container-log-links-dir"))
	}
	rt.ImportDir(ctx)

	backend.setNode(capacity, allocatable)
	mcfg := podrunner.Config{NodeName: node, LogDir: c.String("log-dir"), HostIP: hostIP(), Logger: log, Resync: c.Duration("sync-frequency"),
		EvictionState: filepath.Join(root, "evictions.json"), RecursiveReadOnly: rt.RecursiveReadOnly(),
		AppArmorHost: runtime.AppArmorEnabled(), SELinuxHost: runtime.SELinuxEnabled(), NodeLabels: labels, Sysctls: sysctls}
	if c.Bool("admission") {
		mcfg.Allocatable = allocatable
	}
	imagefs := root
	if c.String("containerd") == "managed" {
		imagefs = filepath.Join(root, "containerd")
	}
	if mcfg.Eviction, err = evictionConfig(c, cgroups, rt, c.String("log-dir"), imagefs); err != nil {
		return err
	}
	gcPolicy, err := imageGCPolicy(c)
	if err != nil {
		return err
	}
	gc := &imageGC{policy: gcPolicy, rt: rt, dir: imagefs, log: log, every: c.Duration("image-gc-interval")}
	if mcfg.Eviction != nil {
		mcfg.Eviction.Reclaim = gc.reclaim
	}
	mgr = podrunner.NewManager(mcfg, rt, rec)
	gc.mgr = mgr
	wg.Add(1)
	go func() { defer wg.Done(); gc.loop(ctx) }()
	backend.set(mgr)

	src := watcher.NewDirSource(c.String("manifest-dir"), node, watcher.WithResync(c.Duration("resync")), watcher.WithLogger(log),
		watcher.WithStrictPermissions(c.Bool("strict-permissions")), watcher.WithLastGoodDir(filepath.Join(root, "last-good")))
	snaps := make(chan watcher.Snapshot)
	wg.Add(3)
	go func() {
		defer wg.Done()
		if err := src.Run(ctx, snaps); err != nil && !errors.Is(err, context.Canceled) {
			log.Error("manifest source stopped", "err", err)
			stop()
		}
	}()
	go func() {
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case s := <-snaps:
				errs.set(s.Errors, s.Files)
				for _, fe := range s.Errors {
					log.Warn("manifest problem", "file", fe.Path, "keptLastGood", fe.KeptLastGood, "err", fe.Err)
				}
				log.Info("desired state", "pods", len(s.Pods), "configMaps", len(s.ConfigMaps), "secrets", len(s.Secrets), "badFiles", len(s.Errors))
				mgr.UpdateConfig(s.Config())
				mgr.UpdateHeld(s.Held)
				mgr.Update(s.Pods)
			}
		}
	}()
	if cgroups != nil {
		wg.Add(1)
		go func() { defer wg.Done(); syncQOSLoop(ctx, cgroups, mgr, log) }()
	}
	wg.Add(1)
	// Unused heap back to the kernel every minute (a GC and a full scavenge: a few milliseconds
	// of CPU with the agent's small heap); without it the Go runtime keeps what a burst (110 pods
	// starting at once) grew, and returns it only slowly.
	go func() { defer wg.Done(); every(ctx, time.Minute, debug.FreeOSMemory) }()
	go func() { // tarballs dropped into <root-dir>/images
		defer wg.Done()
		every(ctx, c.Duration("resync"), func() { rt.ImportDir(ctx) })
	}()
	log.Info("podkeeper running", "node", node, "manifestDir", c.String("manifest-dir"), "api", c.String("api-socket"))
	err = mgr.Run(ctx)
	if errors.Is(err, context.Canceled) {
		log.Info("podkeeper stopping; pods keep running")
		return nil
	}
	return err
}

// networkConfig is the pod network the flags ask for. The default network's IP reservations
// (host-local) live under <root-dir>/cni/networks, with podkeeper's other state.
func networkConfig(c *cli.Context, root string) runtime.NetworkConfig {
	if c.String("cni-conf-dir") == "" {
		return runtime.NetworkConfig{}
	}
	return runtime.NetworkConfig{
		ConfDir:  c.String("cni-conf-dir"),
		BinDirs:  c.StringSlice("cni-bin-dir"),
		NetnsDir: c.String("netns-dir"),
		Default: runtime.DefaultNetwork{
			Bridge:  c.String("cni-bridge"),
			Subnet:  c.String("pod-subnet"),
			DataDir: filepath.Join(root, "cni", "networks"),
		},
	}
}

// manifestErrors holds the latest snapshot's file problems and file states for the API.
type manifestErrors struct {
	mu    sync.Mutex
	list  []watcher.FileError
	files []watcher.FileStatus
}

func (m *manifestErrors) set(l []watcher.FileError, files []watcher.FileStatus) {
	m.mu.Lock()
	m.list, m.files = l, files
	m.mu.Unlock()
}

func (m *manifestErrors) manifests() []api.ManifestFile {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]api.ManifestFile(nil), m.files...)
}

func (m *manifestErrors) get() []api.ManifestError {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]api.ManifestError, 0, len(m.list))
	for _, e := range m.list {
		out = append(out, api.ManifestError{Path: e.Path, Error: e.Error(), KeptLastGood: e.KeptLastGood})
	}
	return out
}

// syncQOSLoop keeps the burstable QoS cgroup's cpu.shares at the sum of its running pods'
// requests: once the manager has adopted its pods (after a restart the cgroup manager knows none),
// then every minute, as the kubelet's QoS manager does. Pods starting and ending update it too
// (cgroup.Manager.EnsurePod, RemovePod).
func syncQOSLoop(ctx context.Context, cg *cgroup.Manager, mgr *podrunner.Manager, log *slog.Logger) {
	select {
	case <-ctx.Done():
		return
	case <-mgr.Ready():
	}
	sync := func() {
		var live []*corev1.Pod
		for _, p := range mgr.Pods() {
			if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				live = append(live, p)
			}
		}
		if err := cg.SyncQOS(live); err != nil {
			log.Warn("update the QoS cgroups", "err", err)
		}
	}
	sync()
	every(ctx, time.Minute, sync)
}

// every calls f every d until ctx ends (not at once).
func every(ctx context.Context, d time.Duration, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

// containerLogRotation reads --container-log-max-size and --container-log-max-files, checked as
// the kubelet checks containerLogMaxSize and containerLogMaxFiles.
func containerLogRotation(c *cli.Context) (int64, int, error) {
	q, err := resource.ParseQuantity(c.String("container-log-max-size"))
	if err != nil {
		return 0, 0, fmt.Errorf("--container-log-max-size: %w", err)
	}
	if q.Sign() <= 0 {
		return 0, 0, fmt.Errorf("--container-log-max-size must be positive, not %s", q.String())
	}
	n := c.Int("container-log-max-files")
	if n < 2 {
		return 0, 0, fmt.Errorf("--container-log-max-files must be at least 2 (the live file and a rotated one), not %d", n)
	}
	return q.Value(), n, nil
}

// pullProgressTimeout maps the flag (0: none) onto runtime.Config's (0: the default).
func pullProgressTimeout(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}
