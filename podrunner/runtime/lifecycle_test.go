package runtime_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podkeeper/podkeeper/internal/testenv"
	"github.com/podkeeper/podkeeper/podrunner"
	"github.com/podkeeper/podkeeper/podrunner/crilog"
	. "github.com/podkeeper/podkeeper/podrunner/runtime"
)

// These tests cover the lifecycle fidelity of containers on the real containerd: securityContext,
// volumes and termination messages.

// lookup is a ConfigLookup the test changes as it goes.
type lookup struct {
	mu      sync.Mutex
	cms     map[string]*corev1.ConfigMap
	secrets map[string]*corev1.Secret
}

func (l *lookup) ConfigMap(ns, name string) (*corev1.ConfigMap, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.cms[ns+"/"+name]
	return c, ok
}

func (l *lookup) Secret(ns, name string) (*corev1.Secret, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.secrets[ns+"/"+name]
	return s, ok
}

func newRuntimeRoot(t *testing.T) (*Runtime, context.Context, string) {
	t.Helper()
	pause, err := testenv.PauseBinary()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	root := t.TempDir()
	rt, err := Connect(ctx, Config{
		Address: env.Address, Namespace: testNS, RootDir: root, PauseBinary: pause,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt, ctx, root
}

// startAll starts the sandbox and every app container of pod with cfg as the ConfigLookup,
// returning the start error of each container (nil records for failures). Everything, pod files
// included, is removed at cleanup.
func startAll(t *testing.T, rt *Runtime, ctx context.Context, pod *corev1.Pod, logDir string, cfg podrunner.ConfigLookup) ([]podrunner.ContainerRecord, []error) {
	t.Helper()
	sb, err := rt.CreateSandbox(ctx, pod, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		recs, _ := rt.ListContainers(context.Background(), string(pod.UID))
		for _, r := range recs {
			_ = rt.StopContainer(context.Background(), r.ID, 0)
			_ = rt.RemoveContainer(context.Background(), r.ID)
		}
		if err := rt.RemovePodFiles(string(pod.UID)); err != nil {
			t.Errorf("remove pod files: %v", err)
		}
	})
	var recs []podrunner.ContainerRecord
	var errs []error
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if _, err := rt.EnsureImage(ctx, c.Image, c.ImagePullPolicy, podrunner.PullOptions{}); err != nil {
			t.Fatal(err)
		}
		rec, err := rt.StartContainer(ctx, podrunner.StartRequest{
			Pod: pod, Sandbox: sb, Container: c, Kind: podrunner.KindApp,
			LogPath: filepath.Join(logDir, c.Name, "0.log"), Config: cfg,
		})
		recs = append(recs, rec)
		errs = append(errs, err)
	}
	return recs, errs
}

// logText is a container's output so far.
func logText(t *testing.T, logDir, name string) string {
	t.Helper()
	var b bytes.Buffer
	_ = crilog.ReadLog(context.Background(), filepath.Join(logDir, name, "0.log"), crilog.ReadOptions{Tail: -1}, &b)
	return b.String()
}

func waitLog(t *testing.T, logDir, name, want string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := logText(t, logDir, name)
		if strings.Contains(got, want) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("log of %s never showed %q; it has:\n%s", name, want, got)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestSecurityContextOnContainerd(t *testing.T) {
	rt, ctx, _ := newRuntimeRoot(t)
	logs := t.TempDir()
	uid, gid, yes, no := int64(1234), int64(5678), true, false
	user := sh("user", "echo ids=$(id -u):$(id -g) groups=$(id -G); grep NoNewPrivs /proc/self/status")
	user.SecurityContext = &corev1.SecurityContext{RunAsUser: &uid, RunAsGroup: &gid, AllowPrivilegeEscalation: &no}
	ro := sh("ro", "if touch /probe 2>/dev/null; then echo root-writable; else echo root-refused; fi; touch /scratch/ok && echo scratch-writable")
	ro.SecurityContext = &corev1.SecurityContext{ReadOnlyRootFilesystem: &yes}
	ro.VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
	caps := sh("caps", "grep CapBnd /proc/self/status")
	caps.SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"NET_BIND_SERVICE"}}}
	sc := sh("seccomp", "grep Seccomp: /proc/self/status; echo port-start=$(cat /proc/sys/net/ipv4/ip_unprivileged_port_start)")
	sc.SecurityContext = &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
	nonRoot := sh("nonroot", "true")
	nonRoot.SecurityContext = &corev1.SecurityContext{RunAsNonRoot: &yes}
	pod := testPod(t, user, ro, caps, sc, nonRoot)
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{SupplementalGroups: []int64{4000},
		Sysctls: []corev1.Sysctl{{Name: "net.ipv4.ip_unprivileged_port_start", Value: "80"}}}
	pod.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	recs, errs := startAll(t, rt, ctx, pod, logs, nil)
	for i := 0; i < 4; i++ {
		if errs[i] != nil {
			t.Fatalf("start %s: %v", pod.Spec.Containers[i].Name, errs[i])
		}
	}
	if errs[4] == nil || !strings.Contains(errs[4].Error(), "container has runAsNonRoot and image will run as root") || errors.Is(errs[4], podrunner.ErrExitRecorded) {
		t.Errorf("runAsNonRoot on a root image: err %v, want the kubelet's refusal, not a recorded exit", errs[4])
	}
	out := waitLog(t, logs, "seccomp", "port-start")
	if !strings.Contains(out, "Seccomp:\t2") || !strings.Contains(out, "port-start=80") {
		t.Errorf("RuntimeDefault seccomp (filter mode 2) and the pod's sysctl should be in force:\n%s", out)
	}
	out = waitLog(t, logs, "user", "NoNewPrivs")
	if !strings.Contains(out, "ids=1234:5678") || !strings.Contains(out, "4000") || !strings.Contains(out, "NoNewPrivs:\t1") {
		t.Errorf("runAsUser/runAsGroup/supplementalGroups/no_new_privs not what the process sees:\n%s", out)
	}
	out = waitLog(t, logs, "ro", "scratch")
	if !strings.Contains(out, "root-refused") || !strings.Contains(out, "scratch-writable") {
		t.Errorf("readOnlyRootFilesystem: want the root refused and the emptyDir writable:\n%s", out)
	}
	// CAP_NET_BIND_SERVICE is bit 10 alone.
	out = waitLog(t, logs, "caps", "CapBnd")
	if !strings.Contains(out, "CapBnd:\t0000000000000400") {
		t.Errorf("drop ALL add NET_BIND_SERVICE: %s", out)
	}
	_ = recs
}

func TestSecretOnTmpfsAndConfigMapUpdatedInPlace(t *testing.T) {
	rt, ctx, root := newRuntimeRoot(t)
	logs := t.TempDir()
	cfg := &lookup{
		cms:     map[string]*corev1.ConfigMap{"default/app": {Data: map[string]string{"greeting": "hello-v1"}}},
		secrets: map[string]*corev1.Secret{"default/creds": {Data: map[string][]byte{"password": []byte("s3cret")}}},
	}
	mode := int32(0o400)
	c := sh("reader", `grep " /secret " /proc/mounts; echo mode=$(stat -L -c %a /secret/password) pw=$(cat /secret/password); `+
		`grep " /mem " /proc/mounts; while true; do echo "greeting=$(cat /config/greeting)"; sleep 0.3; done`)
	c.VolumeMounts = []corev1.VolumeMount{{Name: "creds", MountPath: "/secret"}, {Name: "cfg", MountPath: "/config"}, {Name: "mem", MountPath: "/mem"}}
	pod := testPod(t, c)
	size := resourceQuantity(t, "16Mi")
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds", DefaultMode: &mode}}},
		{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}}},
		{Name: "mem", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &size}}},
	}
	_, errs := startAll(t, rt, ctx, pod, logs, cfg)
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	out := waitLog(t, logs, "reader", "greeting=hello-v1")
	if !strings.Contains(out, "tmpfs /secret tmpfs ro") || !strings.Contains(out, "mode=400 pw=s3cret") {
		t.Errorf("secret volume should be a read-only tmpfs with mode 0400:\n%s", out)
	}
	if !strings.Contains(out, "tmpfs /mem tmpfs rw") || !strings.Contains(out, "size=16384k") {
		t.Errorf("emptyDir medium Memory should be a tmpfs of 16Mi:\n%s", out)
	}
	cfg.mu.Lock()
	cfg.cms["default/app"] = &corev1.ConfigMap{Data: map[string]string{"greeting": "hello-v2"}}
	cfg.mu.Unlock()
	changed, err := rt.RefreshVolumes(pod, cfg)
	if err != nil || !changed {
		t.Fatalf("refresh: changed=%v err=%v", changed, err)
	}
	waitLog(t, logs, "reader", "greeting=hello-v2")

	// Cleanup unmounts the tmpfs volumes and deletes the pod dir.
	recs, _ := rt.ListContainers(ctx, string(pod.UID))
	for _, r := range recs {
		_ = rt.StopContainer(ctx, r.ID, 0)
		_ = rt.RemoveContainer(ctx, r.ID)
	}
	if err := rt.RemovePodFiles(string(pod.UID)); err != nil {
		t.Fatal(err)
	}
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mi), filepath.Join(root, "pods", string(pod.UID))) {
		t.Errorf("tmpfs mounts of the pod left behind:\n%s", mi)
	}
	if _, err := os.Stat(filepath.Join(root, "pods", string(pod.UID))); !os.IsNotExist(err) {
		t.Errorf("pod dir still there: %v", err)
	}
}

// A configMap volume whose ConfigMap the node lacks fails the start as the kubelet's FailedMount
// (a VolumeError with its message), keeping nothing.
func TestMissingConfigMapVolumeIsAVolumeError(t *testing.T) {
	rt, ctx, _ := newRuntimeRoot(t)
	c := sh("c", "true")
	c.VolumeMounts = []corev1.VolumeMount{{Name: "cfg", MountPath: "/config"}}
	pod := testPod(t, c)
	pod.Spec.Volumes = []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}}}}}
	_, errs := startAll(t, rt, ctx, pod, t.TempDir(), &lookup{})
	var ve *podrunner.VolumeError
	if !errors.As(errs[0], &ve) || ve.Error() != `MountVolume.SetUp failed for volume "cfg" : configmap "absent" not found` || errors.Is(errs[0], podrunner.ErrExitRecorded) {
		t.Errorf("missing configMap: %v", errs[0])
	}
}

func TestTerminationMessage(t *testing.T) {
	rt, ctx, _ := newRuntimeRoot(t)
	logs := t.TempDir()
	file := sh("file", "echo -n 'bye from file' > /dev/termination-log; exit 1")
	custom := sh("custom", "echo -n custom-path > /tmp/msg; exit 0")
	custom.TerminationMessagePath = "/tmp/msg"
	fallback := sh("fallback", "for i in $(seq 1 100); do echo line-$i; done; exit 2")
	fallback.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
	okNoMsg := sh("ok", "echo not-a-message; exit 0")
	okNoMsg.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
	// 5000 bytes: the last 4096 are kept, as the kubelet keeps them (more than one label holds).
	long := sh("long", "{ printf start; yes x | head -c 4990; printf the-end; } > /dev/termination-log; exit 3")
	pod := testPod(t, file, custom, fallback, okNoMsg, long)
	recs, errs := startAll(t, rt, ctx, pod, logs, nil)
	want := []func(string) bool{
		func(m string) bool { return m == "bye from file" },
		func(m string) bool { return m == "custom-path" },
		func(m string) bool {
			return strings.HasSuffix(m, "line-100\n") && !strings.Contains(m, "line-20\n") && strings.Contains(m, "line-21\n")
		},
		func(m string) bool { return m == "" },
		func(m string) bool {
			return len(m) == 4096 && strings.HasSuffix(m, "x\nthe-end") && !strings.Contains(m, "start")
		},
	}
	for i, rec := range recs {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		waitExited(t, rt, ctx, string(pod.UID), rec.ID)
		fin, err := rt.Finalize(ctx, rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !want[i](fin.Message) {
			t.Errorf("%s: termination message %q", rec.Name, fin.Message)
		}
	}
}

func resourceQuantity(t *testing.T, s string) resource.Quantity {
	t.Helper()
	q, err := resource.ParseQuantity(s)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func TestDownwardAPIAndSubPathAndFSGroup(t *testing.T) {
	rt, ctx, _ := newRuntimeRoot(t)
	logs := t.TempDir()
	uid, fsGroup := int64(1000), int64(3000)
	cfg := &lookup{cms: map[string]*corev1.ConfigMap{"default/files": {Data: map[string]string{"one.conf": "first", "two.conf": "second"}}}}
	c := sh("reader", `echo "env name=$POD_NAME app=$APP host=$HOST_IP mem=$MEM_MI cpu=$CPU_M expanded=$GREETING"; `+
		`echo "labels=$(cat /info/labels | tr '\n' ' ')"; echo "sub=$(cat /etc/app/one.conf)"; ls /etc/app; `+
		`echo "proj=$(cat /proj/name)/$(cat /proj/two)"; `+
		`touch /scratch/mine && echo "scratch-group=$(stat -c %g /scratch) file-group=$(stat -c %g /scratch/mine)"; `+
		`if touch /ro/x 2>/dev/null; then echo ro-writable; else echo ro-refused; fi`)
	c.SecurityContext = &corev1.SecurityContext{RunAsUser: &uid}
	c.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resourceQuantity(t, "32Mi"), corev1.ResourceCPU: resourceQuantity(t, "500m")}
	c.Env = []corev1.EnvVar{
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "APP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
		{Name: "HOST_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
		{Name: "MEM_MI", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resourceQuantity(t, "1Mi")}}},
		{Name: "CPU_M", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: resourceQuantity(t, "1m")}}},
		{Name: "GREETING", Value: "hi-$(POD_NAME)-$(UNKNOWN)-$$(POD_NAME)"},
	}
	c.VolumeMounts = []corev1.VolumeMount{
		{Name: "info", MountPath: "/info"},
		{Name: "files", MountPath: "/etc/app/one.conf", SubPath: "one.conf"},
		{Name: "proj", MountPath: "/proj"},
		{Name: "scratch", MountPath: "/scratch"},
		{Name: "scratch", MountPath: "/ro", ReadOnly: true},
	}
	pod := testPod(t, c)
	pod.Labels = map[string]string{"app": "web", "tier": "front"}
	pod.Status.HostIP = "10.1.2.3"
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: &fsGroup}
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
		{Name: "files", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "files"}}}},
		{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "files"}, Items: []corev1.KeyToPath{{Key: "two.conf", Path: "two"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}},
		}}}},
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	recs, errs := startAll(t, rt, ctx, pod, logs, cfg)
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	waitExited(t, rt, ctx, string(pod.UID), recs[0].ID)
	out := logText(t, logs, "reader")
	for _, want := range []string{
		"env name=" + pod.Name + " app=web host=10.1.2.3 mem=32 cpu=500 expanded=hi-" + pod.Name + "-$(UNKNOWN)-$(POD_NAME)",
		`labels=app="web" tier="front"`,
		"sub=first",
		"proj=" + pod.Name + "/second",
		"scratch-group=3000 file-group=3000",
		"ro-refused",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "two.conf") {
		t.Errorf("a subPath mount must show only its file:\n%s", out)
	}
}
