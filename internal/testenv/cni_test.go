package testenv

import (
	"reflect"
	"testing"
)

func TestSplitRule(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{`POSTROUTING -s 10.233.0.3/32 -m comment --comment "name: \"pkbench-kubelet\" id: \"1b28\"" -j CNI-24e9`,
			[]string{"POSTROUTING", "-s", "10.233.0.3/32", "-m", "comment", "--comment", `name: "pkbench-kubelet" id: "1b28"`, "-j", "CNI-24e9"}},
		{`X -m comment --comment "" -j Y`, []string{"X", "-m", "comment", "--comment", "", "-j", "Y"}},
		{`A  B`, []string{"A", "B"}},
	} {
		got, err := splitRule(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("splitRule(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	if _, err := splitRule(`A "B`); err == nil {
		t.Error("unbalanced quote accepted")
	}
}
