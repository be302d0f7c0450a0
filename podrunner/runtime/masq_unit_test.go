package runtime

import (
	"reflect"
	"strings"
	"testing"
)

func TestMasqueradeOf(t *testing.T) {
	bridge := func(extra string) string {
		return `{"cniVersion":"1.0.0","name":"net1",` + extra + `"plugins":[{"type":"bridge","bridge":"br1","ipMasq":false,` +
			`"ipam":{"type":"host-local","ranges":[[{"subnet":"10.5.0.0/16"}]]}},{"type":"portmap"}]}`
	}
	for _, tc := range []struct {
		name, conf string
		want       *Masquerade
		err        string
	}{
		{"asked for", bridge(`"podkeeper":{"masquerade":true},`), &Masquerade{Network: "net1", Bridge: "br1", Subnet: "10.5.0.0/16"}, ""},
		{"no key: a user's config", bridge(``), nil, ""},
		{"key, masquerade false", bridge(`"podkeeper":{"masquerade":false},`), nil, ""},
		{"not JSON: left to libcni", `{"name":`, nil, ""},
		{"key of the wrong shape", bridge(`"podkeeper":true,`), nil, `"podkeeper" key`},
		{"ipMasq on as well", strings.Replace(bridge(`"podkeeper":{"masquerade":true},`), `"ipMasq":false`, `"ipMasq":true`, 1), nil, "ipMasq is on"},
		{"first plugin not a bridge", `{"name":"n","podkeeper":{"masquerade":true},"plugins":[{"type":"macvlan"}]}`, nil, "not a bridge"},
		{"no range", `{"name":"n","podkeeper":{"masquerade":true},"plugins":[{"type":"bridge","bridge":"b","ipam":{}}]}`, nil, "exactly one range"},
		{"host address, not a subnet", strings.Replace(bridge(`"podkeeper":{"masquerade":true},`), "10.5.0.0/16", "10.5.0.1/16", 1), nil, "not a network address"},
		{"bad bridge name", strings.Replace(bridge(`"podkeeper":{"masquerade":true},`), `"br1"`, `"a/b"`, 1), nil, "bridge name"},
		{"IPv6", strings.Replace(bridge(`"podkeeper":{"masquerade":true},`), "10.5.0.0/16", "fd00:5::/64", 1), &Masquerade{Network: "net1", Bridge: "br1", Subnet: "fd00:5::/64"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := MasqueradeOf([]byte(tc.conf))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestMasqueradeRule(t *testing.T) {
	v4 := Masquerade{Network: "podkeeper", Bridge: "podkeeper0", Subnet: "10.89.0.0/16"}
	if got, want := strings.Join(v4.RuleArgs(), " "),
		"POSTROUTING -s 10.89.0.0/16 ! -o podkeeper0 ! -d 224.0.0.0/4 -m comment --comment podkeeper podkeeper: masquerade pods leaving podkeeper0 -j MASQUERADE"; got != want {
		t.Errorf("IPv4 rule\n got %s\nwant %s", got, want)
	}
	if v4.Command() != "iptables" {
		t.Errorf("IPv4 command %s", v4.Command())
	}
	v6 := Masquerade{Network: "n6", Bridge: "br6", Subnet: "fd00:89::/64"}
	args := v6.RuleArgs()
	if v6.Command() != "ip6tables" || args[8] != "ff00::/8" {
		t.Errorf("IPv6: %s %v", v6.Command(), args)
	}
	// The comment is one argument (exec, no shell).
	if c := args[len(args)-3]; c != "podkeeper n6: masquerade pods leaving br6" {
		t.Errorf("comment argument %q", c)
	}
	if d := (DefaultNetwork{}).Masquerade(); d != (Masquerade{Network: DefaultNetworkName, Bridge: DefaultBridge, Subnet: DefaultPodSubnet}) {
		t.Errorf("default network's rule %+v", d)
	}
}
