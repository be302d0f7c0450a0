package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkeeper/podkeeper/internal/testenv"
)

// scenario is one manifest run under both podkeeper and the kubelet; its status is compared
// after the same wait.
type scenario struct {
	name, what, spec string
}

func sh(name, script string) string {
	return fmt.Sprintf("  - name: %s\n    image: busybox\n    imagePullPolicy: IfNotPresent\n    command: [\"sh\", \"-c\", %q]\n", name, script)
}

func podDoc(name, policy, extra string, containers ...string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\nspec:\n  restartPolicy: %s\n  terminationGracePeriodSeconds: 2\n%s  containers:\n%s", name, policy, extra, strings.Join(containers, ""))
}

// conformanceBatch is the most scenarios run at once (see runConformance).
const conformanceBatch = 24

var scenarios = []scenario{
	{"running", "a sleeper, restartPolicy Always", podDoc("cf-running", "Always", "", sh("c", sleeper))},
	{"succeeded", "exit 0 under Never", podDoc("cf-succeeded", "Never", "", sh("c", "exit 0"))},
	{"failed", "exit 3 under Never", podDoc("cf-failed", "Never", "", sh("c", "exit 3"))},
	{"onfailure-ok", "exit 0 under OnFailure", podDoc("cf-onfailure", "OnFailure", "", sh("c", "exit 0"))},
	{"crashloop", "exit 1 under Always (CrashLoopBackOff)", podDoc("cf-crash", "Always", "", sh("c", "exit 1"))},
	{"init", "an init container (exit 0), then a sleeper", podDoc("cf-init", "Always", "  initContainers:\n"+sh("init", "exit 0"), sh("c", sleeper))},
	{"two", "two containers, one exits 0 under Always", podDoc("cf-two", "Always", "", sh("a", sleeper), sh("b", "exit 0"))},
	{"missing-image", "an image that is not on the node and cannot be pulled", podDoc("cf-noimage", "Always", "", "  - name: c\n    image: 127.0.0.1:1/nope:1\n    imagePullPolicy: IfNotPresent\n")},
	{"bad-command", "a command that does not exist, under Never", podDoc("cf-badcmd", "Never", "", "  - name: c\n    image: busybox\n    imagePullPolicy: IfNotPresent\n    command: [\"/no/such/binary\"]\n")},
	{"sidecar", "a native sidecar (init container with restartPolicy Always), then an app", podDoc("cf-sidecar", "Always", "  initContainers:\n"+sh("side", sleeper)+"    restartPolicy: Always\n", sh("c", sleeper))},
	{"readiness-fails", "an exec readiness probe that always fails", podDoc("cf-notready", "Always", "", sh("c", sleeper)+probe("readinessProbe", "exit 1"))},
	{"liveness-fails", "an exec liveness probe that always fails (restarts)", podDoc("cf-liveness", "Always", "", sh("c", sleeper)+probe("livenessProbe", "exit 1"))},
	{"guaranteed", "requests = limits (QoS Guaranteed)", podDoc("cf-guaranteed", "Always", "", sh("c", sleeper)+resources("100m", "64Mi", "100m", "64Mi"))},
	{"burstable", "requests only (QoS Burstable)", podDoc("cf-burstable", "Always", "", sh("c", sleeper)+resources("50m", "32Mi", "", ""))},
	{"oomkilled", "a 24Mi memory limit and a shell that allocates more, under Never", podDoc("cf-oom", "Never", "", sh("c", "head -c 128m /dev/zero | tail")+resources("", "24Mi", "", "24Mi"))},
	{"init-resources", "an init container asking more than the app (pod requests = the init's)", podDoc("cf-initres", "Always", "  initContainers:\n"+sh("init", "exit 0")+resources("300m", "48Mi", "", ""), sh("c", sleeper)+resources("100m", "16Mi", "", "32Mi"))},
	{"pod-level-limits", "pod-level limits only (spec.resources), a container without resources", podDoc("cf-podlim", "Always", "  resources:\n    limits:\n      cpu: 500m\n      memory: 64Mi\n", sh("c", sleeper))},
	{"pod-level-equal", "pod-level requests = limits, a container with a smaller limit", podDoc("cf-podeq", "Always", "  resources:\n    requests:\n      cpu: 200m\n      memory: 64Mi\n    limits:\n      cpu: 200m\n      memory: 64Mi\n", sh("c", sleeper)+resources("", "", "100m", "32Mi"))},
	{"pod-level-requests", "pod-level requests only", podDoc("cf-podreq", "Always", "  resources:\n    requests:\n      cpu: 100m\n      memory: 32Mi\n", sh("c", sleeper))},
	{"rule-restart", "restartPolicy Never, a container rule Restart on exit code 42, exit 42 (ContainerRestartRules)", podDoc("cf-rule", "Never", "", sh("c", "sleep 1; exit 42")+
		"    restartPolicy: Never\n    restartPolicyRules:\n    - action: Restart\n      exitCodes:\n        operator: In\n        values: [42]\n")},
	{"restart-all", "an init container, a sleeper and a container whose rule RestartAllContainers on exit 42 fires once (an emptyDir marks it): the pod restarts in place", podDoc("cf-restartall", "Always",
		"  volumes:\n  - name: d\n    emptyDir: {}\n  initContainers:\n"+sh("init", "exit 0"),
		sh("a", sleeper), sh("b", "if [ -f /d/done ]; then "+sleeper+"; fi; touch /d/done; sleep 3; exit 42")+
			"    volumeMounts:\n    - name: d\n      mountPath: /d\n    restartPolicy: Never\n    restartPolicyRules:\n    - action: RestartAllContainers\n      exitCodes:\n        operator: In\n        values: [42]\n")},
	{"env-file", "an init container writes KEY='value' lines to an emptyDir, the app's env reads one (fileKeyRef, EnvFiles)", envFilePod("cf-envfile", "GREETING")},
	{"env-file-missing", "the same with a key the file lacks (CreateContainerConfigError)", envFilePod("cf-envmissing", "ABSENT")},
	{"container-onfailure", "restartPolicy Never, the container's own OnFailure, exit 1", podDoc("cf-ctronfail", "Never", "", sh("c", "sleep 1; exit 1")+"    restartPolicy: OnFailure\n")},
	{"container-never", "restartPolicy Always, the container's own Never, exit 3", podDoc("cf-ctrnever", "Always", "", sh("c", "exit 3")+"    restartPolicy: Never\n")},
	{"hostnetwork", "hostNetwork: true", podDoc("cf-hostnet", "Always", "  hostNetwork: true\n", sh("c", sleeper))},
	{"startup-probe", "an exec startup probe that passes after about 3 s", podDoc("cf-startup", "Always", "", sh("c", "sleep 3; touch /tmp/started; "+sleeper)+
		"    startupProbe:\n      exec:\n        command: [\"cat\", \"/tmp/started\"]\n      periodSeconds: 1\n      failureThreshold: 30\n")},
	{"http-ready", "busybox httpd in the pod network, an httpGet readiness probe of / by a named port", podDoc("cf-http", "Always", "", sh("c", webServer)+
		"    ports:\n    - name: web\n      containerPort: 8080\n"+netProbe("readinessProbe", "httpGet:\n        path: /\n        port: web"))},
	{"http-404", "the same httpd, an httpGet readiness probe of a path it does not have (404)", podDoc("cf-http404", "Always", "", sh("c", webServer)+
		netProbe("readinessProbe", "httpGet:\n        path: /missing\n        port: 8080"))},
	{"tcp-ready", "the same httpd, a tcpSocket readiness probe of its port", podDoc("cf-tcp", "Always", "", sh("c", webServer)+
		netProbe("readinessProbe", "tcpSocket:\n        port: 8080"))},
	{"tcp-refused", "the same httpd, a tcpSocket readiness probe of a port nothing listens on", podDoc("cf-tcprefused", "Always", "", sh("c", webServer)+
		netProbe("readinessProbe", "tcpSocket:\n        port: 8081"))},
	{"grpc-serving", "a gRPC health server (pkbench's, from a hostPath volume), a grpc readiness probe of its SERVING service", grpcPod("cf-grpc", "")},
	{"grpc-not-serving", "the same server, a grpc readiness probe of its NOT_SERVING service", grpcPod("cf-grpcdown", "db")},
	{"active-deadline", "activeDeadlineSeconds: 5 on a sleeper under Always", podDoc("cf-deadline", "Always", "  activeDeadlineSeconds: 5\n", sh("c", sleeper))},
	{"readiness-gate", "a readiness gate nobody sets (no API server)", podDoc("cf-gate", "Always", "  readinessGates:\n  - conditionType: example.com/lb\n", sh("c", sleeper))},
	{"host-users-false", "hostUsers: false (a user namespace; containerd 1.6 has none)", podDoc("cf-userns", "Always", "  hostUsers: false\n", sh("c", sleeper))},
	{"apparmor", "appArmorProfile RuntimeDefault on a host without AppArmor", podDoc("cf-apparmor", "Always", "  securityContext:\n    appArmorProfile:\n      type: RuntimeDefault\n", sh("c", sleeper))},
	{"init-fails-never", "an init container that exits 1, under Never", podDoc("cf-initfail", "Never", "  initContainers:\n"+sh("init", "exit 1"), sh("c", sleeper))},
	{"init-fails-always", "an init container that exits 1, under Always (Init:CrashLoopBackOff)", podDoc("cf-initloop", "Always", "  initContainers:\n"+sh("init", "exit 1"), sh("c", sleeper))},
	{"sidecar-crash", "a native sidecar that exits 1 after 2 s, beside an app", podDoc("cf-sidecrash", "Always", "  initContainers:\n"+sh("side", "sleep 2; exit 1")+"    restartPolicy: Always\n", sh("c", sleeper))},
	{"termination-message", "a termination message file, exit 2 under Never", podDoc("cf-termmsg", "Never", "", sh("c", "echo -n goodbye > /dev/termination-log; exit 2"))},
	{"fallback-logs", "FallbackToLogsOnError, exit 1 under Never", podDoc("cf-fallback", "Never", "", sh("c", "echo first; echo last words; exit 1")+"    terminationMessagePolicy: FallbackToLogsOnError\n")},
	{"invalid-image", "an image reference that does not parse", podDoc("cf-badimage", "Always", "", "  - name: c\n    image: \"busybox:Not A Tag\"\n")},
	{"never-pull-missing", "imagePullPolicy Never for an image not on the node", podDoc("cf-neverpull", "Always", "", "  - name: c\n    image: example.com/absent:1\n    imagePullPolicy: Never\n")},
	{"run-as-non-root", "runAsNonRoot with an image that runs as root", podDoc("cf-nonroot", "Always", "", sh("c", sleeper)+"    securityContext:\n      runAsNonRoot: true\n")},
	{"exec-timeout", "an exec readiness probe that outlives its 1 s timeout", podDoc("cf-exectimeout", "Always", "", sh("c", sleeper)+
		"    readinessProbe:\n      exec:\n        command: [\"sleep\", \"5\"]\n      timeoutSeconds: 1\n      periodSeconds: 2\n")},
	{"never-mixed", "two containers under Never, one exits 0 and one exits 1", podDoc("cf-nevermixed", "Never", "", sh("a", "exit 0"), sh("b", "sleep 1; exit 1"))},
	{"onfailure-fails", "exit 1 under OnFailure (restarts with back-off)", podDoc("cf-onfailfail", "OnFailure", "", sh("c", "exit 1"))},
	{"poststart-fails", "a postStart hook that exits 1 (the container is killed)", podDoc("cf-poststart", "Always", "", sh("c", sleeper)+
		"    lifecycle:\n      postStart:\n        exec:\n          command: [\"sh\", \"-c\", \"exit 1\"]\n")},
	{"startup-fails", "a startup probe that never passes (failureThreshold 2: killed, restarted)", podDoc("cf-startupfail", "Always", "", sh("c", sleeper)+
		"    startupProbe:\n      exec:\n        command: [\"sh\", \"-c\", \"exit 1\"]\n      periodSeconds: 1\n      failureThreshold: 2\n")},
	{"grpc-liveness", "the same server, a grpc liveness probe of its NOT_SERVING service (restarts)", grpcPod("cf-grpclive", "db", "livenessProbe")},
	{"sidecar-not-ready", "a native sidecar whose exec readiness probe always fails, beside an app", podDoc("cf-sidenotready", "Always", "  initContainers:\n"+sh("side", sleeper)+"    restartPolicy: Always\n"+probe("readinessProbe", "exit 1"), sh("c", sleeper))},
	{"sidecar-startup", "a native sidecar with a startup probe that passes after about 3 s (the app starts after it)", podDoc("cf-sidestartup", "Always", "  initContainers:\n"+sh("side", "sleep 3; touch /tmp/started; "+sleeper)+"    restartPolicy: Always\n"+
		"    startupProbe:\n      exec:\n        command: [\"cat\", \"/tmp/started\"]\n      periodSeconds: 1\n      failureThreshold: 30\n", sh("c", sleeper))},
	{"sidecar-job", "restartPolicy Never, a native sidecar that ignores SIGTERM and an app that exits 0 after 2 s (the sidecar is stopped)", podDoc("cf-sidejob", "Never", "  initContainers:\n"+sh("side", "sleep 3600")+"    restartPolicy: Always\n", sh("c", "sleep 2; exit 0"))},
	{"oom-always", "a 24Mi memory limit and a shell that allocates more, under Always (restarts)", podDoc("cf-oomloop", "Always", "", sh("c", "head -c 128m /dev/zero | tail")+resources("", "24Mi", "", "24Mi"))},
	{"init-second-fails", "two init containers under Never, the second exits 1", podDoc("cf-init2", "Never", "  initContainers:\n"+sh("one", "exit 0")+sh("two", "exit 1"), sh("c", sleeper))},
	{"deadline-init", "activeDeadlineSeconds: 3 while an init container still runs", podDoc("cf-deadlineinit", "Always", "  activeDeadlineSeconds: 3\n  initContainers:\n"+sh("init", sleeper), sh("c", sleeper))},
	{"hostpath-missing", "a hostPath volume of type File whose file does not exist", podDoc("cf-hostpathmissing", "Always", "  volumes:\n  - name: h\n    hostPath:\n      path: /nonexistent/podkeeper-conformance\n      type: File\n",
		sh("c", sleeper)+"    volumeMounts:\n    - name: h\n      mountPath: /h\n")},
	{"run-as-uid-0", "runAsNonRoot with runAsUser: 0", podDoc("cf-rootuid", "Always", "", sh("c", sleeper)+"    securityContext:\n      runAsNonRoot: true\n      runAsUser: 0\n")},
	{"not-executable", "a command that is a directory (not executable), under Never", podDoc("cf-noexec", "Never", "", "  - name: c\n    image: busybox\n    imagePullPolicy: IfNotPresent\n    command: [\"/bin\"]\n")},
	{"termination-message-path", "a termination message at a custom path, exit 2 under Never", podDoc("cf-termpath", "Never", "", sh("c", "echo -n custom > /tmp/msg; exit 2")+"    terminationMessagePath: /tmp/msg\n")},
	{"node-selector-mismatch", "a nodeSelector no label of the node matches (rejected at admission)", podDoc("cf-nodesel", "Always", "  nodeSelector:\n    disktype: ssd\n", sh("c", sleeper))},
	{"request-too-big", "a memory request larger than the node (rejected at admission: OutOfmemory)", podDoc("cf-toobig", "Always", "", sh("c", sleeper)+resources("", "100Ti", "", ""))},
	{"os-windows", "spec.os.name windows on a Linux node (rejected at admission)", podDoc("cf-oswin", "Always", "  os:\n    name: windows\n", sh("c", sleeper))},
	{"unsafe-sysctl", "an unsafe sysctl (kernel.msgmax) the node does not allow (rejected: SysctlForbidden)", podDoc("cf-sysctl", "Always", "  securityContext:\n    sysctls:\n    - name: kernel.msgmax\n      value: \"65536\"\n", sh("c", sleeper))},
	{"seccomp-missing", "a Localhost seccomp profile that does not exist on the node", podDoc("cf-seccomp", "Always", "", sh("c", sleeper)+"    securityContext:\n      seccompProfile:\n        type: Localhost\n        localhostProfile: profiles/absent.json\n")},
	{"ephemeral-limit", "a container that writes 3 MiB against a 1Mi ephemeral-storage limit (evicted)", podDoc("cf-ephlimit", "Always", "", sh("c", "dd if=/dev/zero of=/big bs=1k count=3072 2>/dev/null; sync; "+sleeper)+
		"    resources:\n      limits:\n        ephemeral-storage: 1Mi\n")},
	{"liveness-ignores-term", "an exec liveness probe that fails after 3 s, a container that ignores SIGTERM (grace 2 s: killed)", podDoc("cf-liveterm", "Always", "", sh("c", "trap '' TERM; touch /tmp/ok; (sleep 3; rm /tmp/ok) & while true; do sleep 1; done")+
		netProbe("livenessProbe", "exec:\n        command: [\"cat\", \"/tmp/ok\"]\n      initialDelaySeconds: 1"))},
	{"probe-grace", "the same with the probe's own terminationGracePeriodSeconds: 1 (and the pod's 30)", strings.Replace(podDoc("cf-probegrace", "Always", "", sh("c", "trap '' TERM; touch /tmp/ok; (sleep 3; rm /tmp/ok) & while true; do sleep 1; done")+
		netProbe("livenessProbe", "exec:\n        command: [\"cat\", \"/tmp/ok\"]\n      initialDelaySeconds: 1\n      terminationGracePeriodSeconds: 1")), "terminationGracePeriodSeconds: 2\n", "terminationGracePeriodSeconds: 30\n", 1)},
	{"exec-liveness-timeout", "an exec liveness probe that outlives its 1 s timeout (a failure: restarts)", podDoc("cf-livetimeout", "Always", "", sh("c", sleeper)+
		"    livenessProbe:\n      exec:\n        command: [\"sleep\", \"5\"]\n      timeoutSeconds: 1\n      periodSeconds: 2\n      failureThreshold: 1\n")},
	{"readiness-late", "an exec readiness probe that passes from about 4 s on", podDoc("cf-readylate", "Always", "", sh("c", "(sleep 4; touch /tmp/ready) & "+sleeper)+probe("readinessProbe", "cat /tmp/ready"))},
	{"http-liveness-ok", "busybox httpd and an httpGet liveness probe of it with a Host header (stays running)", podDoc("cf-httplive", "Always", "", sh("c", webServer)+
		netProbe("livenessProbe", "httpGet:\n        path: /\n        port: 8080\n        httpHeaders:\n        - name: Host\n          value: example.com\n      initialDelaySeconds: 1"))},
	{"sidecar-startup-fails", "a native sidecar whose startup probe never passes (failureThreshold 2: killed, restarted; the app never starts)", podDoc("cf-sidestartfail", "Always", "  initContainers:\n"+sh("side", sleeper)+"    restartPolicy: Always\n"+
		"    startupProbe:\n      exec:\n        command: [\"sh\", \"-c\", \"exit 1\"]\n      periodSeconds: 1\n      failureThreshold: 2\n", sh("c", sleeper))},
	{"command-not-in-path", "a command looked up in PATH that does not exist, under Never", podDoc("cf-nocmd", "Never", "", "  - name: c\n    image: busybox\n    imagePullPolicy: IfNotPresent\n    command: [\"no-such-command\"]\n")},
	{"env-expansion", "$(CODE) in the command expanded from the container's env, exit with it under Never", podDoc("cf-envexp", "Never", "", sh("c", "exit $(CODE)")+"    env:\n    - name: CODE\n      value: \"7\"\n")},
	{"workdir-missing", "a workingDir that does not exist in the image (made by the runtime)", podDoc("cf-workdir", "Always", "", sh("c", sleeper)+"    workingDir: /no/such/dir\n")},
	{"sidecar-exit0-never", "restartPolicy Never, a native sidecar that exits 0 after 2 s beside a long app (the sidecar is restarted)", podDoc("cf-sideexit0", "Never", "  initContainers:\n"+sh("side", "sleep 2; exit 0")+"    restartPolicy: Always\n", sh("c", sleeper))},
	{"hostpath-create", "a hostPath volume of type DirectoryOrCreate that does not exist yet", podDoc("cf-hostcreate", "Always", "  volumes:\n  - name: h\n    hostPath:\n      path: "+hostCreateDir+"/x\n      type: DirectoryOrCreate\n",
		sh("c", sleeper)+"    volumeMounts:\n    - name: h\n      mountPath: /h\n")},
	{"readonly-rootfs", "readOnlyRootFilesystem, a write to / that fails, exit with its status under Never", podDoc("cf-rorootfs", "Never", "", sh("c", "touch /x")+"    securityContext:\n      readOnlyRootFilesystem: true\n")},
	// What a container sees inside (its termination message carries it), compared as the kubelet's
	// users would notice a move: environment, identity, capabilities, limits, files it is given.
	{"inside-env", "what a default container sees: its environment, hostname, working directory, umask and id (printed to its termination message)", podDoc("cf-inenv", "Never", "", sh("c", "{ env | sort; hostname; pwd; umask; id; } > /dev/termination-log; sleep 2"))},
	{"inside-caps", "a default container's capabilities, no_new_privs and seccomp mode", podDoc("cf-incaps", "Never", "", sh("c", insideCaps))},
	{"inside-caps-changed", "capabilities added (NET_ADMIN, SYS_TIME) and dropped (CHOWN, NET_RAW), allowPrivilegeEscalation false", podDoc("cf-incapsch", "Never", "", sh("c", insideCaps)+
		"    securityContext:\n      allowPrivilegeEscalation: false\n      capabilities:\n        add: [NET_ADMIN, SYS_TIME]\n        drop: [CHOWN, NET_RAW]\n")},
	{"inside-caps-drop-all", "capabilities drop ALL, add NET_BIND_SERVICE, run as user 1000", podDoc("cf-incapsall", "Never", "", sh("c", "{ grep -E '^(Cap|NoNewPrivs)' /proc/self/status; id; } > /dev/termination-log; sleep 2")+
		"    securityContext:\n      runAsUser: 1000\n      capabilities:\n        drop: [ALL]\n        add: [NET_BIND_SERVICE]\n")},
	{"inside-privileged", "a privileged container: capabilities, seccomp, and whether it sees the host's devices and writable /sys", podDoc("cf-inpriv", "Never", "", sh("c", "{ grep -E '^(Cap|NoNewPrivs|Seccomp)' /proc/self/status; ls -d /dev/kmsg /dev/mem 2>&1; grep -E ' /sys | /proc/sys ' /proc/self/mounts | cut -d' ' -f2-4; } > /dev/termination-log; sleep 2")+
		"    securityContext:\n      privileged: true\n")},
	{"inside-groups", "runAsUser 1000, runAsGroup 2000, supplementalGroups [3000], fsGroup 4000: its id, and the owner and mode of an emptyDir and of a file made in it", podDoc("cf-ingroups", "Never",
		"  securityContext:\n    runAsUser: 1000\n    runAsGroup: 2000\n    supplementalGroups: [3000]\n    fsGroup: 4000\n  volumes:\n  - name: v\n    emptyDir: {}\n",
		sh("c", "{ id; stat -c '%u %g %a' /v; touch /v/f; stat -c '%u %g %a' /v/f; grep -E '^CapEff' /proc/self/status; } > /dev/termination-log; sleep 2")+"    volumeMounts:\n    - name: v\n      mountPath: /v\n")},
	{"inside-rlimits", "a default container's resource limits (ulimit -a)", podDoc("cf-inrlim", "Never", "", sh("c", "ulimit -a > /dev/termination-log; sleep 2"))},
	{"inside-files", "a default container's /etc/hosts (addresses masked), /etc/resolv.conf and /etc/hostname", podDoc("cf-infiles", "Never", "", sh("c", "{ sed -E 's/[0-9]+([.][0-9]+){3}/IP/g; s/[0-9a-f]*:[0-9a-f:]+/IP6/g' /etc/hosts; echo ---; cat /etc/resolv.conf; echo ---; cat /etc/hostname; } > /dev/termination-log; sleep 2"))},
	{"inside-files-hostnet", "the same files in a hostNetwork pod", podDoc("cf-infileshost", "Never", "  hostNetwork: true\n", sh("c", "{ hostname; echo ---; sed -E 's/[0-9]+([.][0-9]+){3}/IP/g' /etc/hosts; echo ---; cat /etc/resolv.conf; } > /dev/termination-log; sleep 2"))},
	{"inside-hostname", "spec.hostname and spec.subdomain set: hostname, hostname -f and /etc/hosts", podDoc("cf-inhostname", "Never", "  hostname: web\n  subdomain: svc\n", sh("c", "{ hostname; echo ---; sed -E 's/[0-9]+([.][0-9]+){3}/IP/g' /etc/hosts; } > /dev/termination-log; sleep 2"))},
	{"inside-mounts", "a default container's mounts (where, type, options but the overlay's) and /dev", podDoc("cf-inmounts", "Never", "", sh("c", "{ awk '$3 != \"overlay\" {print $2, $3, $4} $3 == \"overlay\" {print $2, $3}' /proc/self/mounts; ls /dev | tr '\\n' ' '; } > /dev/termination-log; sleep 2"))},
	{"inside-downward", "downward API env: name, namespace, node, service account, host IP set or not, and resource fields without limits (the node's allocatable)", podDoc("cf-indown", "Never", "", sh("c", "{ echo name=$POD_NAME ns=$POD_NS node=$NODE_NAME sa=$SA_NAME hostip=${HOST_IP:+set} podip=${POD_IP:+set} limcpu=$LIM_CPU limmem=$LIM_MEM reqcpu=$REQ_CPU reqmem=$REQ_MEM; } > /dev/termination-log; sleep 2")+
		"    env:\n"+fieldEnv("POD_NAME", "metadata.name")+fieldEnv("POD_NS", "metadata.namespace")+fieldEnv("NODE_NAME", "spec.nodeName")+fieldEnv("SA_NAME", "spec.serviceAccountName")+fieldEnv("HOST_IP", "status.hostIP")+fieldEnv("POD_IP", "status.podIP")+
		resourceEnv("LIM_CPU", "limits.cpu", "1m")+resourceEnv("LIM_MEM", "limits.memory", "1Mi")+resourceEnv("REQ_CPU", "requests.cpu", "1m")+resourceEnv("REQ_MEM", "requests.memory", "1"))},
	{"inside-downward-files", "a downwardAPI volume: labels, the pod's name and namespace, the volume's mode and files", podDoc("cf-indownvol", "Never",
		"  volumes:\n  - name: p\n    downwardAPI:\n      items:\n      - path: labels\n        fieldRef:\n          fieldPath: metadata.labels\n      - path: name\n        fieldRef:\n          fieldPath: metadata.name\n      - path: ns\n        fieldRef:\n          fieldPath: metadata.namespace\n",
		sh("c", "{ for f in labels name ns; do echo \"$f: $(cat /p/$f)\"; done; stat -c %a /p; ls /p | tr '\\n' ' '; } > /dev/termination-log; sleep 2")+"    volumeMounts:\n    - name: p\n      mountPath: /p\n")},
	{"inside-share-pid", "shareProcessNamespace: what PID 1 is and what a second container sees", podDoc("cf-inpid", "Never", "  shareProcessNamespace: true\n",
		sh("a", sleeper), sh("b", "sleep 2; { cat /proc/1/cmdline | tr '\\0' ' '; echo; ps -o comm | sort | uniq -c; } > /dev/termination-log; sleep 2"))},
	{"inside-emptydir-memory", "medium: Memory emptyDirs in a pod with a 64Mi memory limit, run as user 1000: without sizeLimit, 16Mi, 1Gi; each one's mode, size, and a write", podDoc("cf-inmemdir", "Never",
		"  securityContext:\n    runAsUser: 1000\n  volumes:\n  - name: m1\n    emptyDir:\n      medium: Memory\n  - name: m2\n    emptyDir:\n      medium: Memory\n      sizeLimit: 16Mi\n  - name: m3\n    emptyDir:\n      medium: Memory\n      sizeLimit: 1Gi\n",
		sh("c", "for d in /m1 /m2 /m3; do echo $d $(stat -c %a $d) $(df -k $d | tail -1 | awk '{print $2}') $(touch $d/f && echo wrote); done > /dev/termination-log; sleep 2")+resources("", "", "", "64Mi")+
			"    volumeMounts:\n    - name: m1\n      mountPath: /m1\n    - name: m2\n      mountPath: /m2\n    - name: m3\n      mountPath: /m3\n")},
	{"inside-nested-mounts", "two emptyDirs, the one at /data/sub listed before the one at /data: which is mounted first", podDoc("cf-innested", "Never",
		"  volumes:\n  - name: outer\n    emptyDir: {}\n  - name: inner\n    emptyDir: {}\n",
		sh("c", "grep -o ' /data[^ ]*' /proc/self/mounts > /dev/termination-log; sleep 2")+"    volumeMounts:\n    - name: inner\n      mountPath: /data/sub\n    - name: outer\n      mountPath: /data\n")},
	// A container's own cgroup values and OOM score, read inside (its cgroup is mounted there).
	{"inside-cgroup-guaranteed", "a Guaranteed container (250m, 64Mi): its cgroup's CPU shares, quota, period, memory and pids limits, swappiness, and its oom_score_adj", podDoc("cf-incgg", "Never", "", sh("c", insideCgroup)+resources("250m", "64Mi", "250m", "64Mi"))},
	{"inside-cgroup-burstable", "a Burstable container (requests 100m/32Mi, limits 500m/128Mi): the same values", podDoc("cf-incgb", "Never", "", sh("c", insideCgroup)+resources("100m", "32Mi", "500m", "128Mi"))},
	{"inside-cgroup-besteffort", "a BestEffort container: the same values", podDoc("cf-incge", "Never", "", sh("c", insideCgroup))},
	{"inside-cgroup-pod-level", "pod-level limits (500m, 64Mi) and a container without resources: its own cgroup's values", podDoc("cf-incgp", "Never", "  resources:\n    limits:\n      cpu: 500m\n      memory: 64Mi\n", sh("c", insideCgroup))},
	{"inside-net", "a pod's network as its container sees it: unprivileged port start, ping group range, interfaces, MTU, loopback addresses, routes", podDoc("cf-innet", "Never", "", sh("c", "{ cat /proc/sys/net/ipv4/ip_unprivileged_port_start /proc/sys/net/ipv4/ping_group_range; ls /sys/class/net | tr '\\n' ' '; echo; cat /sys/class/net/eth0/mtu; ip -o addr show lo | awk '{print $3, $4}'; ip route | sed -E 's/[0-9]+([.][0-9]+){3}/IP/g'; } > /dev/termination-log; sleep 2"))},
	{"inside-seccomp-runtime-default", "seccompProfile RuntimeDefault: the container's seccomp mode and filters", podDoc("cf-inseccomp", "Never", "  securityContext:\n    seccompProfile:\n      type: RuntimeDefault\n", sh("c", "{ grep -E '^(Seccomp|NoNewPrivs)' /proc/self/status; } > /dev/termination-log; sleep 2"))},
	{"inside-dns-none", "dnsPolicy None with a dnsConfig (nameservers, searches, options): resolv.conf", podDoc("cf-indnsnone", "Never", "  dnsPolicy: None\n  dnsConfig:\n    nameservers: [192.0.2.53]\n    searches: [a.example, b.example]\n    options:\n    - name: ndots\n      value: \"2\"\n    - name: edns0\n", sh("c", insideResolv))},
	{"inside-dns-options", "dnsPolicy Default with a dnsConfig adding a search and options: resolv.conf", podDoc("cf-indnsopt", "Never", "  dnsPolicy: Default\n  dnsConfig:\n    searches: [extra.example]\n    options:\n    - name: ndots\n      value: \"3\"\n    - name: timeout\n      value: \"1\"\n", sh("c", insideResolv))},
	{"inside-dns-hostnet-clusterfirst", "hostNetwork with dnsPolicy ClusterFirstWithHostNet (no cluster DNS on the node): resolv.conf", podDoc("cf-indnshn", "Never", "  hostNetwork: true\n  dnsPolicy: ClusterFirstWithHostNet\n", sh("c", insideResolv))},
	{"inside-hostaliases", "hostAliases: /etc/hosts (the pod's address masked)", podDoc("cf-inaliases", "Never", "  hostAliases:\n  - ip: 192.0.2.10\n    hostnames: [foo.local, bar.local]\n  - ip: 192.0.2.11\n    hostnames: [baz.local]\n", sh("c", "sed -E 's/[0-9]+([.][0-9]+){3}\\t/IP\\t/' /etc/hosts > /dev/termination-log; sleep 2"))},
	{"inside-subpath", "an init container writes into an emptyDir; the app mounts its subPath a (and a subPath that does not exist yet, b/c): what it sees", podDoc("cf-insubpath", "Never",
		"  volumes:\n  - name: d\n    emptyDir: {}\n  initContainers:\n"+sh("init", "mkdir -p /d/a && echo hello > /d/a/f")+"    volumeMounts:\n    - name: d\n      mountPath: /d\n",
		sh("c", "{ cat /x/f; ls -ld /y | cut -c1-10; touch /y/new && echo wrote; } > /dev/termination-log 2>&1; sleep 2")+"    volumeMounts:\n    - name: d\n      mountPath: /x\n      subPath: a\n    - name: d\n      mountPath: /y\n      subPath: b/c\n")},
	{"inside-subpathexpr", "subPathExpr from the pod's name (downward API env): the directory made on the volume", podDoc("cf-insubexpr", "Never",
		"  volumes:\n  - name: d\n    emptyDir: {}\n",
		sh("c", "touch /x/f; echo $POD_NAME > /dev/termination-log; sleep 2")+"    env:\n"+fieldEnv("POD_NAME", "metadata.name")+"    volumeMounts:\n    - name: d\n      mountPath: /x\n      subPathExpr: $(POD_NAME)\n",
		sh("v", "sleep 1; ls /all > /dev/termination-log; sleep 2")+"    volumeMounts:\n    - name: d\n      mountPath: /all\n")},
	{"inside-readonly-mount", "a readOnly volumeMount of an emptyDir: a write fails, exit with its status", podDoc("cf-inromount", "Never",
		"  volumes:\n  - name: d\n    emptyDir: {}\n", sh("c", "sleep 2; touch /d/x 2> /dev/termination-log")+"    volumeMounts:\n    - name: d\n      mountPath: /d\n      readOnly: true\n")},
	{"inside-args-only", "args without command: the image's entrypoint and cmd replaced as the kubelet does", podDoc("cf-inargs", "Never", "", "  - name: c\n    image: busybox\n    imagePullPolicy: IfNotPresent\n    args: [\"sh\", \"-c\", \"echo $0 $1 > /dev/termination-log; sleep 2\", \"zero\", \"one\"]\n")},
	{"inside-runasgroup-only", "runAsGroup 2000 without runAsUser (the image's user, root): id and the process's groups", podDoc("cf-ingrp", "Never", "", sh("c", insideIDs)+"    securityContext:\n      runAsGroup: 2000\n")},
	{"inside-supplemental-strict", "supplementalGroupsPolicy Strict with supplementalGroups [3000], run as 1000: id (containerd 1.6 cannot do Strict)", podDoc("cf-instrict", "Never", "  securityContext:\n    runAsUser: 1000\n    supplementalGroups: [3000]\n    supplementalGroupsPolicy: Strict\n", sh("c", insideIDs))},
	{"inside-tty", "tty: true without stdin: is stdout a terminal, and stdin", podDoc("cf-intty", "Never", "", sh("c", "{ tty; test -t 1 && echo out-tty; test -t 0 && echo in-tty; } > /dev/termination-log 2>&1; sleep 2")+"    tty: true\n")},
	{"pull-always-offline", "imagePullPolicy Always for an image on the node whose registry cannot be reached (an offline node)", podDoc("cf-pullalways", "Always", "", "  - name: c\n    image: busybox\n    imagePullPolicy: Always\n    command: [\"sh\", \"-c\", "+fmt.Sprintf("%q", sleeper)+"]\n")},
	// httpGet probes' edge cases, on busybox httpd's CGI.
	{"http-redirect-same-host", "an httpGet readiness probe answered 302 to a path of the same host (followed: 200)", podDoc("cf-httpredir", "Always", "", sh("c", cgiServer)+cgiProbe("/cgi-bin/same", ""))},
	{"http-redirect-other-host", "an httpGet readiness probe answered 302 to another host (the kubelet counts it a success, with a warning)", podDoc("cf-httpredirx", "Always", "", sh("c", cgiServer)+cgiProbe("/cgi-bin/other", ""))},
	{"http-redirect-loop", "an httpGet readiness probe answered 302 to itself, again and again", podDoc("cf-httploop", "Always", "", sh("c", cgiServer)+cgiProbe("/cgi-bin/loop", ""))},
	{"http-399", "an httpGet readiness probe answered 399 (below 400: a success)", podDoc("cf-http399", "Always", "", sh("c", cgiServer)+cgiProbe("/cgi-bin/s399", ""))},
	{"http-400", "an httpGet readiness probe answered 400", podDoc("cf-http400", "Always", "", sh("c", cgiServer)+cgiProbe("/cgi-bin/s400", ""))},
	{"http-slow", "an httpGet readiness probe whose answer takes 3 s, timeoutSeconds 1", podDoc("cf-httpslow", "Always", "", sh("c", cgiServer)+cgiProbe("/cgi-bin/slow", "")+"      timeoutSeconds: 1\n")},
	{"https-on-http", "an httpGet readiness probe with scheme HTTPS on a plain HTTP server", podDoc("cf-httpsonhttp", "Always", "", sh("c", cgiServer)+cgiProbe("/", "\n        scheme: HTTPS"))},
	{"inside-termlog-nonroot", "run as user 1000: the termination log's mode and a message written to it, exit 3", podDoc("cf-intlog", "Never", "  securityContext:\n    runAsUser: 1000\n", sh("c", "sleep 2; ls -l /dev/termination-log | cut -c1-10 > /dev/termination-log; echo written by $(id -u) >> /dev/termination-log; exit 3"))},
	{"inside-home-nonroot", "run as user 1000 (not in the image's /etc/passwd), workingDir /work/here: HOME, the working directory's owner and mode", podDoc("cf-inhome", "Never", "  securityContext:\n    runAsUser: 1000\n", sh("c", "{ echo HOME=$HOME; pwd; stat -c '%u %g %a' .; touch x 2>&1 && echo wrote; } > /dev/termination-log; sleep 2")+"    workingDir: /work/here\n")},
	{"inside-exec-probe-context", "an exec readiness probe that passes only with the container's env, working directory and user (FOO=bar, /work, uid 1000)", podDoc("cf-inprobectx", "Always", "  securityContext:\n    runAsUser: 1000\n", sh("c", sleeper)+
		"    workingDir: /work\n    env:\n    - name: FOO\n      value: bar\n"+probe("readinessProbe", "test \"$FOO\" = bar && test \"$(pwd)\" = /work && test \"$(id -u)\" = 1000 && test -n \"$HOSTNAME\""))},
	{"inside-poststart-context", "a postStart exec hook writes its env, working directory and user; the container prints them", podDoc("cf-inpsctx", "Never", "  securityContext:\n    runAsUser: 1000\n", sh("c", "sleep 2; cat /tmp/ps > /dev/termination-log")+
		"    workingDir: /tmp\n    env:\n    - name: FOO\n      value: bar\n    lifecycle:\n      postStart:\n        exec:\n          command: [\"sh\", \"-c\", \"echo FOO=$FOO pwd=$(pwd) uid=$(id -u) host=${HOSTNAME:+set} > /tmp/ps\"]\n")},
	// preStop hooks, seen by the next instance of the container through an emptyDir.
	{"prestop-on-liveness-kill", "a liveness probe kills the container once (its SIGTERM handler exits 0, under OnFailure: restarted all the same); its preStop hook writes a file the next instance prints", podDoc("cf-prestoplive", "OnFailure",
		"  volumes:\n  - name: d\n    emptyDir: {}\n",
		sh("c", "if [ -f /d/ran ]; then rm -f /d/kill-me; cat /d/prestop > /dev/termination-log 2>&1; sleep 2; exit 0; fi; touch /d/ran /d/kill-me; "+sleeper)+
			"    env:\n    - name: FOO\n      value: bar\n    volumeMounts:\n    - name: d\n      mountPath: /d\n"+
			"    lifecycle:\n      preStop:\n        exec:\n          command: [\"sh\", \"-c\", \"echo prestop FOO=$FOO >> /d/prestop\"]\n"+
			probe("livenessProbe", "test ! -f /d/kill-me"))},
	{"prestop-on-poststart-failure", "a postStart hook fails once (the container, killed, exits 3 under OnFailure: restarted); the preStop hook writes a file the next instance prints", podDoc("cf-prestopps", "OnFailure",
		"  volumes:\n  - name: d\n    emptyDir: {}\n",
		sh("c", "if [ -f /d/ran ]; then { cat /d/prestop; cat /d/poststart; } > /dev/termination-log 2>&1; sleep 2; exit 0; fi; trap \"exit 3\" TERM; sleep 3600 & wait")+
			"    volumeMounts:\n    - name: d\n      mountPath: /d\n"+
			"    lifecycle:\n      postStart:\n        exec:\n          command: [\"sh\", \"-c\", \"echo poststart >> /d/poststart; if [ -f /d/ran ]; then exit 0; fi; touch /d/ran; exit 1\"]\n"+
			"      preStop:\n        exec:\n          command: [\"sh\", \"-c\", \"echo prestop >> /d/prestop\"]\n")},
	// Probe kills and restart policies: the kubelet decides the restart at the kill.
	{"liveness-kill-container-never", "a container with restartPolicy Never in an Always pod, killed by its liveness probe (its SIGTERM handler exits 0)", podDoc("cf-livenever", "Always", "", sh("c", sleeper)+
		"    restartPolicy: Never\n"+probe("livenessProbe", "exit 1"))},
	{"liveness-kill-rule", "restartPolicy Never with a rule Restart on exit 0, killed by its liveness probe (exits 0): the rule restarts it", podDoc("cf-liverule", "Always", "", sh("c", sleeper)+
		"    restartPolicy: Never\n    restartPolicyRules:\n    - action: Restart\n      exitCodes:\n        operator: In\n        values: [0]\n"+probe("livenessProbe", "exit 1"))},
	{"startup-kill-onfailure", "a startup probe that never passes under OnFailure (failureThreshold 2; the container exits 0 on SIGTERM): restarted", podDoc("cf-startof", "OnFailure", "", sh("c", sleeper)+
		"    startupProbe:\n      exec:\n        command: [\"sh\", \"-c\", \"exit 1\"]\n      periodSeconds: 1\n      failureThreshold: 2\n")},
	{"poststart-http-refused", "a postStart httpGet hook to a port nothing listens on, under Always (the container exits 0 on SIGTERM)", podDoc("cf-pshttp", "Always", "", sh("c", sleeper)+
		"    lifecycle:\n      postStart:\n        httpGet:\n          path: /\n          port: 9\n")},
	{"inside-downward-metadata", "labels and annotations of a pod (app=web, note=hi) through the downward API: the annotation keys of a volume file, a label and an annotation by key in env", withMeta("  labels:\n    app: web\n  annotations:\n    note: hi\n", podDoc("cf-inmeta", "Never",
		"  volumes:\n  - name: p\n    downwardAPI:\n      items:\n      - path: annotations\n        fieldRef:\n          fieldPath: metadata.annotations\n      - path: labels\n        fieldRef:\n          fieldPath: metadata.labels\n",
		sh("c", "{ cut -d= -f1 /p/annotations | sort; echo ---; cat /p/labels; echo; echo app=$APP note=$NOTE; } > /dev/termination-log; sleep 2")+"    env:\n"+fieldEnv("APP", "metadata.labels['app']")+fieldEnv("NOTE", "metadata.annotations['note']")+
			"    volumeMounts:\n    - name: p\n      mountPath: /p\n"))},
	{"inside-host-ipc", "hostIPC: true: what /dev/shm is (type, size) and whether the host's IPC namespace is shared", podDoc("cf-inhostipc", "Never", "  hostIPC: true\n", sh("c", "{ grep ' /dev/shm ' /proc/self/mounts | cut -d' ' -f3; test \"$(readlink /proc/self/ns/ipc)\" = \"$(readlink /proc/1/ns/ipc)\" && echo same-as-pid1; } > /dev/termination-log; sleep 2"))},
	{"inside-localhost", "two containers of one pod: b reaches a's httpd on 127.0.0.1 and sees a file a wrote to their shared emptyDir", podDoc("cf-inlocal", "Never",
		"  volumes:\n  - name: d\n    emptyDir: {}\n",
		sh("a", "echo from-a > /d/f; "+webServer)+"    volumeMounts:\n    - name: d\n      mountPath: /d\n",
		sh("b", "sleep 2; { wget -q -O - http://127.0.0.1:8080/; cat /d/f; } > /dev/termination-log 2>&1; sleep 1")+"    volumeMounts:\n    - name: d\n      mountPath: /d\n")},
	{"prestop-http-on-liveness-kill", "a liveness kill's preStop httpGet hook to the container's own httpd (a CGI that writes a file), printed by the next instance, under OnFailure", podDoc("cf-prestophttp", "OnFailure",
		"  volumes:\n  - name: d\n    emptyDir: {}\n",
		sh("c", "if [ -f /d/ran ]; then rm -f /d/kill-me; cat /d/hooked > /dev/termination-log 2>&1; sleep 2; exit 0; fi; touch /d/ran /d/kill-me; "+
			"mkdir -p /www/cgi-bin && echo '#!/bin/sh' > /www/cgi-bin/h && echo 'echo hooked $REQUEST_METHOD $HTTP_USER_AGENT > /d/hooked; echo; echo ok' >> /www/cgi-bin/h && chmod +x /www/cgi-bin/h && "+
			"httpd -f -p 8080 -h /www & trap \"exit 0\" TERM; sleep 3600 & wait")+
			"    volumeMounts:\n    - name: d\n      mountPath: /d\n"+
			"    lifecycle:\n      preStop:\n        httpGet:\n          path: /cgi-bin/h\n          port: 8080\n"+
			probe("livenessProbe", "test ! -f /d/kill-me"))},
	{"prestop-sleep-on-liveness-kill", "a liveness kill with a preStop sleep of 1 s (the container exits 0 on SIGTERM), under Always", podDoc("cf-prestopsleep", "Always", "", sh("c", sleeper)+
		"    lifecycle:\n      preStop:\n        sleep:\n          seconds: 1\n"+probe("livenessProbe", "exit 1"))},
	{"poststart-sleep", "a postStart sleep of 2 s before a sleeper, under Always", podDoc("cf-pssleep", "Always", "", sh("c", sleeper)+
		"    lifecycle:\n      postStart:\n        sleep:\n          seconds: 2\n")},
	{"inside-env-references", "env references: a duplicate name, a reference to a later var, to HOSTNAME, to the image's PATH, $$ and an empty value; and $(A) and $(PATH) in args", podDoc("cf-inenvref", "Never", "",
		"  - name: c\n    image: busybox\n    imagePullPolicy: IfNotPresent\n    command: [\"sh\", \"-c\", \"{ echo D=$D A=$A B=$B H=$H P=$P E=[$E] X=$X; echo \\\"$0 $1\\\"; } > /dev/termination-log; sleep 2\"]\n    args: [\"$(A)\", \"$(PATH)\"]\n"+
			"    env:\n    - name: D\n      value: first\n    - name: D\n      value: second\n    - name: A\n      value: a-$(B)\n    - name: B\n      value: b\n    - name: H\n      value: h-$(HOSTNAME)\n    - name: P\n      value: p-$(PATH)\n    - name: E\n      value: \"\"\n    - name: X\n      value: x-$$(B)\n")},
	{"termination-message-long", "a 5000-byte termination message, exit 2 under Never (the kubelet keeps at most 4096 bytes)", podDoc("cf-termlong", "Never", "", sh("c", "yes x | head -c 5000 > /dev/termination-log; exit 2"))},
	{"fallback-logs-long", "FallbackToLogsOnError after 100 log lines, exit 1 under Never (the kubelet keeps the last 80 lines)", podDoc("cf-fallbacklong", "Never", "", sh("c", "seq 1 100; exit 1")+"    terminationMessagePolicy: FallbackToLogsOnError\n")},
	{"poststart-slow", "a postStart hook that takes 3 s (the container runs meanwhile)", podDoc("cf-poststartslow", "Always", "", sh("c", sleeper)+
		"    lifecycle:\n      postStart:\n        exec:\n          command: [\"sh\", \"-c\", \"sleep 3\"]\n")},
	{"init-onfailure-once", "restartPolicy OnFailure, an init container that fails on its first run only (an emptyDir marks it)", podDoc("cf-initonce", "OnFailure",
		"  volumes:\n  - name: d\n    emptyDir: {}\n  initContainers:\n"+sh("init", "if [ -f /d/ran ]; then exit 0; fi; touch /d/ran; exit 1")+"    volumeMounts:\n    - name: d\n      mountPath: /d\n", sh("c", sleeper))},
	{"sidecar-liveness", "a native sidecar whose exec liveness probe always fails (restarted), beside an app", podDoc("cf-sidelive", "Always", "  initContainers:\n"+sh("side", sleeper)+"    restartPolicy: Always\n"+
		netProbe("livenessProbe", "exec:\n        command: [\"sh\", \"-c\", \"exit 1\"]\n      initialDelaySeconds: 2"), sh("c", sleeper))},
	{"startup-then-ready", "a startup probe that passes after about 3 s and a readiness probe that always passes", podDoc("cf-startready", "Always", "", sh("c", "sleep 3; touch /tmp/started; "+sleeper)+
		"    startupProbe:\n      exec:\n        command: [\"cat\", \"/tmp/started\"]\n      periodSeconds: 1\n      failureThreshold: 30\n"+probe("readinessProbe", "true"))},
	{"exit-255", "exit 255 under Never", podDoc("cf-exit255", "Never", "", sh("c", "exit 255"))},
	{"killed-by-signal", "a shell whose child kills itself with SIGKILL, exiting with its status 137 (no OOM), under Never; $$$$ in the command is the kubelet's escape for $$", podDoc("cf-sigkill", "Never", "", sh("c", "sleep 1; sh -c 'kill -9 $$$$'; exit $?"))},
	{"sidecar-init-fails", "restartPolicy Never, a native sidecar, then an init container that exits 1 (the pod fails, the sidecar is stopped)", podDoc("cf-sideinitfail", "Never", "  initContainers:\n"+sh("side", sleeper)+"    restartPolicy: Always\n"+sh("init", "sleep 1; exit 1"), sh("c", sleeper))},
	{"sidecar-onfailure-done", "restartPolicy OnFailure, a native sidecar and an app that exits 0 after 2 s", podDoc("cf-sideonfail", "OnFailure", "  initContainers:\n"+sh("side", sleeper)+"    restartPolicy: Always\n", sh("c", "sleep 2; exit 0"))},
	{"readiness-delay", "an exec readiness probe that passes, with initialDelaySeconds: 120 (not ready within the window)", podDoc("cf-readydelay", "Always", "", sh("c", sleeper)+
		"    readinessProbe:\n      exec:\n        command: [\"true\"]\n      initialDelaySeconds: 120\n")},
	{"tcp-liveness", "the same httpd, a tcpSocket liveness probe of a port nothing listens on (restarts)", podDoc("cf-tcplive", "Always", "", sh("c", webServer)+
		netProbe("livenessProbe", "tcpSocket:\n        port: 8081\n      initialDelaySeconds: 1"))},
	{"init-oom", "an init container over its 24Mi memory limit, under Never", podDoc("cf-initoom", "Never", "  initContainers:\n"+sh("init", "head -c 128m /dev/zero | tail")+resources("", "24Mi", "", "24Mi"), sh("c", sleeper))},
	{"deadline-done", "activeDeadlineSeconds: 8 on a pod that succeeded before it, under Never", podDoc("cf-deadlinedone", "Never", "  activeDeadlineSeconds: 8\n", sh("c", "exit 0"))},
	{"always-exit0", "exit 0 under Always: restarted with the back-off like a crash", podDoc("cf-alwaysexit0", "Always", "", sh("c", "exit 0"))},
	{"readiness-success-threshold", "an exec readiness probe that passes, with successThreshold: 3 (ready after the third)", podDoc("cf-readysuccess", "Always", "", sh("c", sleeper)+probe("readinessProbe", "exit 0")+"      successThreshold: 3\n")},
	{"readiness-lost", "an exec readiness probe of a file the container removes after 8 s (ready, then not)", podDoc("cf-readylost", "Always", "", sh("c", "touch /tmp/ready; sleep 8; rm /tmp/ready; "+sleeper)+probe("readinessProbe", "test -f /tmp/ready"))},
	{"fallback-logs-success", "FallbackToLogsOnError, output and exit 0 under Never (no message: only an error falls back)", podDoc("cf-fallbackok", "Never", "", sh("c", "echo some words; exit 0")+"    terminationMessagePolicy: FallbackToLogsOnError\n")},
	{"fallback-logs-file-wins", "FallbackToLogsOnError, a termination message written and exit 1 (the file wins over the log)", podDoc("cf-fallbackfile", "Never", "", sh("c", "echo log words; echo file words > /dev/termination-log; exit 1")+"    terminationMessagePolicy: FallbackToLogsOnError\n")},
	{"inside-sysctl-safe", "safe sysctls (net.ipv4.ip_local_port_range, kernel.shm_rmid_forced) set in the pod: what the container reads", podDoc("cf-insysctl", "Never", "  securityContext:\n    sysctls:\n    - name: net.ipv4.ip_local_port_range\n      value: \"20000 40000\"\n    - name: kernel.shm_rmid_forced\n      value: \"1\"\n", sh("c", "{ cat /proc/sys/net/ipv4/ip_local_port_range; cat /proc/sys/kernel/shm_rmid_forced; } > /dev/termination-log; sleep 2"))},
	{"inside-host-pid", "hostPID: true: whether PID 1 is the host's and the container's own PID is not 1", podDoc("cf-inhostpid", "Never", "  hostPID: true\n", sh("c", "{ test \"$(readlink /proc/1/ns/pid)\" = \"$(readlink /proc/self/ns/pid)\" && echo pid-ns-shared-with-1; test $$ != 1 && echo not-pid-1; } > /dev/termination-log; sleep 2"))},
}

// webServer is busybox httpd on the pod's port 8080 (index.html only) in the background, a
// sleeper in front that exits on SIGTERM.
const webServer = `mkdir -p /www && echo ok > /www/index.html && httpd -f -p 8080 -h /www & trap "exit 0" TERM; sleep 3600 & wait`

// cgiServer is webServer with CGI scripts under /cgi-bin/ that answer as a probe's edge cases
// need: same (302 to /index.html), other (302 to another host), loop (302 to itself), s399 and
// s400 (those statuses), slow (200 after 3 s).
const cgiServer = `mkdir -p /www/cgi-bin && echo ok > /www/index.html && ` +
	`mk() { f=/www/cgi-bin/$1; shift; echo '#!/bin/sh' > $f; for l in "$@"; do echo "$l" >> $f; done; chmod +x $f; } && ` +
	`mk same 'echo "Status: 302 Found"' 'echo "Location: /index.html"' echo && ` +
	`mk other 'echo "Status: 302 Found"' 'echo "Location: http://192.0.2.1/x"' echo && ` +
	`mk loop 'echo "Status: 302 Found"' 'echo "Location: /cgi-bin/loop"' echo && ` +
	`mk s399 'echo "Status: 399 Odd"' echo && ` +
	`mk s400 'echo "Status: 400 Bad"' echo && ` +
	`mk slow 'sleep 3' 'echo "Content-type: text/plain"' echo 'echo slow' && ` +
	`httpd -f -p 8080 -h /www & trap "exit 0" TERM; sleep 3600 & wait`

// cgiProbe is a readiness probe of path on cgiServer (extra: more handler lines).
func cgiProbe(path, extra string) string {
	return netProbe("readinessProbe", "httpGet:\n        path: "+path+"\n        port: 8080"+extra)
}

// netProbe is a probe of kind (readinessProbe, livenessProbe) with the handler given (its first
// line at the handler's indent, later lines indented for it), every second, failing after one
// try. (Named for the network handlers; probe uses it for exec too.)
func netProbe(kind, handler string) string {
	return fmt.Sprintf("    %s:\n      %s\n      periodSeconds: 1\n      failureThreshold: 1\n", kind, handler)
}

// grpcPod runs pkbench's gRPC health server (grpchealth.go) in the pod network, the binary
// mounted read-only from the host, with a grpc probe (readinessProbe unless kind says otherwise)
// of service on its port.
func grpcPod(name, service string, kind ...string) string {
	k := "readinessProbe"
	if len(kind) > 0 {
		k = kind[0]
	}
	self, err := os.Executable()
	if err == nil {
		self, err = filepath.EvalSymlinks(self)
	}
	if err != nil {
		self = "/proc/self/exe" // unusable as a hostPath; the scenario then fails visibly
	}
	handler := "grpc:\n        port: 9090"
	if service != "" {
		handler += "\n        service: " + service
	}
	if k == "livenessProbe" {
		// The server is PID 1 of its container: a SIGTERM before its handler exists (the first
		// ms of the Go program) ends it with exit 2 instead of 0, and a liveness probe's first
		// run may come that early (a random part of its period after the start). Until
		// 2026-12-06 podkeeper's started-at could be seconds early on a loaded machine, which
		// made even this delay pass before the process ran (runtime.restampStart).
		handler += "\n      initialDelaySeconds: 1"
	}
	c := fmt.Sprintf("  - name: c\n    image: busybox\n    imagePullPolicy: IfNotPresent\n    command: [\"/pk/%s\", %q, \":9090\"]\n    volumeMounts:\n    - name: pk\n      mountPath: /pk\n      readOnly: true\n",
		filepath.Base(self), grpcHealthCommand)
	vol := fmt.Sprintf("  volumes:\n  - name: pk\n    hostPath:\n      path: %s\n      type: Directory\n", filepath.Dir(self))
	return podDoc(name, "Always", vol, c+netProbe(k, handler))
}

// probe is an exec probe of a shell script at 1 s, failing after one try.
func probe(kind, script string) string {
	return netProbe(kind, fmt.Sprintf("exec:\n        command: [\"sh\", \"-c\", %q]", script))
}

// Scripts several inside-* scenarios share: each writes what the container reads to its
// termination log and lingers 2 s, so that both sides are sampled while it runs.
const (
	insideCgroup = "for f in cpu/cpu.shares cpu/cpu.cfs_quota_us cpu/cpu.cfs_period_us memory/memory.limit_in_bytes memory/memory.swappiness memory/memory.memsw.limit_in_bytes pids/pids.max; do echo $f $(cat /sys/fs/cgroup/$f 2>&1); done > /dev/termination-log; echo oom_score_adj $(cat /proc/self/oom_score_adj) >> /dev/termination-log; sleep 2" // its own cgroup's values (v1 paths) and oom_score_adj
	insideResolv = "cat /etc/resolv.conf > /dev/termination-log; sleep 2"                                                                                                                                                                                                                                                                                  // resolv.conf
	insideIDs    = "{ id; grep -E '^(Uid|Gid|Groups)' /proc/self/status; } > /dev/termination-log; sleep 2"                                                                                                                                                                                                                                                // its user, group and supplementary groups
	insideCaps   = "grep -E '^(Cap|NoNewPrivs|Seccomp)' /proc/self/status > /dev/termination-log; sleep 2"                                                                                                                                                                                                                                                 // capabilities, no_new_privs and seccomp mode
)

// withMeta adds metadata lines (labels, annotations; indented for metadata) to a podDoc.
func withMeta(meta, doc string) string {
	return strings.Replace(doc, "\nspec:\n", "\n"+meta+"spec:\n", 1)
}

// fieldEnv is an env var from the downward API's fieldRef.
func fieldEnv(name, path string) string {
	return fmt.Sprintf("    - name: %s\n      valueFrom:\n        fieldRef:\n          fieldPath: %s\n", name, path)
}

// resourceEnv is an env var from the downward API's resourceFieldRef.
func resourceEnv(name, resource, divisor string) string {
	return fmt.Sprintf("    - name: %s\n      valueFrom:\n        resourceFieldRef:\n          resource: %s\n          divisor: %q\n", name, resource, divisor)
}

// resources gives requests and limits; empty values are left out.
func resources(reqCPU, reqMem, limCPU, limMem string) string {
	part := func(name, cpu, mem string) string {
		if cpu == "" && mem == "" {
			return ""
		}
		out := "      " + name + ":\n"
		if cpu != "" {
			out += "        cpu: " + cpu + "\n"
		}
		if mem != "" {
			out += "        memory: " + mem + "\n"
		}
		return out
	}
	return "    resources:\n" + part("requests", reqCPU, reqMem) + part("limits", limCPU, limMem)
}

// ignored are status fields that differ by nature between two runs: times, IDs, addresses.
func ignored(key string) bool {
	last := key[strings.LastIndexByte(key, '.')+1:]
	switch last {
	case "startTime", "startedAt", "finishedAt", "lastProbeTime", "lastTransitionTime", "containerID", "imageID",
		"podIP", "hostIP", "ip", "user", "volumeMounts", "observedGeneration", "stopSignal":
		return true
	}
	return strings.Contains(key, ".podIPs") || strings.Contains(key, ".hostIPs") || strings.Contains(key, ".user.")
}

// flatten turns a JSON value into path -> value; arrays of objects with a "name" (or a "type")
// are indexed by it, so the order of containers or conditions does not matter.
func flatten(prefix string, v any, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			flatten(prefix+"."+k, e, out)
		}
	case []any:
		for i, e := range x {
			key := fmt.Sprint(i)
			if m, ok := e.(map[string]any); ok {
				if n, ok := m["name"].(string); ok {
					key = n
				} else if t, ok := m["type"].(string); ok {
					key = t
				}
			}
			flatten(prefix+"["+key+"]", e, out)
		}
	default:
		if !ignored(prefix) {
			out[prefix] = fmt.Sprint(x)
		}
	}
}

func statusMap(p *corev1.Pod) map[string]string {
	b, _ := json.Marshal(p.Status)
	var v any
	_ = json.Unmarshal(b, &v)
	out := map[string]string{}
	flatten("status", v, out)
	// Messages name the pod by its UID (back-off, runAsNonRoot), which each side derives its own
	// way from the static pod's file: compared without it.
	if p.UID != "" {
		for k, s := range out {
			out[k] = strings.ReplaceAll(s, string(p.UID), "<uid>")
		}
	}
	return out
}

type difference struct{ scenario, field, podkeeper, kubelet string }

// runConformance runs every scenario under both, waits settle, and lists the differences.
// hostCreateDir is where the hostpath-create scenario's DirectoryOrCreate volume is made (by
// both sides); runConformance removes it.
const hostCreateDir = "/tmp/podkeeper-conformance-create"

func runConformance(ctx context.Context, o options, settle time.Duration) error {
	defer os.RemoveAll(hostCreateDir)
	terms := termScenarios
	if o.scenarios != "" {
		var err error
		scenarios, terms, err = pickScenarios(scenarios, terms, o.scenarios)
		if err != nil {
			return err
		}
	}
	if o.manifests != "" {
		return writeManifests(o.manifests, append(append([]scenario{}, scenarios...), terms...))
	}
	binDir, err := testenv.Binaries()
	if err != nil {
		return err
	}
	defer testenv.RemoveBinaries()
	env, err := testenv.StartContainerd("pkconform-unused")
	if err != nil {
		return err
	}
	defer env.Stop()
	pk, err := newPodkeeper(ctx, binDir, env.Address, "pkconform", filepath.Join(env.Dir, "busybox.tar"))
	if err != nil {
		return err
	}
	defer pk.Close()
	kb, err := newKubelet(ctx, o.kubelet, filepath.Join(env.Dir, "busybox.tar"))
	if err != nil {
		return fmt.Errorf("the kubelet is the oracle and cannot run: %w", err)
	}
	defer kb.Close()
	byName := func(ps []corev1.Pod) map[string]*corev1.Pod {
		m := map[string]*corev1.Pod{}
		for i := range ps {
			m[ps[i].Name] = &ps[i]
		}
		return m
	}
	// Both are sampled every second until settle: the last sample is compared field by field, and
	// for the state fields the set of values each side showed over the whole window (one instant
	// cannot tell a status that lags from one that is wrong). The scenarios run in batches of at
	// most conformanceBatch: all of them at once on both sides (88 pods on 2 cores) overloaded the
	// shared containerd so that starts took longer than the window.
	seenPK, seenKB := map[string]map[string]bool{}, map[string]map[string]bool{}
	logsPK, logsKB := map[string]map[string]string{}, map[string]map[string]string{}
	lastPK, lastKB := map[string]*corev1.Pod{}, map[string]*corev1.Pod{}
	nb := (len(scenarios) + conformanceBatch - 1) / conformanceBatch
	for b := 0; b < nb; b++ {
		batch := scenarios[b*len(scenarios)/nb : (b+1)*len(scenarios)/nb]
		for _, s := range batch {
			for _, dir := range []string{pk.manifests, kb.manifests} {
				if err := placeManifest(dir, s.name, s.spec); err != nil {
					return err
				}
			}
		}
		deadline := time.Now().Add(settle)
		for {
			pl, err := pk.api.Pods(ctx)
			if err != nil {
				return err
			}
			kl, err := kb.pods(ctx)
			if err != nil {
				return err
			}
			ps, ks := byName(pl.Items), byName(kl)
			for _, sc := range batch {
				name := podNameOf(sc.spec) + "-" + nodeName
				lastPK[name], lastKB[name] = ps[name], ks[name]
				noteSeen(seenPK, sc.name, ps[name])
				noteSeen(seenKB, sc.name, ks[name])
				if o.scenarios != "" { // a focused look: each sample's containers, side by side
					fmt.Printf("%s +%2.0fs  podkeeper %-40s  kubelet %s\n", sc.name, settle.Seconds()-time.Until(deadline).Seconds(), brief(ps[name]), brief(ks[name]))
				}
			}
			if time.Now().After(deadline) {
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Second):
			}
		}
		for _, s := range batch {
			if !isLogScenario(s.name) {
				continue
			}
			name := podNameOf(s.spec) + "-" + nodeName
			if logsPK[s.name], err = podLogs(filepath.Join(pk.dir, "logs"), name); err != nil {
				return fmt.Errorf("podkeeper's logs of %s: %w", name, err)
			}
			if logsKB[s.name], err = podLogs(kb.logs, name); err != nil {
				return fmt.Errorf("the kubelet's logs of %s: %w", name, err)
			}
		}
		// The next batch (or the termination scenarios) starts once this one is gone from both.
		for _, s := range batch {
			for _, dir := range []string{pk.manifests, kb.manifests} {
				if err := os.Remove(filepath.Join(dir, s.name+".yaml")); err != nil {
					return err
				}
			}
		}
		gone := time.Now().Add(2 * time.Minute)
		for time.Now().Before(gone) {
			pl, err1 := pk.api.Pods(ctx)
			kl, err2 := kb.pods(ctx)
			if err1 == nil && err2 == nil && len(pl.Items) == 0 && len(kl) == 0 {
				break
			}
			if err := pause(ctx, time.Second); err != nil {
				return err
			}
		}
	}
	var termEvents []termEvent
	if len(terms) > 0 {
		if termEvents, err = runTermination(ctx, pk, kb, terms); err != nil {
			return err
		}
		if o.scenarios != "" {
			fmt.Print(termMarkdown(terms, termEvents))
		}
	}
	var diffs, seenDiffs []difference
	total, seenTotal := 0, 0
	for _, s := range scenarios {
		name := podNameOf(s.spec) + "-" + nodeName
		pp, kp := lastPK[name], lastKB[name]
		if pp == nil && kp == nil { // both refused it (the refused-* scenarios): one field, agreeing
			total++
			continue
		}
		if pp == nil || kp == nil {
			diffs = append(diffs, difference{s.name, "(pod)", present(pp), present(kp)})
			continue
		}
		if o.scenarios != "" { // a focused look: both statuses in full
			for _, side := range []struct {
				name string
				p    *corev1.Pod
			}{{"podkeeper", pp}, {"kubelet", kp}} {
				b, _ := json.MarshalIndent(side.p.Status, "", "  ")
				fmt.Printf("--- %s, %s, last sample:\n%s\n", s.name, side.name, b)
			}
			if isLogScenario(s.name) {
				fmt.Printf("--- %s, log files, podkeeper:\n%s--- kubelet:\n%s", s.name, sortedFields(logsPK[s.name]), sortedFields(logsKB[s.name]))
			}
		}
		n, d := compareMaps(s.name, withLogs(statusMap(pp), logsPK[s.name]), withLogs(statusMap(kp), logsKB[s.name]))
		total += n
		diffs = append(diffs, d...)
		n, d = compareMaps(s.name, seenMap(seenPK[s.name]), seenMap(seenKB[s.name]))
		seenTotal += n
		seenDiffs = append(seenDiffs, d...)
	}
	md := conformanceMarkdown(settle, total, diffs, seenTotal, seenDiffs)
	if len(terms) > 0 {
		md += termMarkdown(terms, termEvents)
	}
	fmt.Println(md)
	if o.out != "" {
		// What each difference means is written by hand next to the generated file.
		if notes, err := os.ReadFile(filepath.Join(filepath.Dir(o.out), "conformance-notes.md")); err == nil {
			md += "\n" + string(notes)
		}
		return os.WriteFile(o.out, []byte(md), 0o644)
	}
	return nil
}

// brief is a pod's phase and each container's restart count and state, for a focused run's
// timeline: "Running side:1/run c:0/wait(CrashLoopBackOff)".
func brief(p *corev1.Pod) string {
	if p == nil {
		return "-"
	}
	out := string(p.Status.Phase)
	for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		st := "?"
		switch {
		case cs.State.Running != nil:
			st = "run"
		case cs.State.Terminated != nil:
			st = fmt.Sprintf("exit(%d)", cs.State.Terminated.ExitCode)
		case cs.State.Waiting != nil:
			st = "wait(" + cs.State.Waiting.Reason + ")"
		}
		out += fmt.Sprintf(" %s:%d/%s", cs.Name, cs.RestartCount, st)
	}
	return out
}

// writeManifests writes each scenario's manifest to dir/<scenario>.yaml (a termination
// scenario's containers writing under termBase).
func writeManifests(dir string, list []scenario) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, s := range list {
		spec := strings.ReplaceAll(s.spec, outDir, filepath.Join(termBase, s.name))
		if err := os.WriteFile(filepath.Join(dir, s.name+".yaml"), []byte(spec), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// pickScenarios is the status and termination scenarios named in list (comma separated), each
// in its list's order.
func pickScenarios(all, terms []scenario, list string) ([]scenario, []scenario, error) {
	want := map[string]bool{}
	for _, n := range strings.Split(list, ",") {
		want[strings.TrimSpace(n)] = true
	}
	pick := func(from []scenario) []scenario {
		var out []scenario
		for _, s := range from {
			if want[s.name] {
				out = append(out, s)
				delete(want, s.name)
			}
		}
		return out
	}
	out, outTerms := pick(all), pick(terms)
	if len(want) > 0 {
		var unknown []string
		for n := range want {
			unknown = append(unknown, n)
		}
		sort.Strings(unknown)
		return nil, nil, fmt.Errorf("no such conformance scenario: %s", strings.Join(unknown, ", "))
	}
	return out, outTerms, nil
}

func podNameOf(spec string) string {
	i := strings.Index(spec, "  name: ")
	rest := spec[i+len("  name: "):]
	return rest[:strings.IndexByte(rest, '\n')]
}

func present(p *corev1.Pod) string {
	if p == nil {
		return "(not listed)"
	}
	return "listed"
}

func orNone(s string) string {
	if s == "" {
		return "(absent)"
	}
	return s
}

func conformanceMarkdown(settle time.Duration, total int, diffs []difference, seenTotal int, seenDiffs []difference) string {
	var b strings.Builder
	w := func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }
	w("# Conformance: podkeeper against the real kubelet\n\n")
	w("Generated by `make conformance` (bench/cmd/pkbench -conformance) on %s. The same manifests are dropped into podkeeper's manifest directory and into the staticPodPath of the real kubelet (standalone, built from k8s.io/kubernetes in bench/kubelet), both on containerd 1.6.20 with the same busybox image, in batches of at most %d scenarios (the next batch once the last is gone from both); both are sampled every second for %v; the last sample of the pod status each reports (podkeeper's local API, the kubelet's read-only `/pods`) is compared field by field, and for the state fields (phase, conditions, container states and reasons, exit codes, ready/started) so is the set of values each side showed over the whole window. Times, container and image IDs and IPs are left out. For the log-* scenarios the container log files each side wrote (podkeeper's --log-dir, the kubelet's podLogsDir where containerd's CRI writes them) are compared too, before the batch is removed: the pod directory's name (the UID's shape), each file's path and line count, each stream's chunks in order (tag P or F and text; a long text by its length and checksum) and the timestamps' shape (RFC 3339, in order within each stream; containerd 1.6 writes RFC3339Nano, whose trailing zeros are left out, podkeeper nine digits always, as containerd 2).\n\n", time.Now().UTC().Format(time.RFC3339), conformanceBatch, settle)
	w("| scenario | what |\n|---|---|\n")
	for _, s := range scenarios {
		w("| %s | %s |\n", s.name, s.what)
	}
	w("\n%d fields compared, %d differ.\n\n", total, len(diffs))
	if len(diffs) > 0 {
		w("| scenario | field | podkeeper | kubelet |\n|---|---|---|---|\n")
		for _, d := range diffs {
			w("| %s | `%s` | %s | %s |\n", d.scenario, d.field, cell(d.podkeeper), cell(d.kubelet))
		}
	}
	w("\n### Over the window: values each side showed\n\n%d state fields compared, %d differ.\n\n", seenTotal, len(seenDiffs))
	if len(seenDiffs) > 0 {
		w("| scenario | field | podkeeper showed | kubelet showed |\n|---|---|---|---|\n")
		for _, d := range seenDiffs {
			w("| %s | `%s` | %s | %s |\n", d.scenario, d.field, cell(d.podkeeper), cell(d.kubelet))
		}
	}
	return b.String()
}

func cell(s string) string {
	s = strings.ReplaceAll(s, "|", "\\|")
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}

// stateField reports whether a flattened status key is one whose values over time are compared:
// the states and reasons, not counters or messages that carry durations.
func stateField(key string) bool {
	last := key[strings.LastIndexByte(key, '.')+1:]
	switch last {
	case "phase", "reason", "exitCode", "ready", "started", "status", "qosClass":
		return true
	}
	return false
}

// noteSeen adds the pod's current state-field values to seen[scenario] as "field\x00value" keys.
func noteSeen(seen map[string]map[string]bool, scenario string, p *corev1.Pod) {
	if p == nil {
		return
	}
	for k, v := range statusMap(p) {
		if !stateField(k) {
			continue
		}
		if seen[scenario] == nil {
			seen[scenario] = map[string]bool{}
		}
		seen[scenario][k+"\x00"+v] = true
	}
}

// seenMap turns field\x00value keys into field -> sorted values joined by " · ".
func seenMap(m map[string]bool) map[string]string {
	vals := map[string][]string{}
	for k := range m {
		f, v, _ := strings.Cut(k, "\x00")
		vals[f] = append(vals[f], v)
	}
	out := map[string]string{}
	for f, vs := range vals {
		sort.Strings(vs)
		out[f] = strings.Join(vs, " · ")
	}
	return out
}

// placeManifest writes spec whole into dir as name.yaml: written beside dir first, then renamed
// in, so that neither agent reads half a file.
func placeManifest(dir, name, spec string) error {
	tmp := filepath.Join(filepath.Dir(dir), "."+name)
	if err := os.WriteFile(tmp, []byte(spec), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, name+".yaml"))
}

// keysOf is the keys of a and b together, sorted.
func keysOf[V any](a, b map[string]V) []string {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	out := make([]string, 0, len(keys))
	for k := range keys {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// compareMaps compares two flattened statuses (or two seen sets) key by key.
func compareMaps(scenario string, am, bm map[string]string) (int, []difference) {
	ks := keysOf(am, bm)
	var diffs []difference
	for _, k := range ks {
		if am[k] != bm[k] {
			diffs = append(diffs, difference{scenario, k, orNone(am[k]), orNone(bm[k])})
		}
	}
	return len(ks), diffs
}

// envFilePod is a pod whose init container writes an env file into an emptyDir and whose app
// container reads key from it through env[].valueFrom.fileKeyRef.
func envFilePod(name, key string) string {
	mount := "    volumeMounts:\n    - name: e\n      mountPath: /e\n"
	return podDoc(name, "Always", "  volumes:\n  - name: e\n    emptyDir: {}\n  initContainers:\n"+sh("w", "printf \"GREETING='hello'\\n\" > /e/vars")+mount,
		sh("c", sleeper)+"    env:\n    - name: V\n      valueFrom:\n        fileKeyRef:\n          volumeName: e\n          path: vars\n          key: "+key+"\n")
}
