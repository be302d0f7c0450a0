package manifests

import (
	"strings"
	"testing"
)

// Each of these the kubelet refuses in a static pod (its log's words, from make conformance's
// edge-* scenarios of 2026-12-07) and podkeeper ran before.
func TestValidationAsTheKubelet(t *testing.T) {
	for _, tc := range []struct {
		name, extra, want string
	}{
		{"absolute subPathExpr (edge-subpathexpr-absolute; the API server's path has no mount index)", "    volumeMounts:\n    - name: a\n      mountPath: /x\n      subPathExpr: /abs\n  volumes:\n  - name: a\n    emptyDir: {}\n",
			`spec.containers[0].volumeMounts.subPathExpr: Invalid value: "/abs": must be a relative path`},
		{"dns nameserver not an IP", "  dnsConfig:\n    nameservers: [dns.example]\n",
			`spec.dnsConfig.nameservers[0]: Invalid value: "dns.example": must be a valid IP address`},
		{"four nameservers", "  dnsConfig:\n    nameservers: [1.1.1.1, 1.1.1.2, 1.1.1.3, 1.1.1.4]\n",
			"spec.dnsConfig.nameservers: Invalid value: ",
		},
		{"downward path with ..", "  volumes:\n  - name: v\n    downwardAPI:\n      items:\n      - path: ../x\n        fieldRef:\n          fieldPath: metadata.name\n",
			`spec.volumes[0].downwardAPI.items[0].path: Invalid value: "../x": must not contain '..'`},
		{"projected downward path absolute", "  volumes:\n  - name: v\n    projected:\n      sources:\n      - downwardAPI:\n          items:\n          - path: /x\n            fieldRef:\n              fieldPath: metadata.name\n",
			`spec.volumes[0].projected.sources[0].downwardAPI.items[0].path: Invalid value: "/x": must be a relative path`},
		{"one hostPort twice", "    ports:\n    - containerPort: 80\n      hostPort: 18080\n  - name: d\n    image: busybox\n    ports:\n    - containerPort: 81\n      hostPort: 18080\n",
			`spec.containers[1].ports[0].hostPort: Duplicate value: "TCP//18080"`},
		{"extended resource fraction", "    resources:\n      requests:\n        example.com/gpu: 500m\n      limits:\n        example.com/gpu: 500m\n",
			`spec.containers[0].resources.limits[example.com/gpu]: Invalid value: "500m": must be an integer`},
		{"extended resource without a limit", "    resources:\n      requests:\n        example.com/gpu: \"1\"\n",
			"spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources"},
		{"extended resource request below its limit", "    resources:\n      requests:\n        example.com/gpu: \"1\"\n      limits:\n        example.com/gpu: \"2\"\n",
			`spec.containers[0].resources.requests: Invalid value: "1": must be equal to example.com/gpu limit of 2`},
		{"fsGroupChangePolicy", "  securityContext:\n    fsGroupChangePolicy: Sometimes\n",
			`spec.securityContext.fsGroupChangePolicy: Unsupported value: "Sometimes": supported values: "Always", "OnRootMismatch"`},
		{"hostAlias ip", "  hostAliases:\n  - ip: x\n    hostnames: [a]\n",
			`spec.hostAliases[0].ip: Invalid value: "x": must be a valid IP address`},
		{"hostUsers false and hostNetwork", "  hostUsers: false\n  hostNetwork: true\n",
			"spec.hostNetwork: Forbidden: when `hostUsers` is false"},
		{"nodeSelector key", "  nodeSelector:\n    a/b/c: x\n",
			`spec.nodeSelector: Invalid value: "a/b/c": a valid label key must consist of`},
		{"windows pod with SELinux", "    securityContext:\n      seLinuxOptions:\n        level: s0\n  os:\n    name: windows\n",
			"spec.containers[0].securityContext.seLinuxOptions: Forbidden: cannot be set for a windows pod"},
		{"os name", "  os:\n    name: plan9\n",
			`spec.os.name: Unsupported value: "plan9"`},
		{"preemptionPolicy", "  preemptionPolicy: Sometimes\n",
			`spec.preemptionPolicy: Unsupported value: "Sometimes": supported values: "PreemptLowerPriority", "Never"`},
		{"readinessGate", "  readinessGates:\n  - conditionType: \"a b\"\n",
			`spec.readinessGates[0].conditionType: Invalid value: "a b": name part must consist of`},
		{"resizePolicy resource", "    resizePolicy:\n    - resourceName: disk\n      restartPolicy: NotRequired\n",
			`spec.containers[0].resizePolicy: Unsupported value: "disk": supported values: "cpu", "memory"`},
		{"shareProcessNamespace and hostPID", "  shareProcessNamespace: true\n  hostPID: true\n",
			"spec.shareProcessNamespace: Invalid value: true: ShareProcessNamespace and HostPID cannot both be enabled"},
		{"subdomain", "  subdomain: a_b\n",
			`spec.subdomain: Invalid value: "a_b": a lowercase RFC 1123 label must consist of`},
		{"one sysctl twice", "  securityContext:\n    sysctls:\n    - name: net.ipv4.ip_unprivileged_port_start\n      value: \"0\"\n    - name: net.ipv4.ip_unprivileged_port_start\n      value: \"1\"\n",
			`spec.securityContext.sysctls[1].name: Duplicate value: "net.ipv4.ip_unprivileged_port_start"`},
		{"toleration Exists with a value", "  tolerations:\n  - key: k\n    operator: Exists\n    value: v\n",
			`spec.tolerations[0].operator: Invalid value: "v": value must be empty when ` + "`operator`" + ` is 'Exists'`},
		{"toleration seconds without NoExecute", "  tolerations:\n  - key: k\n    operator: Exists\n    tolerationSeconds: 5\n",
			`spec.tolerations[0].effect: Invalid value: "": effect must be 'NoExecute' when ` + "`tolerationSeconds`" + ` is set`},
		// The second batch of edge-* scenarios.
		{"apparmor Localhost without a profile", "    securityContext:\n      appArmorProfile:\n        type: Localhost\n",
			"spec.containers[0].securityContext.appArmorProfile.localhostProfile: Required value: must be set when AppArmor type is Localhost"},
		{"node affinity operator", "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n        - matchExpressions:\n          - key: a\n            operator: Near\n            values: [b]\n",
			`spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator`},
		{"maxSkew 0", "  topologySpreadConstraints:\n  - maxSkew: 0\n    topologyKey: zone\n    whenUnsatisfiable: DoNotSchedule\n",
			"spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero"},
		{"hugepages alone", "    resources:\n      requests:\n        hugepages-2Mi: 2Mi\n      limits:\n        hugepages-2Mi: 2Mi\n",
			"spec.containers[0].resources: Forbidden: HugePages require cpu or memory"},
		{"deadline past int32", "  activeDeadlineSeconds: 2147483648\n",
			"spec.activeDeadlineSeconds: Invalid value: 2147483648: must be between 1 and 2147483647, inclusive"},
		{"nfs without server", "  volumes:\n  - name: v\n    nfs:\n      path: /x\n",
			"spec.volumes[0].nfs.server: Required value"},
		{"cpu divisor 3", "    env:\n    - name: A\n      valueFrom:\n        resourceFieldRef:\n          resource: limits.cpu\n          divisor: \"3\"\n",
			`spec.containers[0].env[0].valueFrom.resourceFieldRef.divisor: Invalid value: "limits.cpu": only divisor's values 1m and 1 are supported with the cpu resource`},
		{"finalizer", "meta:  finalizers: [\"a b\"]\n", `metadata.finalizers[0]: Invalid value: "a b": name part must consist of`},
		// The third batch.
		{"fieldRef label key", "    env:\n    - name: A\n      valueFrom:\n        fieldRef:\n          fieldPath: metadata.labels['a b']\n",
			`spec.containers[0].env[0].valueFrom.fieldRef: Invalid value: "a b": name part must consist of`},
		{"stopSignal without os", "    lifecycle:\n      stopSignal: SIGUSR1\n",
			"spec.containers[0].lifecycle.stopSignal: Forbidden: may not be set for containers with empty `spec.os.name`"},
		{"stopSignal unknown", "    lifecycle:\n      stopSignal: SIGNOPE\n  os:\n    name: linux\n",
			`spec.containers[0].lifecycle.stopSignal: Unsupported value: "SIGNOPE"`},
		{"sysctl name", "  securityContext:\n    sysctls:\n    - name: \"foo bar\"\n      value: \"1\"\n",
			`spec.securityContext.sysctls[0].name: Invalid value: "foo bar": must have at most 253 characters and match regex`},
		{"windowsOptions in a linux pod", "    securityContext:\n      windowsOptions:\n        runAsUserName: a\n  os:\n    name: linux\n",
			"spec.containers[0].securityContext.windowsOptions: Forbidden: windows options cannot be set for a linux pod"},
		{"pvc", "  volumes:\n  - name: p\n    persistentVolumeClaim:\n      claimName: data\n",
			"spec.volumes[0].persistentVolumeClaim: Forbidden: static pods may not reference persistentvolumeclaims"},
		{"ephemeral volume", "  volumes:\n  - name: e\n    ephemeral:\n      volumeClaimTemplate:\n        spec:\n          accessModes: [ReadWriteOnce]\n",
			"spec.volumes[0].ephemeral: Forbidden: static pods may not reference persistentvolumeclaims (via ephemeral volumes)"},
		{"csi", "  volumes:\n  - name: s\n    csi:\n      driver: example.csi.k8s.io\n",
			"spec.volumes[0].csi: Forbidden: static pods may not reference csidrivers (via CSI volumes)"},
		// The fourth batch.
		{"annotations over 256 KiB", "meta:  annotations:\n    a: " + strings.Repeat("x", 262145) + "\n",
			"metadata.annotations: Too long: may not be more than 262144 bytes"},
		{"serviceAccountToken without serviceAccountName", "  volumes:\n  - name: t\n    projected:\n      sources:\n      - serviceAccountToken:\n          path: token\n",
			"spec.volumes[0].projected.sources[0].serviceAccountToken: Forbidden: must not be specified when serviceAccountName is not set"},
		{"downward volume of status.podIP", "  volumes:\n  - name: v\n    downwardAPI:\n      items:\n      - path: ip\n        fieldRef:\n          fieldPath: status.podIP\n",
			`spec.volumes[0].downwardAPI.items[0].fieldRef.fieldPath: Unsupported value: "status.podIP"`},
		{"downward volume resource without containerName", "  volumes:\n  - name: v\n    downwardAPI:\n      items:\n      - path: cpu\n        resourceFieldRef:\n          resource: limits.cpu\n",
			"spec.volumes[0].downwardAPI.items[0].resourceFieldRef.containerName: Required value"},
		{"minDomains with ScheduleAnyway", "  topologySpreadConstraints:\n  - maxSkew: 1\n    minDomains: 2\n    topologyKey: zone\n    whenUnsatisfiable: ScheduleAnyway\n",
			"spec.topologySpreadConstraints[0].minDomains: Invalid value: 2: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway"},
		{"pod affinity operator", "  affinity:\n    podAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n      - topologyKey: zone\n        labelSelector:\n          matchExpressions:\n          - key: a\n            operator: Near\n            values: [b]\n",
			`spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator`},
		{"pod anti-affinity without topologyKey", "  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n      - labelSelector:\n          matchLabels:\n            a: b\n",
			"spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value: can not be empty"},
		{"projected: one path from two sources", "  volumes:\n  - name: v\n    projected:\n      sources:\n      - downwardAPI:\n          items:\n          - path: x\n            fieldRef:\n              fieldPath: metadata.name\n      - downwardAPI:\n          items:\n          - path: x\n            fieldRef:\n              fieldPath: metadata.namespace\n",
			`spec.volumes[0].projected: Invalid value: "x": conflicting duplicate paths`},
		// The sixth batch.
		{"two spread constraints of one key and action", "  topologySpreadConstraints:\n  - maxSkew: 1\n    topologyKey: zone\n    whenUnsatisfiable: DoNotSchedule\n  - maxSkew: 2\n    topologyKey: zone\n    whenUnsatisfiable: DoNotSchedule\n",
			`spec.topologySpreadConstraints[1].{topologyKey, whenUnsatisfiable}: Duplicate value: "{zone, DoNotSchedule}"`},
		{"nodeAffinityPolicy", "  topologySpreadConstraints:\n  - maxSkew: 1\n    topologyKey: zone\n    whenUnsatisfiable: DoNotSchedule\n    nodeAffinityPolicy: Sometimes\n",
			`spec.topologySpreadConstraints[0].nodeAffinityPolicy: Unsupported value: "Sometimes": supported values: "Honor", "Ignore"`},
		{"RuntimeDefault seccomp with a localhostProfile", "    securityContext:\n      seccompProfile:\n        type: RuntimeDefault\n        localhostProfile: x.json\n",
			`spec.containers[0].securityContext.seccompProfile.localhostProfile: Invalid value: "x.json": can only be set when seccomp type is Localhost`},
		{"scheduling gate", "  schedulingGates:\n  - name: example.com/wait\n",
			"spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := pod("a") + tc.extra
			if strings.HasPrefix(tc.extra, "meta:") { // a metadata line
				doc = strings.Replace(pod("a"), "\nspec:", "\n"+strings.TrimPrefix(tc.extra, "meta:")+"spec:", 1)
			}
			fe := mustFail(t, doc)
			var got []string
			for _, p := range fe.Problems {
				got = append(got, p.String())
			}
			if all := strings.Join(got, "\n"); !strings.Contains(all, tc.want) {
				t.Fatalf("problems:\n%s\nwant one containing %q", all, tc.want)
			}
		})
	}
}

// What the kubelet accepts stays accepted: the valid neighbours of the cases above.
func TestValidationAcceptsAsTheKubelet(t *testing.T) {
	for _, extra := range []string{
		"  dnsConfig:\n    nameservers: [1.1.1.1, \"2001:db8::1\", 10.0.0.1]\n    searches: [a.example., b.example]\n",
		"    resources:\n      requests:\n        example.com/gpu: \"2\"\n      limits:\n        example.com/gpu: \"2\"\n",
		"    resources:\n      limits:\n        example.com/gpu: \"1\"\n",
		"    ports:\n    - containerPort: 80\n      hostPort: 18080\n    - containerPort: 80\n      hostPort: 18080\n      protocol: UDP\n",
		"  tolerations:\n  - operator: Exists\n  - key: k\n    value: v\n    effect: NoExecute\n    tolerationSeconds: 3\n",
		"  terminationGracePeriodSeconds: -1\n",
		"  os:\n    name: windows\n",
		"    securityContext:\n      allowPrivilegeEscalation: false\n      capabilities:\n        add: [SYS_ADMIN]\n",
		"    env:\n    - name: A\n      valueFrom:\n        resourceFieldRef:\n          resource: limits.memory\n          divisor: 1Mi\n",
		"  dnsConfig:\n    searches: [a_b.example, \".\"]\n",
		"    lifecycle:\n      stopSignal: SIGUSR1\n  os:\n    name: linux\n",
		"    env:\n    - name: A\n      valueFrom:\n        fieldRef:\n          fieldPath: metadata.annotations['Example.com/Key']\n",
		"  volumes:\n  - name: v\n    downwardAPI:\n      items:\n      - path: l\n        fieldRef:\n          fieldPath: metadata.labels['app']\n      - path: cpu\n        resourceFieldRef:\n          containerName: c\n          resource: limits.cpu\n          divisor: 1m\n",
		"    resizePolicy:\n    - resourceName: cpu\n      restartPolicy: NotRequired\n    - resourceName: memory\n      restartPolicy: RestartContainer\n",
		// Relaxed env var names (GA): any printable ASCII but '=' (edge-env-name-digit-start).
		"    env:\n    - name: 1ABC\n      value: x\n    - name: \"a b!\"\n      value: \"y\"\n    envFrom:\n    - prefix: \"9_\"\n      configMapRef:\n        name: x\n        optional: true\n",
	} {
		mustDecode(t, "/etc/pods/x.yaml", pod("a")+extra)
	}
}
