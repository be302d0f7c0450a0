package testenv

import (
	"fmt"
	"os/exec"
	"strings"
)

// CNI's portmap plugin creates three shared nat chains (and the jumps to them) the first time a
// hostPort is mapped, and never removes them. Tests that map hostPorts remove them afterwards when
// they did not exist before the test.

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
