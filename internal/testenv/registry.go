package testenv

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/podkeeper/podkeeper/podrunner"
	pkruntime "github.com/podkeeper/podkeeper/podrunner/runtime"
)

// Registry is a private docker-registry (Debian's docker-registry, distribution 2.8) on
// 127.0.0.1 with htpasswd basic auth, plain HTTP.
type Registry struct {
	Host     string // 127.0.0.1:port
	User     string
	Password string
	Dir      string
	cmd      *exec.Cmd
}

// RegistryBinary is Debian's docker-registry.
const RegistryBinary = "/usr/bin/docker-registry"

// StartRegistry starts a registry on a free port with one user (user/password) and waits until
// it answers. Stop it with Stop.
func StartRegistry(user, password string) (*Registry, error) {
	if _, err := os.Stat(RegistryBinary); err != nil {
		return nil, fmt.Errorf("missing %s: install with `apt-get install -y docker-registry` (or `make deps`)", RegistryBinary)
	}
	dir, err := os.MkdirTemp("/tmp", "pkreg-")
	if err != nil {
		return nil, err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "htpasswd"), []byte(user+":"+string(hash)+"\n"), 0o600); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	host := l.Addr().String()
	l.Close()
	cfg := fmt.Sprintf(`version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: %s
  secret: podkeeper-test
auth:
  htpasswd:
    realm: podkeeper-test
    path: %s
`, filepath.Join(dir, "data"), host, filepath.Join(dir, "htpasswd"))
	if err := os.WriteFile(filepath.Join(dir, "config.yml"), []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	out, err := os.Create(filepath.Join(dir, "registry.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(RegistryBinary, "serve", filepath.Join(dir, "config.yml"))
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("start docker-registry: %w", err)
	}
	out.Close()
	r := &Registry{Host: host, User: user, Password: password, Dir: dir, cmd: cmd}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + host + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusUnauthorized {
				return r, nil
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(dir, "registry.log"))
			r.Stop()
			return nil, fmt.Errorf("docker-registry on %s did not answer with 401 within 30s (last: %v): %s", host, err, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// DockerConfig returns a docker config.json document with the registry's credentials.
func (r *Registry) DockerConfig() []byte {
	return pkruntime.DockerConfigJSON(r.Host, r.User, r.Password)
}

// HostsDir writes a hosts.toml registry config dir that marks the registry as plain HTTP and
// returns it. Extra aliases (other registry names) are mirrored to it too.
func (r *Registry) HostsDir(aliases ...string) (string, error) {
	dir := filepath.Join(r.Dir, "certs.d")
	for _, name := range append([]string{r.Host}, aliases...) {
		d := filepath.Join(dir, hostDirName(name))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
		toml := fmt.Sprintf("server = %q\n\n[host.%q]\n  capabilities = [\"pull\", \"resolve\", \"push\"]\n", "http://"+r.Host, "http://"+r.Host)
		if err := os.WriteFile(filepath.Join(d, "hosts.toml"), []byte(toml), 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// hostDirName is containerd's directory name of a host: "host:port" becomes "host_port_".
func hostDirName(host string) string {
	if h, p, err := net.SplitHostPort(host); err == nil {
		return h + "_" + p + "_"
	}
	return host
}

// Push pushes the image localRef of containerd namespace ns (at address) as remoteRef, with the
// registry's credentials.
func (r *Registry) Push(address, ns, localRef, remoteRef string) error {
	hosts, err := r.HostsDir()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfgPath := filepath.Join(r.Dir, "push-config.json")
	if err := os.WriteFile(cfgPath, r.DockerConfig(), 0o600); err != nil {
		return err
	}
	rt, err := pkruntime.Dial(ctx, pkruntime.Config{Address: address, Namespace: ns, RegistryConfigDir: hosts, DockerConfig: cfgPath})
	if err != nil {
		return err
	}
	defer rt.Close()
	return rt.PushImage(ctx, localRef, remoteRef, podrunner.PullOptions{})
}

// Stop ends the registry and removes its files.
func (r *Registry) Stop() {
	if r.cmd != nil && r.cmd.Process != nil {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
	}
	os.RemoveAll(r.Dir)
}
