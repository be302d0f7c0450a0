package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	goruntime "runtime"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/podkeeper/podkeeper/cgroup"
	"github.com/podkeeper/podkeeper/podrunner"
)

type nodeInfo struct {
	mu          sync.Mutex
	capacity    corev1.ResourceList
	allocatable corev1.ResourceList
	since       time.Time
}

func (b *lateBackend) setNode(capacity, allocatable corev1.ResourceList) {
	b.info.mu.Lock()
	defer b.info.mu.Unlock()
	b.info.capacity, b.info.allocatable, b.info.since = capacity, allocatable, time.Now()
}

// Node implements api.NodeBackend. The pressure conditions are the eviction loop's (eviction.go).
func (b *lateBackend) Node() (*corev1.Node, error) {
	b.info.mu.Lock()
	capacity, allocatable, since := b.info.capacity, b.info.allocatable, b.info.since
	b.info.mu.Unlock()
	if capacity == nil {
		return nil, errors.New("podkeeper is still waiting for containerd")
	}
	t := metav1.NewTime(since)
	now := metav1.Now()
	cond := func(typ corev1.NodeConditionType, st corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: typ, Status: st, LastHeartbeatTime: now, LastTransitionTime: t, Reason: reason, Message: msg}
	}
	pressure := pressureConditions(b.get(), since)
	pcond := func(typ corev1.NodeConditionType, okReason, okMsg, badReason, badMsg string) corev1.NodeCondition {
		p := pressure[typ]
		c := corev1.NodeCondition{Type: typ, Status: corev1.ConditionFalse, LastHeartbeatTime: now, LastTransitionTime: metav1.NewTime(p.Since), Reason: okReason, Message: okMsg}
		if p.True {
			c.Status, c.Reason, c.Message = corev1.ConditionTrue, badReason, badMsg
		}
		return c
	}
	var uts unix.Utsname
	_ = unix.Uname(&uts)
	n := &corev1.Node{
		TypeMeta:   metav1.TypeMeta{Kind: "Node", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: b.node, CreationTimestamp: t, Labels: maps.Clone(b.labels)},
		Status: corev1.NodeStatus{
			Capacity: capacity, Allocatable: allocatable,
			Conditions: []corev1.NodeCondition{
				pcond(corev1.NodeMemoryPressure, "KubeletHasSufficientMemory", "podkeeper has sufficient memory available", "KubeletHasInsufficientMemory", "podkeeper has insufficient memory available"),
				pcond(corev1.NodeDiskPressure, "KubeletHasNoDiskPressure", "podkeeper has no disk pressure", "KubeletHasDiskPressure", "podkeeper has disk pressure"),
				pcond(corev1.NodePIDPressure, "KubeletHasSufficientPID", "podkeeper has sufficient PID available", "KubeletHasInsufficientPID", "podkeeper has insufficient PID available"),
				cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "podkeeper is running pods"),
			},
			NodeInfo: corev1.NodeSystemInfo{
				KernelVersion: unix.ByteSliceToString(uts.Release[:]), OperatingSystem: goruntime.GOOS, Architecture: goruntime.GOARCH,
				ContainerRuntimeVersion: "containerd",
			},
		},
	}
	return n, nil
}

func describeNodeCommand() *cli.Command {
	return &cli.Command{
		Name:    "node",
		Aliases: []string{"nodes", "no"},
		Usage:   "show the node: conditions, capacity, allocatable, pods and their requests",
		Action: func(c *cli.Context) error {
			cl := client(c)
			n, err := cl.Node(c.Context)
			if err != nil {
				return err
			}
			pods, err := cl.Pods(c.Context)
			if err != nil {
				return err
			}
			describeNode(c.App.Writer, n, pods.Items, time.Now())
			return nil
		},
	}
}

// describeNode prints kubectl's describe node layout, shortened.
func describeNode(out io.Writer, n *corev1.Node, pods []corev1.Pod, now time.Time) {
	fmt.Fprintf(out, "Name:               %s\n", n.Name)
	var labels []string
	for k, v := range n.Labels {
		labels = append(labels, k+"="+v)
	}
	sort.Strings(labels)
	fmt.Fprintf(out, "Labels:             %s\n", strings.Join(labels, "\n                    "))
	fmt.Fprintf(out, "CreationTimestamp:  %s\n", n.CreationTimestamp.Format(time.RFC1123Z))
	fmt.Fprintln(out, "Conditions:")
	tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "  Type\tStatus\tLastTransitionTime\tReason\tMessage")
	fmt.Fprintln(tw, "  ----\t------\t------------------\t------\t-------")
	for _, c := range n.Status.Conditions {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", c.Type, c.Status, c.LastTransitionTime.Format(time.RFC1123Z), c.Reason, c.Message)
	}
	tw.Flush()
	for _, sec := range []struct {
		title string
		l     corev1.ResourceList
	}{{"Capacity", n.Status.Capacity}, {"Allocatable", n.Status.Allocatable}} {
		fmt.Fprintf(out, "%s:\n", sec.title)
		tw = tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods} {
			if q, ok := sec.l[name]; ok {
				fmt.Fprintf(tw, "  %s:\t%s\n", name, q.String())
			}
		}
		tw.Flush()
	}
	fmt.Fprintf(out, "System Info:\n  Kernel Version:             %s\n  Operating System:           %s\n  Architecture:               %s\n",
		n.Status.NodeInfo.KernelVersion, n.Status.NodeInfo.OperatingSystem, n.Status.NodeInfo.Architecture)
	var live []corev1.Pod
	for _, p := range pods {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			live = append(live, p)
		}
	}
	fmt.Fprintf(out, "Non-terminated Pods:          (%d in total)\n", len(live))
	tw = tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "  Namespace\tName\tCPU Requests\tCPU Limits\tMemory Requests\tMemory Limits\tAge")
	fmt.Fprintln(tw, "  ---------\t----\t------------\t----------\t---------------\t-------------\t---")
	var totReq, totLim [2]resource.Quantity
	alloc := n.Status.Allocatable
	pct := func(q resource.Quantity, name corev1.ResourceName) string {
		a, ok := alloc[name]
		if !ok || a.IsZero() {
			return q.String()
		}
		var p int64
		if name == corev1.ResourceCPU {
			p = q.MilliValue() * 100 / a.MilliValue()
		} else {
			p = q.Value() * 100 / a.Value()
		}
		return fmt.Sprintf("%s (%d%%)", q.String(), p)
	}
	for _, p := range live {
		req := podrunner.PodRequests(&p)
		lim := podLimits(&p)
		cells := []string{}
		for i, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			r, l := req[name], lim[name]
			totReq[i].Add(r)
			totLim[i].Add(l)
			cells = append(cells, pct(r, name), pct(l, name))
		}
		age := "<unknown>"
		if !p.CreationTimestamp.IsZero() {
			age = now.Sub(p.CreationTimestamp.Time).Round(time.Second).String()
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Namespace, p.Name, cells[0], cells[1], cells[2], cells[3], age)
	}
	tw.Flush()
	fmt.Fprintln(out, "Allocated resources:")
	tw = tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "  Resource\tRequests\tLimits")
	fmt.Fprintln(tw, "  --------\t--------\t------")
	fmt.Fprintf(tw, "  cpu\t%s\t%s\n", pct(totReq[0], corev1.ResourceCPU), pct(totLim[0], corev1.ResourceCPU))
	fmt.Fprintf(tw, "  memory\t%s\t%s\n", pct(totReq[1], corev1.ResourceMemory), pct(totLim[1], corev1.ResourceMemory))
	tw.Flush()
}

// podLimits is the pod's CPU and memory limits: pod-level ones where set, else the sum of its
// containers'.
func podLimits(p *corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, c := range p.Spec.Containers {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := c.Resources.Limits[name]; ok {
				v := out[name]
				v.Add(q)
				out[name] = v
			}
		}
	}
	if cgroup.PodLevelSet(p) {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := p.Spec.Resources.Limits[name]; ok {
				out[name] = q.DeepCopy()
			}
		}
	}
	return out
}

// nodeLabels are the node's labels: kubernetes.io/hostname, os and arch, as the kubelet sets them,
// and extra ("key=value,key2=value2", the kubelet's --node-labels), which may not change those
// three.
func nodeLabels(node, extra string) (map[string]string, error) {
	out := map[string]string{corev1.LabelHostname: node, corev1.LabelOSStable: goruntime.GOOS, corev1.LabelArchStable: goruntime.GOARCH}
	if strings.TrimSpace(extra) == "" {
		return out, nil
	}
	for _, kv := range strings.Split(extra, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return nil, fmt.Errorf("--node-labels: %q: want key=value", kv)
		}
		for _, msg := range validation.IsQualifiedName(k) {
			return nil, fmt.Errorf("--node-labels: key %q: %s", k, msg)
		}
		for _, msg := range validation.IsValidLabelValue(v) {
			return nil, fmt.Errorf("--node-labels: value %q of %s: %s", v, k, msg)
		}
		if fixed, ok := out[k]; ok && fixed != v {
			return nil, fmt.Errorf("--node-labels: %s is set by podkeeper (%s)", k, out[k])
		}
		out[k] = v
	}
	return out, nil
}

// sysctlAllowlist is what pods may set: the safe sysctls the running kernel namespaces and the
// allowed unsafe ones (--allowed-unsafe-sysctls), which must be namespaced.
func sysctlAllowlist(unsafe []string) (*podrunner.SysctlAllowlist, error) {
	major, minor := kernelVersion()
	a, err := podrunner.NewSysctlAllowlist(append(podrunner.SafeSysctls(major, minor), unsafe...))
	if err != nil {
		return nil, fmt.Errorf("--allowed-unsafe-sysctls: %w", err)
	}
	return a, nil
}

// kernelVersion is the running kernel's major and minor version (0, 0 when unknown: only the
// sysctls safe on any kernel are allowed then).
func kernelVersion() (int, int) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return 0, 0
	}
	var major, minor int
	_, _ = fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &major, &minor)
	return major, minor
}
