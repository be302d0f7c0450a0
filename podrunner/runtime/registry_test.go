package runtime_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkeeper/podkeeper/internal/testenv"
	"github.com/podkeeper/podkeeper/podrunner"
	. "github.com/podkeeper/podkeeper/podrunner/runtime"
)

func TestParseDockerConfig(t *testing.T) {
	for _, tc := range []struct {
		name, doc, host string
		want            Credential
		ok              bool
		bad             bool
	}{
		{name: "auth field", doc: `{"auths":{"reg:5000":{"auth":"dXNlcjpwYXNz"}}}`, host: "reg:5000", want: Credential{"user", "pass"}, ok: true},
		{name: "username and password", doc: `{"auths":{"https://reg.example/v2/":{"username":"u","password":"p"}}}`, host: "reg.example", want: Credential{"u", "p"}, ok: true},
		{name: "docker hub aliases", doc: `{"auths":{"https://index.docker.io/v1/":{"auth":"dTpw"}}}`, host: "registry-1.docker.io", want: Credential{"u", "p"}, ok: true},
		{name: "identity token", doc: `{"auths":{"reg":{"identitytoken":"tok"}}}`, host: "reg", want: Credential{Password: "tok"}, ok: true},
		{name: "legacy dockercfg", doc: `{"reg":{"auth":"dTpw"}}`, host: "reg", want: Credential{"u", "p"}, ok: true},
		{name: "other host", doc: `{"auths":{"reg":{"auth":"dTpw"}}}`, host: "other", ok: false},
		{name: "password with colon", doc: `{"auths":{"reg":{"auth":"dTpwOnE="}}}`, host: "reg", want: Credential{"u", "p:q"}, ok: true},
		{name: "not base64", doc: `{"auths":{"reg":{"auth":"!!"}}}`, bad: true},
		{name: "no colon", doc: `{"auths":{"reg":{"auth":"dXNlcg=="}}}`, bad: true},
		{name: "not json", doc: `auths: {}`, bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := ParseDockerConfig([]byte(tc.doc))
			if tc.bad {
				if err == nil {
					t.Fatalf("no error for %s", tc.doc)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, ok := k.Lookup(tc.host)
			if ok != tc.ok || got != tc.want {
				t.Fatalf("Lookup(%s) = %+v %v, want %+v %v", tc.host, got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestRegistryPullWithAuth pulls from Debian's docker-registry with htpasswd auth: refused
// without credentials (with the registry's message), pulled with a dockerconfigjson Secret,
// through a hosts.toml mirror with the node's docker config, and removed again.
func TestRegistryPullWithAuth(t *testing.T) {
	reg, err := testenv.StartRegistry("pkuser", "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Stop)
	ref := reg.Host + "/pk/busybox:v1"
	if err := reg.Push(env.Address, testNS, testenv.Image, ref); err != nil {
		t.Fatal(err)
	}
	hosts, err := reg.HostsDir("mirror.invalid")
	if err != nil {
		t.Fatal(err)
	}
	rt, ctx := newRuntimeWith(t, Config{RegistryConfigDir: hosts})

	// No credentials: refused, and the error says why.
	_, err = rt.EnsureImage(ctx, ref, corev1.PullAlways, podrunner.PullOptions{})
	if err == nil || !strings.Contains(err.Error(), "ErrImagePull") || !strings.Contains(err.Error(), "authorization") {
		t.Fatalf("pull without credentials: %v, want ErrImagePull ... authorization", err)
	}

	// A kubernetes.io/dockerconfigjson Secret, as imagePullSecrets names it.
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "regcred", Namespace: "default"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: reg.DockerConfig()},
	}
	var mu sync.Mutex
	var last podrunner.PullProgress
	pulls := 0
	res, err := rt.EnsureImage(ctx, ref, corev1.PullAlways, podrunner.PullOptions{
		Secrets:  []*corev1.Secret{secret},
		OnPull:   func() { pulls++ },
		Progress: func(p podrunner.PullProgress) { mu.Lock(); last = p; mu.Unlock() },
	})
	if err != nil {
		t.Fatalf("pull with secret: %v", err)
	}
	if !res.Pulled || res.Size <= 0 || res.ID == "" || pulls != 1 {
		t.Fatalf("pull result %+v, OnPull called %d times", res, pulls)
	}
	mu.Lock()
	if !last.Done || last.Failed || len(last.Blobs) == 0 {
		t.Fatalf("final progress %+v", last)
	}
	for _, b := range last.Blobs {
		if !b.Done || b.Offset != b.Total || b.Total <= 0 {
			t.Fatalf("blob not complete in final progress: %+v", b)
		}
	}
	mu.Unlock()

	// A mirror (hosts.toml) with credentials from the node's docker config.json.
	cfg := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfg, reg.DockerConfig(), 0o600); err != nil {
		t.Fatal(err)
	}
	rt2, ctx2 := newRuntimeWith(t, Config{RegistryConfigDir: hosts, DockerConfig: cfg})
	res, err = rt2.Pull(ctx2, "mirror.invalid/pk/busybox:v1", podrunner.PullOptions{})
	if err != nil || !res.Pulled || res.Ref != "mirror.invalid/pk/busybox:v1" {
		t.Fatalf("pull through mirror: %+v %v", res, err)
	}
	if name, err := rt2.RemoveImage(ctx2, "mirror.invalid/pk/busybox:v1"); err != nil || name != "mirror.invalid/pk/busybox:v1" {
		t.Fatalf("remove: %s %v", name, err)
	}
	if _, err := rt2.RemoveImage(ctx2, "mirror.invalid/pk/busybox:v1"); !errors.Is(err, podrunner.ErrNotFound) {
		t.Fatalf("second remove: %v, want not found", err)
	}
	if _, err := rt2.RemoveImage(ctx2, ref); err != nil {
		t.Fatal(err)
	}
}

func newRuntimeWith(t *testing.T, cfg Config) (*Runtime, context.Context) {
	t.Helper()
	pause, err := testenv.PauseBinary()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cfg.Address, cfg.Namespace, cfg.RootDir, cfg.PauseBinary = env.Address, testNS, t.TempDir(), pause
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	rt, err := Connect(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt, ctx
}
