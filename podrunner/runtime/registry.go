package runtime

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/remotes"
	"github.com/containerd/containerd/v2/core/remotes/docker"
	"github.com/containerd/containerd/v2/core/remotes/docker/config"
	clog "github.com/containerd/log"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkeeper/podkeeper/podrunner"
)

// Registry access, as containerd's CRI plugin configures it:
//   - hosts: Config.RegistryConfigDir in containerd's hosts.toml layout
//     (<dir>/<host>/hosts.toml, e.g. <dir>/docker.io/hosts.toml or <dir>/10.0.0.5_5000_/hosts.toml,
//     and <dir>/_default/hosts.toml for any host): mirrors, plain-HTTP registries, CAs, skip_verify.
//   - credentials: a pod's imagePullSecrets first, then the node-wide docker config.json
//     (Config.DockerConfig), read at every pull so edits apply at once.

func init() {
	// containerd's client logs each registry round trip at info level through logrus on stderr;
	// podkeeper reports pulls itself (events, slog), so only the client's warnings remain.
	_ = clog.SetLevel("warn")
}

// Credential is a registry login.
type Credential struct {
	Username string
	Password string // or an identity token, with Username empty
}

// Keyring maps registry hosts to credentials, from docker config.json documents.
type Keyring map[string]Credential

// ParseDockerConfig reads a docker config.json ({"auths": {...}}) or a legacy .dockercfg (the
// auths map alone) into a keyring. Entries without usable credentials are skipped.
func ParseDockerConfig(data []byte) (Keyring, error) {
	type entry struct {
		Auth          string `json:"auth"`
		Username      string `json:"username"`
		Password      string `json:"password"`
		IdentityToken string `json:"identitytoken"`
	}
	var doc struct {
		Auths map[string]entry `json:"auths"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("parse docker config: %w", err)
	}
	if doc.Auths == nil { // legacy .dockercfg: the map itself
		if err := json.Unmarshal(data, &doc.Auths); err != nil {
			return nil, fmt.Errorf("parse docker config: %w", err)
		}
	}
	k := Keyring{}
	for host, e := range doc.Auths {
		c := Credential{Username: e.Username, Password: e.Password}
		if e.Auth != "" {
			raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(e.Auth))
			if err != nil {
				return nil, fmt.Errorf("parse docker config: auth of %s: %w", host, err)
			}
			user, pass, ok := strings.Cut(string(raw), ":")
			if !ok {
				return nil, fmt.Errorf("parse docker config: auth of %s is not user:password", host)
			}
			c = Credential{Username: user, Password: pass}
		}
		if e.IdentityToken != "" {
			c = Credential{Password: e.IdentityToken}
		}
		if c.Username == "" && c.Password == "" {
			continue
		}
		k[registryHost(host)] = c
	}
	return k, nil
}

// registryHost normalises a docker config key ("https://index.docker.io/v1/", "reg:5000",
// "http://10.0.0.5:5000/v2") to the host containerd contacts.
func registryHost(key string) string {
	h := strings.TrimPrefix(strings.TrimPrefix(strings.ToLower(key), "https://"), "http://")
	if i := strings.IndexByte(h, '/'); i >= 0 {
		h = h[:i]
	}
	switch h {
	case "docker.io", "index.docker.io", "registry-1.docker.io", "registry.hub.docker.com":
		return "registry-1.docker.io"
	}
	return h
}

// Lookup returns the credential for host, if any.
func (k Keyring) Lookup(host string) (Credential, bool) {
	c, ok := k[registryHost(host)]
	return c, ok
}

// secretKeyring reads the docker config of a kubernetes.io/dockerconfigjson or dockercfg Secret.
func secretKeyring(s *corev1.Secret) (Keyring, error) {
	key := corev1.DockerConfigJsonKey
	if s.Type == corev1.SecretTypeDockercfg {
		key = corev1.DockerConfigKey
	}
	data, ok := s.Data[key]
	if !ok {
		if v, ok2 := s.StringData[key]; ok2 {
			data, ok = []byte(v), true
		}
	}
	if !ok {
		return nil, fmt.Errorf("secret %s/%s has no %s", s.Namespace, s.Name, key)
	}
	k, err := ParseDockerConfig(data)
	if err != nil {
		return nil, fmt.Errorf("secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	return k, nil
}

// keyrings returns the keyrings a pull tries, in order: the pod's secrets, then the node's
// docker config. Unreadable ones are logged and skipped (the pull may still work anonymously).
func (r *Runtime) keyrings(secrets []*corev1.Secret) []Keyring {
	var out []Keyring
	for _, s := range secrets {
		k, err := secretKeyring(s)
		if err != nil {
			r.log.Warn("image pull secret unusable", "err", err)
			continue
		}
		out = append(out, k)
	}
	if p := r.cfg.DockerConfig; p != "" {
		data, err := os.ReadFile(p)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			r.log.Warn("node docker config unreadable", "path", p, "err", err)
		default:
			k, err := ParseDockerConfig(data)
			if err != nil {
				r.log.Warn("node docker config unusable", "path", p, "err", err)
			} else {
				out = append(out, k)
			}
		}
	}
	return out
}

// resolver builds the registry resolver of one pull; watch, when not nil, counts its traffic.
func (r *Runtime) resolver(ctx context.Context, secrets []*corev1.Secret, watch *pullWatch) remotes.Resolver {
	rings := r.keyrings(secrets)
	opts := config.HostOptions{
		Credentials: func(host string) (string, string, error) {
			for _, k := range rings {
				if c, ok := k.Lookup(host); ok {
					return c.Username, c.Password, nil
				}
			}
			return "", "", nil
		},
	}
	if dir := r.cfg.RegistryConfigDir; dir != "" {
		opts.HostDir = config.HostDirFromRoot(dir)
	}
	if watch != nil {
		opts.UpdateClient = func(c *http.Client) error {
			c.Transport = watch.wrap(c.Transport)
			return nil
		}
	}
	return docker.NewResolver(docker.ResolverOptions{Hosts: config.ConfigureHosts(ctx, opts)})
}

// pull fetches and unpacks ref from its registry, reporting progress to opts.Progress. A pull
// whose registry stops sending ends after the progress timeout with a *PullStalledError.
func (r *Runtime) pull(ctx context.Context, ref string, opts podrunner.PullOptions) (containerd.Image, error) {
	var watch *pullWatch
	if timeout := r.pullProgressTimeout(); timeout > 0 {
		watch = newPullWatch()
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		watchPull(ctx, watch, timeout, cancel)
	}
	ropts := []containerd.RemoteOpt{
		containerd.WithPullUnpack,
		containerd.WithPullSnapshotter(r.cfg.Snapshotter),
		containerd.WithResolver(r.resolver(ctx, opts.Secrets, watch)),
	}
	var tr *pullTracker
	if opts.Progress != nil {
		tr = &pullTracker{ref: ref, cs: r.client.ContentStore(), seen: map[string]int{}}
		ropts = append(ropts, containerd.WithImageHandler(images.HandlerFunc(tr.handle)))
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			t := time.NewTicker(200 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					opts.Progress(tr.snapshot(ctx, false, false))
				}
			}
		}()
		defer func() { close(stop); <-done }()
	}
	img, err := r.client.Pull(ctx, ref, ropts...)
	if tr != nil {
		opts.Progress(tr.snapshot(ctx, true, err != nil))
	}
	// Ended by the watchdog, the pull's own error says only "context canceled".
	var stalled *PullStalledError
	if err != nil && errors.As(context.Cause(ctx), &stalled) {
		return nil, stalled
	}
	return img, err
}

// pullProgressTimeout is Config.PullProgressTimeout with its default; 0: none.
func (r *Runtime) pullProgressTimeout() time.Duration {
	switch t := r.cfg.PullProgressTimeout; {
	case t < 0:
		return 0
	case t == 0:
		return DefaultPullProgressTimeout
	default:
		return t
	}
}

// pullTracker follows the blobs of one pull through containerd's content store.
type pullTracker struct {
	ref   string
	cs    content.Store
	mu    sync.Mutex
	blobs []podrunner.BlobProgress
	seen  map[string]int // digest -> index in blobs
}

func (t *pullTracker) handle(_ context.Context, desc ocispec.Descriptor) ([]ocispec.Descriptor, error) {
	if images.IsIndexType(desc.MediaType) || images.IsManifestType(desc.MediaType) {
		return nil, nil // small documents; the bars are for the config and layers
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.seen[desc.Digest.String()]; !ok {
		t.seen[desc.Digest.String()] = len(t.blobs)
		t.blobs = append(t.blobs, podrunner.BlobProgress{Digest: desc.Digest.String(), MediaType: desc.MediaType, Total: desc.Size})
	}
	return nil, nil
}

func (t *pullTracker) snapshot(ctx context.Context, done, failed bool) podrunner.PullProgress {
	active, _ := t.cs.ListStatuses(ctx)
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range t.blobs {
		b := &t.blobs[i]
		if b.Done {
			continue
		}
		for _, st := range active {
			if strings.HasSuffix(st.Ref, b.Digest) {
				b.Offset = st.Offset
				if st.Total > 0 {
					b.Total = st.Total
				}
			}
		}
		if info, err := t.cs.Info(ctx, digest.Digest(b.Digest)); err == nil {
			b.Done, b.Offset = true, info.Size
		}
	}
	return podrunner.PullProgress{Ref: t.ref, Blobs: append([]podrunner.BlobProgress(nil), t.blobs...), Done: done, Failed: failed}
}

// DockerConfigJSON returns a docker config.json document holding one login (for tests and for
// writing a node's config).
func DockerConfigJSON(host, user, password string) []byte {
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	b, _ := json.Marshal(map[string]any{"auths": map[string]any{host: map[string]string{"auth": auth}}})
	return b
}

// PushImage pushes the local image localRef to a registry as remoteRef (no local tag is made), with the node's registry configuration and credentials.
func (r *Runtime) PushImage(ctx context.Context, localRef, remoteRef string, opts podrunner.PullOptions) error {
	ctx = r.ctx(ctx)
	local, err := NormalizeRef(localRef)
	if err != nil {
		return err
	}
	remote, err := NormalizeRef(remoteRef)
	if err != nil {
		return err
	}
	img, err := r.client.GetImage(ctx, local)
	if err != nil {
		return fmt.Errorf("push %s: %w", local, err)
	}
	if err := r.client.Push(ctx, remote, img.Target(), containerd.WithResolver(r.resolver(ctx, opts.Secrets, nil))); err != nil {
		return fmt.Errorf("push %s: %w", remote, err)
	}
	return nil
}
