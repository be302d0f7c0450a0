package manifests

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// podLevel is pod("a") with pod-level resources res (YAML under spec.resources) and the
// container's resources ctr (YAML under the container's resources, "" none).
func podLevel(res, ctr string) string {
	p := pod("a")
	if ctr != "" {
		p += "    resources:\n" + ctr
	}
	return p + "  resources:\n" + res
}

func TestPodLevelResourcesDefaulted(t *testing.T) {
	for _, tc := range []struct {
		name, res, ctr string
		want           map[string]string // pod-level requests after defaulting
	}{
		{"limits only: requests = limits", "    limits:\n      cpu: 500m\n      memory: 64Mi\n", "", map[string]string{"cpu": "500m", "memory": "64Mi"}},
		{"a container's request wins over the pod limit", "    limits:\n      cpu: \"1\"\n      memory: 64Mi\n", "      requests:\n        cpu: 200m\n",
			map[string]string{"cpu": "200m", "memory": "64Mi"}},
		{"a request given stays", "    requests:\n      cpu: 300m\n    limits:\n      cpu: \"1\"\n", "", map[string]string{"cpu": "300m"}},
		{"requests only: nothing defaulted", "    requests:\n      memory: 32Mi\n", "", map[string]string{"memory": "32Mi"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods := mustDecode(t, "/etc/pods/x.yaml", podLevel(tc.res, tc.ctr))
			got := pods[0].Spec.Resources.Requests
			if len(got) != len(tc.want) {
				t.Fatalf("requests %v, want %v", got, tc.want)
			}
			for n, v := range tc.want {
				if q := got[corev1.ResourceName(n)]; q.String() != v {
					t.Errorf("%s: %s, want %s", n, q.String(), v)
				}
			}
		})
	}
}

func TestPodLevelResourcesValidated(t *testing.T) {
	for _, tc := range []struct {
		name, res, ctr string
		want           []string
	}{
		{"unsupported name", "    limits:\n      ephemeral-storage: 1Gi\n", "",
			[]string{`doc 0: spec.resources.limits[ephemeral-storage]: Unsupported value: "ephemeral-storage": supported values: "cpu", "memory", "hugepages-<size>"`}},
		{"request above limit", "    requests:\n      memory: 128Mi\n    limits:\n      memory: 64Mi\n", "",
			[]string{"doc 0: spec.resources.requests[memory]: Invalid value: \"128Mi\": must be less than or equal to memory limit of 64Mi"}},
		{"pod request below the containers'", "    requests:\n      cpu: 100m\n", "      requests:\n        cpu: 200m\n",
			[]string{"doc 0: spec.resources.requests[cpu]: Invalid value: \"100m\": must be greater than or equal to aggregate container requests of 200m"}},
		{"container limit above the pod's", "    limits:\n      memory: 64Mi\n", "      limits:\n        memory: 128Mi\n",
			// The container's request defaults to its limit and the pod's to the containers': both
			// are reported, as the API server does.
			[]string{"doc 0: spec.resources.requests[memory]: Invalid value: \"128Mi\": must be less than or equal to memory limit of 64Mi",
				"doc 0: spec.containers[0].resources.limits[memory]: Invalid value: \"128Mi\": must be less than or equal to pod limits of 64Mi"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fe := mustFail(t, podLevel(tc.res, tc.ctr))
			var got []string
			for _, p := range fe.Problems {
				got = append(got, p.String())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestSupplementalGroupsPolicyValidated(t *testing.T) {
	fe := mustFail(t, pod("a")+"  securityContext:\n    supplementalGroupsPolicy: Loose\n")
	want := `doc 0: spec.securityContext.supplementalGroupsPolicy: Unsupported value: "Loose": supported values: "Merge", "Strict"`
	if len(fe.Problems) != 1 || fe.Problems[0].String() != want {
		t.Errorf("problems %v, want %q", fe.Problems, want)
	}
	mustDecode(t, "/etc/pods/x.yaml", pod("a")+"  securityContext:\n    supplementalGroupsPolicy: Strict\n")
}

// Fields that need API objects are refused, as the kubelet refuses them in a static pod, never
// run without what they ask for.
func TestAPIObjectFieldsRefused(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"resourceClaims", pod("a") + "  resourceClaims:\n  - name: gpu\n    resourceClaimName: gpu\n",
			"doc 0: spec.resourceClaims: Forbidden: static pods may not reference resourceclaims (they need an API server)"},
		{"container claims", pod("a") + "    resources:\n      claims:\n      - name: gpu\n",
			"doc 0: spec.containers[0].resources.claims: Forbidden: static pods may not reference resourceclaims (they need an API server)"},
		{"volumeDevices", pod("a") + "    volumeDevices:\n    - name: disk\n      devicePath: /dev/xvda\n",
			"doc 0: spec.containers[0].volumeDevices: Forbidden: static pods may not reference persistentvolumeclaims (a volumeDevice needs one)"},
		{"ephemeralContainers", pod("a") + "  ephemeralContainers:\n  - name: dbg\n    image: busybox\n",
			"doc 0: spec.ephemeralContainers: Forbidden: cannot be set on create"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fe := mustFail(t, tc.doc)
			var got []string
			for _, p := range fe.Problems {
				got = append(got, p.String())
			}
			if !slices.Contains(got, tc.want) {
				t.Errorf("problems %q, want %q among them", got, tc.want)
			}
		})
	}
}

func TestHostnameOverrideValidated(t *testing.T) {
	fe := mustFail(t, pod("a")+"  hostNetwork: true\n  setHostnameAsFQDN: true\n  hostnameOverride: Not_Valid\n")
	var got []string
	for _, p := range fe.Problems {
		got = append(got, p.String())
	}
	for _, want := range []string{
		"doc 0: spec.hostnameOverride: Forbidden: may not be specified when setHostnameAsFQDN is true",
		"doc 0: spec.hostnameOverride: Forbidden: may not be specified when hostNetwork is true",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("problems %q, want %q among them", got, want)
		}
	}
	if !strings.Contains(strings.Join(got, "\n"), "spec.hostnameOverride: Invalid value: \"Not_Valid\"") {
		t.Errorf("problems %q name no invalid hostnameOverride", got)
	}
	p := mustDecode(t, "/etc/pods/x.yaml", pod("a")+"  hostnameOverride: edge-gw.example.com\n")
	if o := p[0].Spec.HostnameOverride; o == nil || *o != "edge-gw.example.com" {
		t.Errorf("hostnameOverride %v", o)
	}
}

func TestRestartRulesValidated(t *testing.T) {
	for _, tc := range []struct{ name, ctr, want string }{
		{"rules need a policy", "    restartPolicyRules:\n    - action: Restart\n      exitCodes:\n        operator: In\n        values: [42]\n",
			"doc 0: spec.containers[0].restartPolicy: Required value: must specify restartPolicy when restart rules are used"},
		{"unknown action", "    restartPolicy: Never\n    restartPolicyRules:\n    - action: RestartPod\n      exitCodes:\n        operator: In\n        values: [42]\n",
			`doc 0: spec.containers[0].restartPolicyRules[0].action: Unsupported value: "RestartPod": supported values: "Restart", "RestartAllContainers"`},
		{"exitCodes required", "    restartPolicy: Never\n    restartPolicyRules:\n    - action: Restart\n",
			"doc 0: spec.containers[0].restartPolicyRules[0].exitCodes: Required value: must be specified"},
		{"bad operator", "    restartPolicy: Never\n    restartPolicyRules:\n    - action: Restart\n      exitCodes:\n        operator: Above\n        values: [1]\n",
			`doc 0: spec.containers[0].restartPolicyRules[0].exitCodes.operator: Unsupported value: "Above": supported values: "In", "NotIn"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fe := mustFail(t, pod("a")+tc.ctr)
			var got []string
			for _, p := range fe.Problems {
				got = append(got, p.String())
			}
			if !slices.Contains(got, tc.want) {
				t.Errorf("problems %q, want %q among them", got, tc.want)
			}
		})
	}
	mustDecode(t, "/etc/pods/x.yaml", pod("a")+"    restartPolicy: OnFailure\n    restartPolicyRules:\n    - action: Restart\n      exitCodes:\n        operator: In\n        values: [42]\n")
	mustDecode(t, "/etc/pods/x.yaml", pod("a")+"    restartPolicy: Never\n    restartPolicyRules:\n    - action: RestartAllContainers\n      exitCodes:\n        operator: In\n        values: [42]\n"+
		"  initContainers:\n  - name: side\n    image: busybox\n    restartPolicy: Always\n    restartPolicyRules:\n    - action: RestartAllContainers\n      exitCodes:\n        operator: NotIn\n        values: [0]\n")
}

func TestUnmaskedProcMountNeedsHostUsersFalse(t *testing.T) {
	fe := mustFail(t, pod("a")+"    securityContext:\n      procMount: Unmasked\n")
	want := "doc 0: spec.containers[0].securityContext.procMount: Invalid value: \"Unmasked\": `hostUsers` must be false to use `Unmasked`"
	if len(fe.Problems) != 1 || fe.Problems[0].String() != want {
		t.Errorf("problems %v, want %q", fe.Problems, want)
	}
}

func TestFileKeyRefValidated(t *testing.T) {
	vols := "  volumes:\n  - name: e\n    emptyDir: {}\n  - name: h\n    hostPath:\n      path: /tmp\n"
	ref := func(vol, path, key string) string {
		return "    env:\n    - name: V\n      valueFrom:\n        fileKeyRef:\n          volumeName: " + vol + "\n          path: " + path + "\n          key: " + key + "\n"
	}
	for _, tc := range []struct{ name, env, want string }{
		{"volume missing", ref("nope", "vars", "K"), `doc 0: spec.containers[0].env[0].valueFrom.fileKeyRef.volumeName: Not found: "nope"`},
		{"not an emptyDir", ref("h", "vars", "K"), `doc 0: spec.containers[0].env[0].valueFrom.fileKeyRef.volumeName: Invalid value: "h": referenced volume must be an emptyDir volume`},
		{"absolute path", ref("e", "/etc/passwd", "K"), `doc 0: spec.containers[0].env[0].valueFrom.fileKeyRef.path: Invalid value: "/etc/passwd": must be a relative path`},
		{"dot-dot", ref("e", "a/../../x", "K"), `doc 0: spec.containers[0].env[0].valueFrom.fileKeyRef.path: Invalid value: "a/../../x": must not contain '..'`},
		{"bad key", ref("e", "vars", "1=x"), `doc 0: spec.containers[0].env[0].valueFrom.fileKeyRef.key: Invalid value: "1=x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fe := mustFail(t, pod("a")+tc.env+vols)
			var got []string
			for _, p := range fe.Problems {
				got = append(got, p.String())
			}
			if !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, tc.want) }) {
				t.Errorf("problems %q, want one starting %q", got, tc.want)
			}
		})
	}
	p := mustDecode(t, "/etc/pods/x.yaml", pod("a")+ref("e", "out/vars", "K")+vols)
	if r := p[0].Spec.Containers[0].Env[0].ValueFrom.FileKeyRef; r == nil || r.VolumeName != "e" || r.Path != "out/vars" || r.Key != "K" {
		t.Errorf("fileKeyRef decoded as %+v", r)
	}
}

func TestOverheadValidated(t *testing.T) {
	fe := mustFail(t, pod("a")+"  overhead:\n    cpu: -100m\n    widgets: 1\n")
	var got []string
	for _, p := range fe.Problems {
		got = append(got, p.String())
	}
	for _, want := range []string{
		`doc 0: spec.overhead.limits[cpu]: Invalid value: "-100m": must be greater than or equal to 0`,
		`doc 0: spec.overhead.limits[widgets]: Invalid value: "widgets": must be a standard resource type or fully qualified`,
	} {
		if !slices.Contains(got, want) {
			t.Errorf("problems %q, want %q among them", got, want)
		}
	}
	p := mustDecode(t, "/etc/pods/x.yaml", pod("a")+"  overhead:\n    cpu: 100m\n    memory: 16Mi\n")
	if m := p[0].Spec.Overhead.Memory(); m.String() != "16Mi" {
		t.Errorf("overhead memory %s", m)
	}
}

func TestImageVolumeDefaultedAndValidated(t *testing.T) {
	vol := func(src string) string { return "  volumes:\n  - name: v\n" + src }
	p := mustDecode(t, "/etc/pods/x.yaml", pod("a")+vol("    image:\n      reference: registry.local/models:v3\n")+
		"  - name: latest\n    image:\n      reference: registry.local/models\n  - name: scratch\n")
	if pp := p[0].Spec.Volumes[0].Image.PullPolicy; pp != corev1.PullIfNotPresent {
		t.Errorf("tagged reference: pullPolicy %q, want IfNotPresent", pp)
	}
	if pp := p[0].Spec.Volumes[1].Image.PullPolicy; pp != corev1.PullAlways {
		t.Errorf("untagged reference: pullPolicy %q, want Always", pp)
	}
	if p[0].Spec.Volumes[2].EmptyDir == nil {
		t.Errorf("a volume with no source: %+v, want an emptyDir (the API server's default)", p[0].Spec.Volumes[2].VolumeSource)
	}
	fe := mustFail(t, pod("a")+"    volumeMounts:\n    - name: v\n      mountPath: /v\n      bindMountOptions: [noexec]\n"+
		vol("    image:\n      pullPolicy: Sometimes\n"))
	var got []string
	for _, pr := range fe.Problems {
		got = append(got, pr.String())
	}
	for _, want := range []string{
		"doc 0: spec.volumes[0].image.reference: Required value",
		`doc 0: spec.volumes[0].image.pullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"`,
		`doc 0: spec.containers[0].volumeMounts[0].bindMountOptions: Invalid value: ["noexec"]: bindMountOptions may not be used with image volumes`,
	} {
		if !slices.Contains(got, want) {
			t.Errorf("problems %q, want %q among them", got, want)
		}
	}
}
