package testenv

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// CNI's portmap plugin creates three shared nat chains (and the jumps to them) the first time a
// hostPort is mapped, and never removes them. Tests that map hostPorts call HoldPortmapChains:
// the chains are removed when the last test holding them ends, and only when they did not exist
// before the first one began. go test runs packages in parallel processes, so the holders are
// kept in a state file under /run guarded by flock(2), not in memory.

// portmapState is where the holders are recorded: the PIDs of the test processes holding the
// chains, and whether the chains were there before any of them.
const portmapState = "/run/podkeeper-test/portmap-chains.json"

type portmapHolders struct {
	PIDs        []int `json:"pids"`
	Preexisting bool  `json:"preexisting"`
}

// HoldPortmapChains registers the test as a user of portmap's shared chains until it ends. When
// the last holder (across processes; holders whose process is gone are dropped) releases them,
// the chains are removed unless they existed before the first holder. A hold that cannot be
// recorded fails the test.
func HoldPortmapChains(t testing.TB) {
	t.Helper()
	if err := updatePortmapHolders(func(h *portmapHolders) {
		if len(h.PIDs) == 0 {
			h.Preexisting = PortmapChainsExist()
		}
		h.PIDs = append(h.PIDs, os.Getpid())
	}); err != nil {
		t.Fatalf("holding portmap's chains: %v", err)
	}
	t.Cleanup(func() {
		if err := updatePortmapHolders(func(h *portmapHolders) {
			for i, p := range h.PIDs {
				if p == os.Getpid() {
					h.PIDs = append(h.PIDs[:i], h.PIDs[i+1:]...)
					break
				}
			}
			if len(h.PIDs) == 0 && !h.Preexisting {
				RemovePortmapChains()
			}
		}); err != nil {
			t.Errorf("releasing portmap's chains: %v", err)
		}
	})
}

// updatePortmapHolders runs f on the holders under an exclusive lock, after dropping holders
// whose process has ended, and writes the result back (removing the file when none is left).
func updatePortmapHolders(f func(*portmapHolders)) error {
	if err := os.MkdirAll(filepath.Dir(portmapState), 0o700); err != nil {
		return err
	}
	lock, err := os.OpenFile(portmapState+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("flock %s: %w", lock.Name(), err)
	}
	var h portmapHolders
	b, err := os.ReadFile(portmapState)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return err
	default:
		if err := json.Unmarshal(b, &h); err != nil {
			return fmt.Errorf("%s: %w", portmapState, err)
		}
	}
	alive := h.PIDs[:0]
	for _, p := range h.PIDs {
		if syscall.Kill(p, 0) == nil {
			alive = append(alive, p)
		}
	}
	h.PIDs = alive
	f(&h)
	if len(h.PIDs) == 0 {
		if err := os.Remove(portmapState); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	if b, err = json.Marshal(h); err != nil {
		return err
	}
	return os.WriteFile(portmapState, b, 0o600)
}

// PortmapChainsExist reports whether portmap's shared chains are present.
func PortmapChainsExist() bool {
	return exec.Command("iptables", "-t", "nat", "-S", "CNI-HOSTPORT-DNAT").Run() == nil
}

// RemovePortmapChains deletes portmap's shared chains and the jumps to them.
func RemovePortmapChains() {
	jumps := [][]string{
		{"PREROUTING", "-m", "addrtype", "--dst-type", "LOCAL", "-j", "CNI-HOSTPORT-DNAT"},
		{"OUTPUT", "-m", "addrtype", "--dst-type", "LOCAL", "-j", "CNI-HOSTPORT-DNAT"},
		{"POSTROUTING", "-m", "comment", "--comment", "CNI portfwd requiring masquerade", "-j", "CNI-HOSTPORT-MASQ"},
	}
	for _, j := range jumps {
		_ = exec.Command("iptables", append([]string{"-t", "nat", "-D"}, j...)...).Run()
	}
	for _, c := range []string{"CNI-HOSTPORT-DNAT", "CNI-HOSTPORT-SETMARK", "CNI-HOSTPORT-MASQ"} {
		_ = exec.Command("iptables", "-t", "nat", "-F", c).Run()
		_ = exec.Command("iptables", "-t", "nat", "-X", c).Run()
	}
}

// IptablesMentions returns the iptables rules and chain lines (all tables, as iptables-save
// prints them) that contain s: a pod subnet, IP or sandbox ID. None left after a pod's teardown
// means CNI DEL ran for it.
func IptablesMentions(s string) ([]string, error) {
	out, err := exec.Command("iptables-save").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("iptables-save: %v: %s", err, out)
	}
	var hits []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, s) {
			hits = append(hits, line)
		}
	}
	return hits, nil
}

// RemoveMasqueradeChains deletes what the bridge plugin's ipMasq left in the nat table for
// network name (the POSTROUTING jumps commented `name: "<name>"` and the per-pod CNI-... chains
// they jump to, or left without a jump) and returns how many pods' rules it removed. For the clean-up of a peer whose
// teardown cannot be trusted to run CNI DEL for every pod (the kubelet stopped mid-teardown).
func RemoveMasqueradeChains(name string) (int, error) {
	out, err := exec.Command("iptables", "-t", "nat", "-S", "POSTROUTING").CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("iptables -t nat -S POSTROUTING: %v: %s", err, out)
	}
	marker := `name: \"` + name + `\"`
	n := 0
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(line, "-A POSTROUTING ") || !strings.Contains(line, marker) {
			continue
		}
		f := strings.Fields(line)
		chain := f[len(f)-1]
		if !strings.HasPrefix(chain, "CNI-") {
			continue
		}
		// The rule as listed, with -A turned into -D (its comment unquoted for exec).
		args, err := splitRule(strings.TrimPrefix(line, "-A "))
		if err != nil {
			return n, err
		}
		if out, err := exec.Command("iptables", append([]string{"-t", "nat", "-D"}, args...)...).CombinedOutput(); err != nil {
			return n, fmt.Errorf("delete %q: %v: %s", line, err, out)
		}
		_ = exec.Command("iptables", "-t", "nat", "-F", chain).Run()
		_ = exec.Command("iptables", "-t", "nat", "-X", chain).Run()
		n++
	}
	// Chains whose jump is already gone (a DEL cut short between the two).
	if out, err = exec.Command("iptables", "-t", "nat", "-S").CombinedOutput(); err != nil {
		return n, fmt.Errorf("iptables -t nat -S: %v: %s", err, out)
	}
	orphans := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "-A" && strings.HasPrefix(f[1], "CNI-") && strings.Contains(line, marker) {
			orphans[f[1]] = true
		}
	}
	for chain := range orphans {
		_ = exec.Command("iptables", "-t", "nat", "-F", chain).Run()
		if out, err := exec.Command("iptables", "-t", "nat", "-X", chain).CombinedOutput(); err != nil {
			return n, fmt.Errorf("delete chain %s: %v: %s", chain, err, out)
		}
		n++
	}
	return n, nil
}

// splitRule splits an iptables -S rule into arguments: double-quoted parts (with \" inside)
// are one argument each.
func splitRule(s string) ([]string, error) {
	var args []string
	var cur strings.Builder
	inQuote, have := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inQuote && c == '\\' && i+1 < len(s) && s[i+1] == '"':
			cur.WriteByte('"')
			i++
		case c == '"':
			inQuote, have = !inQuote, true
		case c == ' ' && !inQuote:
			if have || cur.Len() > 0 {
				args = append(args, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteByte(c)
		}
	}
	if inQuote {
		return nil, fmt.Errorf("unbalanced quotes in %q", s)
	}
	if have || cur.Len() > 0 {
		args = append(args, cur.String())
	}
	return args, nil
}
