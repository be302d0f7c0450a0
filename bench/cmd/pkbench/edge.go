package main

import (
	"fmt"
	"strings"
)

// Manifests on the edge of validity: whether each side runs the pod or refuses the file is
// compared (a pod both refuse is one field that agrees; one side listing it is a difference).
// The kubelet validates a static pod as the API server validates a pod's creation; podkeeper
// has its own validation (manifests/validate.go), and these look for the checks it lacks or
// has in excess. ConfigMap, Secret and ServiceAccount references are left out: podkeeper takes
// them from its directory on purpose, where the kubelet refuses a static pod that has them.

// vc is a valid sleeper container named name with more container lines.
func vc(name, extra string) string {
	return fmt.Sprintf("  - name: %s\n    image: busybox\n    imagePullPolicy: IfNotPresent\n    command: [\"sleep\", \"3600\"]\n%s", name, extra)
}

// edge is a scenario of a pod with spec lines extra (before containers) and containers.
func edge(name, what, extra string, containers ...string) scenario {
	return scenario{"edge-" + name, what, podDoc("ed-"+name, "Always", extra, containers...)}
}

// edgeMeta is edge with more metadata lines.
func edgeMeta(name, what, meta string) scenario {
	s := edge(name, what, "", vc("c", ""))
	s.spec = withMeta(meta, s.spec)
	return s
}

var edgeScenarios = []scenario{
	edge("dup-names", "an init container and an app container of one name", "  initContainers:\n"+vc("c", ""), vc("c", "")),
	edge("env-name-equals", "an env var name with '='", "", vc("c", "    env:\n    - name: \"A=B\"\n      value: x\n")),
	edge("env-value-and-from", "an env var with both value and valueFrom", "", vc("c", "    env:\n    - name: A\n      value: x\n      valueFrom:\n        fieldRef:\n          fieldPath: metadata.name\n")),
	edge("env-bad-fieldpath", "an env var from an unsupported fieldPath", "", vc("c", "    env:\n    - name: A\n      valueFrom:\n        fieldRef:\n          fieldPath: spec.containers\n")),
	edge("dup-volumes", "two volumes of one name", "  volumes:\n  - name: v\n    emptyDir: {}\n  - name: v\n    emptyDir: {}\n", vc("c", "")),
	edge("volume-two-sources", "a volume with two sources", "  volumes:\n  - name: v\n    emptyDir: {}\n    hostPath:\n      path: /tmp\n", vc("c", "")),
	edge("hostpath-backsteps", "a hostPath with '..'", "  volumes:\n  - name: v\n    hostPath:\n      path: /tmp/../etc\n", vc("c", "    volumeMounts:\n    - name: v\n      mountPath: /v\n")),
	edge("hostpath-relative", "a relative hostPath", "  volumes:\n  - name: v\n    hostPath:\n      path: tmp\n", vc("c", "    volumeMounts:\n    - name: v\n      mountPath: /v\n")),
	edge("dup-mountpath", "two mounts at one path", "  volumes:\n  - name: a\n    emptyDir: {}\n  - name: b\n    emptyDir: {}\n", vc("c", "    volumeMounts:\n    - name: a\n      mountPath: /x\n    - name: b\n      mountPath: /x\n")),
	edge("subpath-absolute", "an absolute subPath", "  volumes:\n  - name: a\n    emptyDir: {}\n", vc("c", "    volumeMounts:\n    - name: a\n      mountPath: /x\n      subPath: /abs\n")),
	edge("subpath-backsteps", "a subPath with '..'", "  volumes:\n  - name: a\n    emptyDir: {}\n", vc("c", "    volumeMounts:\n    - name: a\n      mountPath: /x\n      subPath: a/../../b\n")),
	edge("mountpath-relative", "a relative mountPath", "  volumes:\n  - name: a\n    emptyDir: {}\n", vc("c", "    volumeMounts:\n    - name: a\n      mountPath: x\n")),
	edge("dup-hostport", "two containers with one hostPort", "", vc("a", "    ports:\n    - containerPort: 80\n      hostPort: 18080\n"), vc("b", "    ports:\n    - containerPort: 81\n      hostPort: 18080\n")),
	edge("dup-port-names", "two ports of one name", "", vc("c", "    ports:\n    - name: web\n      containerPort: 80\n    - name: web\n      containerPort: 81\n")),
	edge("port-name-long", "a port name of 16 characters", "", vc("c", "    ports:\n    - name: abcdefghijklmnop\n      containerPort: 80\n")),
	edge("resource-unknown", "a request of an unknown resource without a domain", "", vc("c", "    resources:\n      requests:\n        widgets: \"1\"\n")),
	edge("resource-negative", "a negative memory request", "", vc("c", "    resources:\n      requests:\n        memory: -1Mi\n")),
	edge("extended-fraction", "an extended resource asked as a fraction", "", vc("c", "    resources:\n      requests:\n        example.com/gpu: 500m\n      limits:\n        example.com/gpu: 500m\n")),
	edge("extended-no-limit", "an extended resource requested without a limit", "", vc("c", "    resources:\n      requests:\n        example.com/gpu: \"1\"\n")),
	edge("run-as-negative", "runAsUser -1", "", vc("c", "    securityContext:\n      runAsUser: -1\n")),
	edge("seccomp-localhost-noprofile", "a Localhost seccomp profile without localhostProfile", "", vc("c", "    securityContext:\n      seccompProfile:\n        type: Localhost\n")),
	edge("dns-none-noconfig", "dnsPolicy None without dnsConfig", "  dnsPolicy: None\n", vc("c", "")),
	edge("dns-four-nameservers", "dnsConfig with 4 nameservers", "  dnsConfig:\n    nameservers: [1.1.1.1, 1.1.1.2, 1.1.1.3, 1.1.1.4]\n", vc("c", "")),
	edge("dns-bad-nameserver", "dnsConfig with a nameserver that is not an IP", "  dnsConfig:\n    nameservers: [dns.example]\n", vc("c", "")),
	edge("hostname-upper", "a hostname with capitals", "  hostname: Web\n", vc("c", "")),
	edge("subdomain-bad", "a subdomain with an underscore", "  subdomain: a_b\n", vc("c", "")),
	edge("hostalias-bad-ip", "a hostAlias whose ip is not an IP", "  hostAliases:\n  - ip: x\n    hostnames: [a]\n", vc("c", "")),
	edge("deadline-zero", "activeDeadlineSeconds 0", "  activeDeadlineSeconds: 0\n", vc("c", "")),
	{"edge-grace-negative", "terminationGracePeriodSeconds -1", strings.Replace(podDoc("ed-grace-negative", "Always", "", vc("c", "")), "terminationGracePeriodSeconds: 2", "terminationGracePeriodSeconds: -1", 1)},
	edge("init-restart-never", "an init container with restartPolicy Never", "  initContainers:\n"+vc("i", "    restartPolicy: Never\n"), vc("c", "")),
	edge("init-readiness", "a readiness probe on a plain init container", "  initContainers:\n"+vc("i", "    readinessProbe:\n      exec:\n        command: [\"true\"]\n"), vc("c", "")),
	edge("init-lifecycle", "a lifecycle hook on a plain init container", "  initContainers:\n"+vc("i", "    lifecycle:\n      preStop:\n        exec:\n          command: [\"true\"]\n"), vc("c", "")),
	edge("startup-success-2", "a startup probe with successThreshold 2", "", vc("c", "    startupProbe:\n      successThreshold: 2\n      exec:\n        command: [\"true\"]\n")),
	edge("pull-policy-bad", "imagePullPolicy Sometimes", "", "  - name: c\n    image: busybox\n    imagePullPolicy: Sometimes\n    command: [\"sleep\", \"3600\"]\n"),
	edge("term-policy-bad", "terminationMessagePolicy Sometimes", "", vc("c", "    terminationMessagePolicy: Sometimes\n")),
	edge("share-pid-hostpid", "shareProcessNamespace with hostPID", "  shareProcessNamespace: true\n  hostPID: true\n", vc("c", "")),
	edge("hostusers-hostnet", "hostUsers false with hostNetwork", "  hostUsers: false\n  hostNetwork: true\n", vc("c", "")),
	edge("sysctl-dup", "one sysctl twice", "  securityContext:\n    sysctls:\n    - name: net.ipv4.ip_unprivileged_port_start\n      value: \"0\"\n    - name: net.ipv4.ip_unprivileged_port_start\n      value: \"1\"\n", vc("c", "")),
	edge("fsgroup-policy-bad", "fsGroupChangePolicy Sometimes", "  securityContext:\n    fsGroup: 2000\n    fsGroupChangePolicy: Sometimes\n", vc("c", "")),
	edge("readiness-gate-bad", "a readinessGate with an invalid conditionType", "  readinessGates:\n  - conditionType: \"a b\"\n", vc("c", "")),
	edge("toleration-bad", "a toleration with operator Exists and a value", "  tolerations:\n  - key: k\n    operator: Exists\n    value: v\n", vc("c", "")),
	edge("preemption-bad", "preemptionPolicy Sometimes", "  preemptionPolicy: Sometimes\n", vc("c", "")),
	edge("resize-policy-bad", "a resizePolicy of an unknown resource", "", vc("c", "    resizePolicy:\n    - resourceName: disk\n      restartPolicy: NotRequired\n")),
	edge("emptydir-negative", "an emptyDir sizeLimit of -1Mi", "  volumes:\n  - name: v\n    emptyDir:\n      sizeLimit: -1Mi\n", vc("c", "")),
	edge("downward-path-backsteps", "a downwardAPI item path with '..'", "  volumes:\n  - name: v\n    downwardAPI:\n      items:\n      - path: ../x\n        fieldRef:\n          fieldPath: metadata.name\n", vc("c", "")),
	edge("env-from-prefix-bad", "an envFrom prefix with '='", "", vc("c", "    envFrom:\n    - prefix: \"A=\"\n      configMapRef:\n        name: x\n        optional: true\n")),
	edge("os-windows-linux-fields", "os.name windows with a Linux securityContext field", "  os:\n    name: windows\n", vc("c", "    securityContext:\n      seLinuxOptions:\n        level: s0\n")),
	edge("os-windows", "os.name windows, nothing else of Windows", "  os:\n    name: windows\n", vc("c", "")),
	edge("node-selector-bad", "a nodeSelector key with two slashes", "  nodeSelector:\n    a/b/c: x\n", vc("c", "")),
	edge("priority-class-unknown", "a priorityClassName the node does not know", "  priorityClassName: gold\n", vc("c", "")),
	edgeMeta("label-value-bad", "a label value with a space", "  labels:\n    a: \"b c\"\n"),
	edgeMeta("namespace-upper", "a namespace with capitals", "  namespace: Prod\n"),
	edgeMeta("annotation-key-bad", "an annotation key with two slashes", "  annotations:\n    a/b/c: x\n"),
	edge("workdir-relative", "a relative workingDir", "", vc("c", "    workingDir: tmp\n")),
	edge("capability-odd", "an added capability that is not one", "", vc("c", "    securityContext:\n      capabilities:\n        add: [NOT_A_CAP]\n")),
	edge("probe-timeout-zero", "a liveness probe with timeoutSeconds 0 and periodSeconds 0 (defaulted)", "", vc("c", "    livenessProbe:\n      timeoutSeconds: 0\n      periodSeconds: 0\n      exec:\n        command: [\"true\"]\n")),
	edge("procmount-unmasked", "procMount Unmasked without hostUsers false", "", vc("c", "    securityContext:\n      procMount: Unmasked\n")),
	// A second batch.
	edge("hostip-bad", "a port's hostIP that is not an IP", "", vc("c", "    ports:\n    - containerPort: 80\n      hostPort: 18081\n      hostIP: x\n")),
	edge("port-name-upper", "a port name with capitals", "", vc("c", "    ports:\n    - name: Web\n      containerPort: 80\n")),
	edge("port-name-hyphens", "a port name with two hyphens in a row", "", vc("c", "    ports:\n    - name: a--b\n      containerPort: 80\n")),
	edge("propagation-bidirectional", "Bidirectional mount propagation in an unprivileged container", "  volumes:\n  - name: v\n    hostPath:\n      path: /tmp\n", vc("c", "    volumeMounts:\n    - name: v\n      mountPath: /v\n      mountPropagation: Bidirectional\n")),
	edge("rro-not-readonly", "recursiveReadOnly Enabled on a writable mount", "  volumes:\n  - name: v\n    emptyDir: {}\n", vc("c", "    volumeMounts:\n    - name: v\n      mountPath: /v\n      recursiveReadOnly: Enabled\n")),
	edge("subpath-and-expr", "subPath and subPathExpr together", "  volumes:\n  - name: v\n    emptyDir: {}\n", vc("c", "    volumeMounts:\n    - name: v\n      mountPath: /v\n      subPath: a\n      subPathExpr: b\n")),
	edge("privileged-no-escalation", "privileged with allowPrivilegeEscalation false", "", vc("c", "    securityContext:\n      privileged: true\n      allowPrivilegeEscalation: false\n")),
	edge("sysadmin-no-escalation", "CAP_SYS_ADMIN added with allowPrivilegeEscalation false", "", vc("c", "    securityContext:\n      allowPrivilegeEscalation: false\n      capabilities:\n        add: [SYS_ADMIN]\n")),
	edge("seccomp-type-bad", "a seccomp profile type Sometimes", "", vc("c", "    securityContext:\n      seccompProfile:\n        type: Sometimes\n")),
	edge("apparmor-localhost-noprofile", "an AppArmor Localhost profile without localhostProfile", "", vc("c", "    securityContext:\n      appArmorProfile:\n        type: Localhost\n")),
	edge("tcp-probe-port-zero", "a tcpSocket readiness probe on port 0", "", vc("c", "    readinessProbe:\n      tcpSocket:\n        port: 0\n")),
	edge("http-hook-port-zero", "an httpGet preStop hook on port 0", "", vc("c", "    lifecycle:\n      preStop:\n        httpGet:\n          port: 0\n")),
	edge("tcp-hook", "a tcpSocket preStop hook (deprecated)", "", vc("c", "    lifecycle:\n      preStop:\n        tcpSocket:\n          port: 80\n")),
	edge("sidecar-onfailure", "an init container with restartPolicy OnFailure", "  initContainers:\n"+vc("i", "    restartPolicy: OnFailure\n"), vc("c", "")),
	edge("app-restart-always", "an app container with its own restartPolicy Always", "", vc("c", "    restartPolicy: Always\n")),
	edge("hostname-long", "a hostname of 64 characters", "  hostname: "+strings.Repeat("a", 64)+"\n", vc("c", "")),
	edge("affinity-operator-bad", "a node affinity term with operator Near", "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n        - matchExpressions:\n          - key: a\n            operator: Near\n            values: [b]\n", vc("c", "")),
	edge("spread-skew-zero", "a topologySpreadConstraint with maxSkew 0", "  topologySpreadConstraints:\n  - maxSkew: 0\n    topologyKey: zone\n    whenUnsatisfiable: DoNotSchedule\n", vc("c", "")),
	edge("hugepages-alone", "hugepages without a cpu or memory request", "", vc("c", "    resources:\n      requests:\n        hugepages-2Mi: 2Mi\n      limits:\n        hugepages-2Mi: 2Mi\n")),
	edge("deadline-huge", "activeDeadlineSeconds 2147483648", "  activeDeadlineSeconds: 2147483648\n", vc("c", "")),
	edgeMeta("generate-name-only", "generateName and no name", "  generateName: a-\n"),
	edgeMeta("owner-ref-no-uid", "an ownerReference without uid", "  ownerReferences:\n  - apiVersion: v1\n    kind: Node\n    name: n\n    uid: \"\"\n"),
	edgeMeta("label-key-long", "a label key of 64 characters", "  labels:\n    "+strings.Repeat("k", 64)+": v\n"),
	edgeMeta("finalizer-bad", "a finalizer that is not a qualified name", "  finalizers: [\"a b\"]\n"),
	edge("nfs-no-server", "an nfs volume without server", "  volumes:\n  - name: v\n    nfs:\n      path: /x\n", vc("c", "")),
	edge("resource-divisor-bad", "a downward-API env var of limits.cpu with divisor 3", "", vc("c", "    env:\n    - name: A\n      valueFrom:\n        resourceFieldRef:\n          resource: limits.cpu\n          divisor: \"3\"\n")),
	edge("env-configmap-nokey", "an env var from a configMap key without key (optional)", "", vc("c", "    env:\n    - name: A\n      valueFrom:\n        configMapKeyRef:\n          name: x\n          optional: true\n")),
	edge("term-path-relative", "a relative terminationMessagePath", "", vc("c", "    terminationMessagePath: log\n")),
	edge("stdin-once-alone", "stdinOnce without stdin", "", vc("c", "    stdinOnce: true\n")),
	edge("priority-without-class", "a priority without a priorityClassName", "  priority: 5\n", vc("c", "")),
	edge("scheduling-gate", "a schedulingGate", "  schedulingGates:\n  - name: example.com/wait\n", vc("c", "")),
	edge("fqdn-too-long", "setHostnameAsFQDN with a hostname and subdomain too long together", "  hostname: "+strings.Repeat("h", 40)+"\n  subdomain: "+strings.Repeat("s", 40)+"\n  setHostnameAsFQDN: true\n", vc("c", "")),
	// A third batch.
	edge("container-name-upper", "a container name with capitals", "", vc("C", "")),
	edge("fieldref-version-bad", "a fieldRef with apiVersion v2", "", vc("c", "    env:\n    - name: A\n      valueFrom:\n        fieldRef:\n          apiVersion: v2\n          fieldPath: metadata.name\n")),
	edge("fieldref-label-key-bad", "a fieldRef of a label whose key is invalid", "", vc("c", "    env:\n    - name: A\n      valueFrom:\n        fieldRef:\n          fieldPath: metadata.labels['a b']\n")),
	edge("envfrom-two-sources", "an envFrom entry with a configMapRef and a secretRef", "", vc("c", "    envFrom:\n    - configMapRef:\n        name: a\n        optional: true\n      secretRef:\n        name: b\n        optional: true\n")),
	edge("http-header-bad", "an httpGet probe header whose name has a space", "", vc("c", "    readinessProbe:\n      httpGet:\n        port: 80\n        httpHeaders:\n        - name: \"a b\"\n          value: x\n")),
	edge("stop-signal", "lifecycle.stopSignal SIGUSR1 on a pod without os.name", "", vc("c", "    lifecycle:\n      stopSignal: SIGUSR1\n")),
	edge("stop-signal-linux", "lifecycle.stopSignal SIGUSR1 with os.name linux", "  os:\n    name: linux\n", vc("c", "    lifecycle:\n      stopSignal: SIGUSR1\n")),
	edge("restart-rule-action-bad", "a restartPolicyRules action Sometimes", "", vc("c", "    restartPolicy: Never\n    restartPolicyRules:\n    - action: Sometimes\n      exitCodes:\n        operator: In\n        values: [1]\n")),
	edge("sysctl-name-bad", "a sysctl name that is not one", "  securityContext:\n    sysctls:\n    - name: \"foo bar\"\n      value: \"1\"\n", vc("c", "")),
	edge("windows-options-linux", "windowsOptions in a pod with os.name linux", "  os:\n    name: linux\n", vc("c", "    securityContext:\n      windowsOptions:\n        runAsUserName: a\n")),
	edge("hostusers-privileged", "hostUsers false with a privileged container", "  hostUsers: false\n", vc("c", "    securityContext:\n      privileged: true\n")),
	edge("ephemeral-volume", "a generic ephemeral volume", "  volumes:\n  - name: e\n    ephemeral:\n      volumeClaimTemplate:\n        spec:\n          accessModes: [ReadWriteOnce]\n          resources:\n            requests:\n              storage: 1Gi\n", vc("c", "")),
	edge("pvc-volume", "a persistentVolumeClaim volume", "  volumes:\n  - name: p\n    persistentVolumeClaim:\n      claimName: data\n", vc("c", "")),
	edge("csi-inline", "an inline CSI volume", "  volumes:\n  - name: s\n    csi:\n      driver: example.csi.k8s.io\n", vc("c", "")),
	edge("gitrepo-volume", "a gitRepo volume", "  volumes:\n  - name: g\n    gitRepo:\n      repository: https://example.com/r.git\n", vc("c", "")),
	edge("hostnet-hostport-mismatch", "hostNetwork with a hostPort unlike its containerPort", "  hostNetwork: true\n", vc("c", "    ports:\n    - containerPort: 18082\n      hostPort: 18083\n")),
	edge("overhead", "spec.overhead without a RuntimeClass", "  overhead:\n    cpu: 10m\n", vc("c", "")),
	edge("cpu-micro", "a cpu request of 100u", "", vc("c", "    resources:\n      requests:\n        cpu: 100u\n")),
	edge("protocol-lower", "a port protocol tcp (lower case)", "", vc("c", "    ports:\n    - containerPort: 80\n      protocol: tcp\n")),
	edge("term-path-long", "a terminationMessagePath of 5000 characters", "", vc("c", "    terminationMessagePath: /"+strings.Repeat("t", 5000)+"\n")),
	edge("dns-search-underscore", "a dnsConfig search domain with an underscore", "  dnsConfig:\n    searches: [a_b.example]\n", vc("c", "")),
	edge("hostalias-hostname-bad", "a hostAlias hostname with a space", "  hostAliases:\n  - ip: 10.0.0.1\n    hostnames: [\"a b\"]\n", vc("c", "")),
	edge("secret-mode-bad", "a projected volume with defaultMode 01000", "  volumes:\n  - name: v\n    projected:\n      defaultMode: 512\n      sources:\n      - downwardAPI:\n          items:\n          - path: pname\n            fieldRef:\n              fieldPath: metadata.name\n", vc("c", "")),
	edge("emptydir-hugepages", "an emptyDir of medium HugePages without hugepages requested", "  volumes:\n  - name: v\n    emptyDir:\n      medium: HugePages\n", vc("c", "")),
	edge("image-volume-subpath", "an image volume mounted with a subPath", "  volumes:\n  - name: i\n    image:\n      reference: busybox\n      pullPolicy: IfNotPresent\n", vc("c", "    volumeMounts:\n    - name: i\n      mountPath: /i\n      subPath: bin\n")),
	edge("probe-negative-delay", "a startup probe with initialDelaySeconds -1", "", vc("c", "    startupProbe:\n      initialDelaySeconds: -1\n      exec:\n        command: [\"true\"]\n")),
	edge("sidecar-startup-success-2", "a sidecar's startup probe with successThreshold 2", "  initContainers:\n"+vc("s", "    restartPolicy: Always\n    startupProbe:\n      successThreshold: 2\n      exec:\n        command: [\"true\"]\n"), vc("c", "")),
	edge("sidecar-readiness-success-2", "a sidecar's readiness probe with successThreshold 2", "  initContainers:\n"+vc("s", "    restartPolicy: Always\n    readinessProbe:\n      successThreshold: 2\n      exec:\n        command: [\"true\"]\n"), vc("c", "")),
	edge("grpc-service-long", "a grpc probe (port 80, service of 300 characters)", "", vc("c", "    readinessProbe:\n      grpc:\n        port: 80\n        service: "+strings.Repeat("s", 300)+"\n")),
	edge("two-sidecars-one-name", "an init container and a sidecar of one name", "  initContainers:\n"+vc("s", "    restartPolicy: Always\n")+vc("s", ""), vc("c", "")),
	edge("resize-restart-bad", "a resizePolicy with restartPolicy Sometimes", "", vc("c", "    resizePolicy:\n    - resourceName: cpu\n      restartPolicy: Sometimes\n")),
	// A fourth batch.
	edgeMeta("label-value-long", "a label value of 64 characters", "  labels:\n    a: "+strings.Repeat("v", 64)+"\n"),
	edgeMeta("annotations-huge", "annotations of more than 256 KiB", "  annotations:\n    a: "+strings.Repeat("x", 262145)+"\n"),
	edge("dup-containerport", "two ports of one number and protocol in one container", "", vc("c", "    ports:\n    - containerPort: 80\n    - containerPort: 80\n")),
	edge("http-scheme-lower", "an httpGet probe with scheme http (lower case)", "", vc("c", "    readinessProbe:\n      httpGet:\n        port: 80\n        scheme: http\n")),
	edge("readiness-grace-zero", "a readiness probe with terminationGracePeriodSeconds 0", "", vc("c", "    readinessProbe:\n      terminationGracePeriodSeconds: 0\n      exec:\n        command: [\"true\"]\n")),
	edge("sa-token-volume", "a projected serviceAccountToken volume", "  volumes:\n  - name: t\n    projected:\n      sources:\n      - serviceAccountToken:\n          path: token\n", vc("c", "")),
	edge("downward-volume-podip", "a downwardAPI volume of status.podIP", "  volumes:\n  - name: v\n    downwardAPI:\n      items:\n      - path: ip\n        fieldRef:\n          fieldPath: status.podIP\n", vc("c", "")),
	edge("downward-volume-nocontainer", "a downwardAPI volume of limits.cpu without containerName", "  volumes:\n  - name: v\n    downwardAPI:\n      items:\n      - path: cpu\n        resourceFieldRef:\n          resource: limits.cpu\n", vc("c", "")),
	edge("image-space", "an image with a leading space", "", "  - name: c\n    image: \" busybox\"\n    imagePullPolicy: IfNotPresent\n    command: [\"sleep\", \"3600\"]\n"),
	edge("spread-mindomains-anyway", "a topologySpreadConstraint with minDomains and ScheduleAnyway", "  topologySpreadConstraints:\n  - maxSkew: 1\n    minDomains: 2\n    topologyKey: zone\n    whenUnsatisfiable: ScheduleAnyway\n", vc("c", "")),
	edge("toleration-effect-bad", "a toleration with effect Sometimes", "  tolerations:\n  - key: k\n    operator: Exists\n    effect: Sometimes\n", vc("c", "")),
	edge("pod-affinity-selector-bad", "a podAffinity term whose selector has operator Near", "  affinity:\n    podAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n      - topologyKey: zone\n        labelSelector:\n          matchExpressions:\n          - key: a\n            operator: Near\n            values: [b]\n", vc("c", "")),
	edge("pod-affinity-no-topology", "a podAntiAffinity term without topologyKey", "  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n      - labelSelector:\n          matchLabels:\n            a: b\n", vc("c", "")),
	edge("affinity-weight-zero", "a preferred node affinity term of weight 0", "  affinity:\n    nodeAffinity:\n      preferredDuringSchedulingIgnoredDuringExecution:\n      - weight: 0\n        preference:\n          matchExpressions:\n          - key: a\n            operator: Exists\n", vc("c", "")),
	edge("exit-code-300", "a restartPolicyRules exit code of 300", "", vc("c", "    restartPolicy: Never\n    restartPolicyRules:\n    - action: Restart\n      exitCodes:\n        operator: In\n        values: [300]\n")),
	edge("sidecar-restart-rules", "a sidecar with restartPolicyRules", "  initContainers:\n"+vc("s", "    restartPolicy: Always\n    restartPolicyRules:\n    - action: Restart\n      exitCodes:\n        operator: In\n        values: [1]\n"), vc("c", "")),
	edge("selinux-type-odd", "seLinuxOptions with a type only", "", vc("c", "    securityContext:\n      seLinuxOptions:\n        type: spc_t\n")),
	edge("hostpath-type-socket-missing", "a hostPath of type Socket that does not exist", "  volumes:\n  - name: v\n    hostPath:\n      path: /tmp/no-such-socket-here\n      type: Socket\n", vc("c", "    volumeMounts:\n    - name: v\n      mountPath: /s\n")),
	edge("mountpath-colon", "a mountPath with a colon", "  volumes:\n  - name: a\n    emptyDir: {}\n", vc("c", "    volumeMounts:\n    - name: a\n      mountPath: /a:b\n")),
	edge("env-fileref", "an env var from a file key (fileKeyRef)", "  volumes:\n  - name: cfg\n    emptyDir: {}\n", vc("c", "    env:\n    - name: A\n      valueFrom:\n        fileKeyRef:\n          volumeName: cfg\n          path: a.env\n          key: A\n          optional: true\n")),
	edge("port-count-huge-range", "a hostPort of 0 with a hostIP", "", vc("c", "    ports:\n    - containerPort: 80\n      hostIP: 127.0.0.1\n")),
	edge("container-name-long", "a container name of 64 characters", "", vc(strings.Repeat("c", 64), "")),
	// A fifth batch.
	edge("runasuser-huge", "runAsUser 2147483648", "", vc("c", "    securityContext:\n      runAsUser: 2147483648\n")),
	edge("fsgroup-huge", "fsGroup 2147483648", "  securityContext:\n    fsGroup: 2147483648\n", vc("c", "")),
	edge("hostname-dot", "a hostname with a dot", "  hostname: a.b\n", vc("c", "")),
	edgeMeta("label-prefix-long", "a label key whose prefix is 254 characters", "  labels:\n    "+strings.Repeat("p", 254)+"/k: v\n"),
	edge("projected-dup-paths", "a projected volume with one path from two sources", "  volumes:\n  - name: v\n    projected:\n      sources:\n      - downwardAPI:\n          items:\n          - path: x\n            fieldRef:\n              fieldPath: metadata.name\n      - downwardAPI:\n          items:\n          - path: x\n            fieldRef:\n              fieldPath: metadata.namespace\n", vc("c", "")),
	edge("downward-dup-paths", "a downwardAPI volume with one path twice", "  volumes:\n  - name: v\n    downwardAPI:\n      items:\n      - path: x\n        fieldRef:\n          fieldPath: metadata.name\n      - path: x\n        fieldRef:\n          fieldPath: metadata.namespace\n", vc("c", "")),
	edge("hostnet-port-no-hostport", "hostNetwork and a containerPort without hostPort", "  hostNetwork: true\n", vc("c", "    ports:\n    - containerPort: 18084\n")),
	edge("probe-period-zero-startup", "a startup probe with failureThreshold 0 (defaulted)", "", vc("c", "    startupProbe:\n      failureThreshold: 0\n      exec:\n        command: [\"true\"]\n")),
	edge("supplemental-huge", "a supplemental group 2147483648", "  securityContext:\n    supplementalGroups: [2147483648]\n", vc("c", "")),
	edge("image-digest-and-tag", "an image with a tag and a digest that does not resolve", "", "  - name: c\n    image: busybox:latest@sha256:0000000000000000000000000000000000000000000000000000000000000000\n    imagePullPolicy: IfNotPresent\n    command: [\"sleep\", \"3600\"]\n"),
	edge("mountpath-dotdot", "a mountPath with '..'", "  volumes:\n  - name: a\n    emptyDir: {}\n", vc("c", "    volumeMounts:\n    - name: a\n      mountPath: /x/../y\n")),
	edge("two-hostports-udp-tcp", "one hostPort for TCP in one container and UDP in another", "", vc("a", "    ports:\n    - containerPort: 80\n      hostPort: 18085\n"), vc("b", "    ports:\n    - containerPort: 80\n      hostPort: 18085\n      protocol: UDP\n")),
	edge("init-hostport-dup", "an init container and an app container with one hostPort", "  initContainers:\n"+vc("i", "    ports:\n    - containerPort: 80\n      hostPort: 18086\n"), vc("c", "    ports:\n    - containerPort: 81\n      hostPort: 18086\n")),
}

func init() { scenarios = append(scenarios, edgeScenarios...) }
