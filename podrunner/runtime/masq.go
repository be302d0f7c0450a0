package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
)

// Outbound NAT of podkeeper's default network.
//
// The bridge plugin's own ipMasq gives every pod a chain of its own in the nat table (a jump
// from POSTROUTING plus two rules: about eight iptables execs on CNI ADD and as many on DEL),
// and a pod whose DEL never ran (a crash, a host cut off mid-teardown) leaves that chain behind
// for good; thousands of them slow every later iptables call. podkeeper's default network turns
// ipMasq off and keeps instead ONE rule for the whole pod subnet, as Docker and netavark do:
//
//	-A POSTROUTING -s <subnet> ! -o <bridge> ! -d <multicast> -m comment --comment "podkeeper ..." -j MASQUERADE
//
// Traffic from a pod that leaves the node through any other interface is masqueraded to that
// interface's address; pod-to-pod traffic on the bridge is not (the bridge plugin's chain spared
// the pod subnet and multicast the same way). The rule is ensured when the agent loads a config
// that asks for it (the "podkeeper" key of the conflist, written by DefaultConflist) and is never
// removed by the agent: pods outlive it (they are adopted after a restart). RemoveMasquerade
// removes it when the network is retired.

// conflistMasqueradeKey is the conflist's top-level key asking podkeeper for the subnet's
// masquerade rule. libcni and the plugins ignore keys they do not know.
const conflistMasqueradeKey = "podkeeper"

// Masquerade is the outbound NAT rule of one pod network.
type Masquerade struct {
	Network string // CNI network name, in the rule's comment
	Bridge  string // traffic leaving through this interface is not masqueraded
	Subnet  string // pod subnet (CIDR, network address)
}

// conflistMasquerade is the value of conflistMasqueradeKey.
type conflistMasquerade struct {
	Masquerade bool `json:"masquerade"`
}

// MasqueradeOf returns the masquerade rule a conflist asks podkeeper for: nil when it asks for
// none (any config but podkeeper's default network). An error means the conflist asks for one
// but does not say for which bridge and subnet (its first plugin must be a bridge with
// host-local ranges). Pure.
func MasqueradeOf(conflist []byte) (*Masquerade, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(conflist, &top); err != nil {
		return nil, nil // not JSON: libcni reports it when loading
	}
	raw, ok := top[conflistMasqueradeKey]
	if !ok {
		return nil, nil
	}
	var want conflistMasquerade
	if err := json.Unmarshal(raw, &want); err != nil {
		return nil, fmt.Errorf("%q key: %w", conflistMasqueradeKey, err)
	}
	if !want.Masquerade {
		return nil, nil
	}
	var conf struct {
		Name    string `json:"name"`
		Plugins []struct {
			Type   string `json:"type"`
			Bridge string `json:"bridge"`
			IPMasq bool   `json:"ipMasq"`
			IPAM   struct {
				Ranges [][]struct {
					Subnet string `json:"subnet"`
				} `json:"ranges"`
			} `json:"ipam"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(conflist, &conf); err != nil {
		return nil, fmt.Errorf("masquerade: %w", err)
	}
	if len(conf.Plugins) == 0 || conf.Plugins[0].Type != "bridge" {
		return nil, errors.New("masquerade: the first plugin is not a bridge")
	}
	br := conf.Plugins[0]
	if br.IPMasq {
		return nil, errors.New("masquerade: the bridge plugin's ipMasq is on as well")
	}
	if err := validIfName(br.Bridge); err != nil {
		return nil, fmt.Errorf("masquerade: bridge name %q: %w", br.Bridge, err)
	}
	if len(br.IPAM.Ranges) != 1 || len(br.IPAM.Ranges[0]) != 1 {
		return nil, errors.New("masquerade: the bridge's IPAM must have exactly one range")
	}
	subnet := br.IPAM.Ranges[0][0].Subnet
	ip, ipnet, err := net.ParseCIDR(subnet)
	if err != nil || !ip.Equal(ipnet.IP) {
		return nil, fmt.Errorf("masquerade: pod subnet %q is not a network address", subnet)
	}
	return &Masquerade{Network: conf.Name, Bridge: br.Bridge, Subnet: ipnet.String()}, nil
}

// ipv6 reports whether the rule belongs to ip6tables.
func (m Masquerade) ipv6() bool {
	ip, _, _ := net.ParseCIDR(m.Subnet)
	return ip != nil && ip.To4() == nil
}

// Command is the iptables binary of the rule's family.
func (m Masquerade) Command() string {
	if m.ipv6() {
		return "ip6tables"
	}
	return "iptables"
}

// RuleArgs is the rule as iptables takes it after "-t nat -A|-C|-D". Pure.
func (m Masquerade) RuleArgs() []string {
	multicast := "224.0.0.0/4"
	if m.ipv6() {
		multicast = "ff00::/8"
	}
	return []string{"POSTROUTING", "-s", m.Subnet, "!", "-o", m.Bridge, "!", "-d", multicast,
		"-m", "comment", "--comment", fmt.Sprintf("podkeeper %s: masquerade pods leaving %s", m.Network, m.Bridge),
		"-j", "MASQUERADE"}
}

// iptables runs the rule's iptables binary with "-w -t nat op <rule>", and reports whether it
// succeeded; exit status 1 (rule absent, for -C and -D) is false without an error.
func (m Masquerade) iptables(ctx context.Context, op string) (bool, error) {
	args := append([]string{"-w", "-t", "nat", op}, m.RuleArgs()...)
	cmd := exec.CommandContext(ctx, m.Command(), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err == nil {
		return true, nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 && op != "-A" {
		return false, nil
	}
	return false, fmt.Errorf("%s %s: %w: %s", m.Command(), strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
}

// Ensure adds the rule unless it is there already. Idempotent.
func (m Masquerade) Ensure(ctx context.Context) error {
	ok, err := m.iptables(ctx, "-C")
	if err != nil {
		return fmt.Errorf("check masquerade rule of %s: %w", m.Subnet, err)
	}
	if ok {
		return nil
	}
	if _, err := m.iptables(ctx, "-A"); err != nil {
		return fmt.Errorf("add masquerade rule of %s: %w", m.Subnet, err)
	}
	return nil
}

// Remove deletes every copy of the rule; none there is not an error.
func (m Masquerade) Remove(ctx context.Context) error {
	for i := 0; i < 100; i++ {
		ok, err := m.iptables(ctx, "-D")
		if err != nil {
			return fmt.Errorf("delete masquerade rule of %s: %w", m.Subnet, err)
		}
		if !ok {
			return nil
		}
	}
	return fmt.Errorf("delete masquerade rule of %s: still there after 100 deletes", m.Subnet)
}

// Masquerade is the rule podkeeper keeps for its default network d (DefaultConflist asks for it).
func (d DefaultNetwork) Masquerade() Masquerade {
	d = d.withDefaults()
	m := Masquerade{Network: d.Name, Bridge: d.Bridge, Subnet: d.Subnet}
	if _, ipnet, err := net.ParseCIDR(d.Subnet); err == nil {
		m.Subnet = ipnet.String()
	}
	return m
}

// RemoveMasquerade deletes the masquerade rule that the CNI config in use in confDir (its first
// file) asks for, if any: for retiring a network (tests, the benchmark, an uninstall).
func RemoveMasquerade(ctx context.Context, confDir string) error {
	files, err := cniConfFiles(confDir)
	if err != nil || len(files) == 0 {
		return err
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		return err
	}
	m, err := MasqueradeOf(b)
	if err != nil || m == nil {
		return err
	}
	return m.Remove(ctx)
}
