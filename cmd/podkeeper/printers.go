package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// age prints a duration since t as kubectl does ("5s", "3m2s", "4h", "2d").
func age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// podStatusReason is the STATUS column of `kubectl get pods`.
func podStatusReason(p *corev1.Pod) string {
	reason := string(p.Status.Phase)
	if p.Status.Reason != "" {
		reason = p.Status.Reason
	}
	initializing := false
	for i, cs := range p.Status.InitContainerStatuses {
		switch {
		case isSidecar(p, cs.Name) && (cs.Started != nil && *cs.Started || cs.State.Running != nil):
			continue // a started sidecar is done initialising, as kubectl counts it
		case cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0:
			continue
		case cs.State.Terminated != nil:
			if cs.State.Terminated.Reason != "" {
				reason = "Init:" + cs.State.Terminated.Reason
			} else {
				reason = fmt.Sprintf("Init:ExitCode:%d", cs.State.Terminated.ExitCode)
			}
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "" && cs.State.Waiting.Reason != "PodInitializing":
			reason = "Init:" + cs.State.Waiting.Reason
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, len(p.Spec.InitContainers))
		}
		initializing = true
		break
	}
	if !initializing {
		hasRunning := false
		for i := len(p.Status.ContainerStatuses) - 1; i >= 0; i-- {
			cs := p.Status.ContainerStatuses[i]
			switch {
			case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
				reason = cs.State.Waiting.Reason
			case cs.State.Terminated != nil && cs.State.Terminated.Reason != "":
				reason = cs.State.Terminated.Reason
			case cs.State.Terminated != nil:
				reason = fmt.Sprintf("ExitCode:%d", cs.State.Terminated.ExitCode)
			case cs.Ready && cs.State.Running != nil:
				hasRunning = true
			}
		}
		if reason == "Completed" && hasRunning {
			reason = "Running"
		}
	}
	if p.DeletionTimestamp != nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
		reason = "Terminating"
	}
	return reason
}

// restarts is the RESTARTS column: the sum of restart counts, with how long ago the last
// container terminated ("2 (5m ago)").
func restarts(p *corev1.Pod, now time.Time) string {
	n := int32(0)
	var last time.Time
	for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		n += cs.RestartCount
		if t := cs.LastTerminationState.Terminated; t != nil && t.FinishedAt.After(last) {
			last = t.FinishedAt.Time
		}
	}
	if n > 0 && !last.IsZero() {
		return fmt.Sprintf("%d (%s ago)", n, duration.HumanDuration(now.Sub(last)))
	}
	return fmt.Sprint(n)
}

// readyCount is the READY column: ready/total of the app containers and the sidecars (init
// containers with restartPolicy Always), as kubectl counts them.
func readyCount(p *corev1.Pod) string {
	ready, total := 0, len(p.Spec.Containers)
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			total++
		}
	}
	for _, cs := range p.Status.InitContainerStatuses {
		if cs.Ready && isSidecar(p, cs.Name) {
			ready++
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Ready {
			ready++
		}
	}
	return fmt.Sprintf("%d/%d", ready, total)
}

// isSidecar reports whether init container name of p is a sidecar (restartPolicy Always).
func isSidecar(p *corev1.Pod, name string) bool {
	for _, c := range p.Spec.InitContainers {
		if c.Name == name {
			return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		}
	}
	return false
}

// printPodTable prints pods as `kubectl get pods` does (wide adds IP and NODE).
func printPodTable(out io.Writer, pods []corev1.Pod, wide, allNamespaces bool, now time.Time) {
	tw := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	defer tw.Flush()
	cols := []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE"}
	if allNamespaces {
		cols = append([]string{"NAMESPACE"}, cols...)
	}
	if wide {
		cols = append(cols, "IP", "NODE")
	}
	fmt.Fprintln(tw, strings.Join(cols, "\t"))
	for i := range pods {
		fmt.Fprintln(tw, strings.Join(podRow(&pods[i], wide, allNamespaces, now), "\t"))
	}
}

// podRow is one pod's row of the `get pods` table.
func podRow(p *corev1.Pod, wide, allNamespaces bool, now time.Time) []string {
	row := []string{p.Name, readyCount(p), podStatusReason(p), restarts(p, now), age(p.CreationTimestamp, now)}
	if allNamespaces {
		row = append([]string{p.Namespace}, row...)
	}
	if wide {
		ip := p.Status.PodIP
		if ip == "" {
			ip = "<none>"
		}
		row = append(row, ip, p.Spec.NodeName)
	}
	return row
}

// describePod prints a pod the way `kubectl describe pod` lays it out.
func describePod(out io.Writer, p *corev1.Pod, events []corev1.Event, now time.Time) {
	w := tabwriter.NewWriter(out, 0, 8, 1, ' ', 0)
	defer w.Flush()
	line := func(indent int, key, format string, args ...any) {
		fmt.Fprintf(w, "%s%s:\t%s\n", strings.Repeat("  ", indent), key, fmt.Sprintf(format, args...))
	}
	line(0, "Name", "%s", p.Name)
	line(0, "Namespace", "%s", p.Namespace)
	prio := int32(0)
	if p.Spec.Priority != nil {
		prio = *p.Spec.Priority
	}
	line(0, "Priority", "%d", prio)
	node := p.Spec.NodeName
	if p.Status.HostIP != "" {
		node += "/" + p.Status.HostIP
	}
	line(0, "Node", "%s", node)
	if p.Status.StartTime != nil {
		line(0, "Start Time", "%s", p.Status.StartTime.Format(time.RFC1123Z))
	}
	printMap(w, "Labels", p.Labels)
	printMap(w, "Annotations", p.Annotations)
	status := string(p.Status.Phase)
	if p.DeletionTimestamp != nil {
		status = "Terminating (lasts " + duration.HumanDuration(now.Sub(p.DeletionTimestamp.Time)) + ")"
		if p.DeletionGracePeriodSeconds != nil {
			line(0, "Termination Grace Period", "%ds", *p.DeletionGracePeriodSeconds)
		}
	}
	line(0, "Status", "%s", status)
	ip := p.Status.PodIP
	line(0, "IP", "%s", ip)
	if len(p.Spec.InitContainers) > 0 {
		fmt.Fprintln(w, "Init Containers:")
		for i := range p.Spec.InitContainers {
			describeContainer(w, &p.Spec.InitContainers[i], findStatus(p.Status.InitContainerStatuses, p.Spec.InitContainers[i].Name))
		}
	}
	fmt.Fprintln(w, "Containers:")
	for i := range p.Spec.Containers {
		describeContainer(w, &p.Spec.Containers[i], findStatus(p.Status.ContainerStatuses, p.Spec.Containers[i].Name))
	}
	fmt.Fprintln(w, "Conditions:")
	fmt.Fprintln(w, "  Type\tStatus")
	for _, c := range p.Status.Conditions {
		fmt.Fprintf(w, "  %s\t%s\n", c.Type, c.Status)
	}
	fmt.Fprintln(w, "Volumes:")
	if len(p.Spec.Volumes) == 0 {
		fmt.Fprintln(w, "  <none>")
	}
	for _, v := range p.Spec.Volumes {
		fmt.Fprintf(w, "  %s:\n", v.Name)
		switch {
		case v.HostPath != nil:
			typ := ""
			if v.HostPath.Type != nil {
				typ = string(*v.HostPath.Type)
			}
			fmt.Fprintf(w, "    Type:\tHostPath (bare host directory volume)\n    Path:\t%s\n    HostPathType:\t%s\n", v.HostPath.Path, typ)
		case v.EmptyDir != nil:
			fmt.Fprintf(w, "    Type:\tEmptyDir (a temporary directory that shares a pod's lifetime)\n    Medium:\t%s\n", v.EmptyDir.Medium)
		default:
			fmt.Fprintln(w, "    Type:\t(other)")
		}
	}
	line(0, "QoS Class", "%s", p.Status.QOSClass)
	line(0, "Node-Selectors", "%s", "<none>")
	tol := []string{}
	for _, t := range p.Spec.Tolerations {
		s := t.Key
		if t.Operator == corev1.TolerationOpExists && t.Key == "" {
			s = ""
		}
		s += ":" + string(t.Effect)
		if t.Operator == corev1.TolerationOpExists {
			s += " op=Exists"
		}
		tol = append(tol, s)
	}
	if len(tol) == 0 {
		tol = []string{"<none>"}
	}
	line(0, "Tolerations", "%s", strings.Join(tol, "\n\t"))
	w.Flush()
	printEvents(out, events, now)
}

func findStatus(l []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	for i := range l {
		if l[i].Name == name {
			return &l[i]
		}
	}
	return nil
}

func printMap(w io.Writer, key string, m map[string]string) {
	if len(m) == 0 {
		fmt.Fprintf(w, "%s:\t<none>\n", key)
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		sep := "="
		if key == "Annotations" {
			sep = ": "
		}
		if i == 0 {
			fmt.Fprintf(w, "%s:\t%s%s%s\n", key, k, sep, m[k])
		} else {
			fmt.Fprintf(w, "\t%s%s%s\n", k, sep, m[k])
		}
	}
}

func describeState(w io.Writer, title string, s corev1.ContainerState) {
	switch {
	case s.Running != nil:
		fmt.Fprintf(w, "    %s:\tRunning\n      Started:\t%s\n", title, s.Running.StartedAt.Format(time.RFC1123Z))
	case s.Terminated != nil:
		t := s.Terminated
		fmt.Fprintf(w, "    %s:\tTerminated\n      Reason:\t%s\n", title, t.Reason)
		if t.Message != "" {
			fmt.Fprintf(w, "      Message:\t%s\n", t.Message)
		}
		fmt.Fprintf(w, "      Exit Code:\t%d\n      Started:\t%s\n      Finished:\t%s\n", t.ExitCode, t.StartedAt.Format(time.RFC1123Z), t.FinishedAt.Format(time.RFC1123Z))
	case s.Waiting != nil:
		fmt.Fprintf(w, "    %s:\tWaiting\n      Reason:\t%s\n", title, s.Waiting.Reason)
		if s.Waiting.Message != "" {
			fmt.Fprintf(w, "      Message:\t%s\n", s.Waiting.Message)
		}
	default:
		fmt.Fprintf(w, "    %s:\t<none>\n", title)
	}
}

func describeContainer(w io.Writer, c *corev1.Container, cs *corev1.ContainerStatus) {
	fmt.Fprintf(w, "  %s:\n", c.Name)
	if cs != nil {
		fmt.Fprintf(w, "    Container ID:\t%s\n", cs.ContainerID)
	}
	fmt.Fprintf(w, "    Image:\t%s\n", c.Image)
	if cs != nil {
		fmt.Fprintf(w, "    Image ID:\t%s\n", cs.ImageID)
	}
	ports := []string{}
	for _, p := range c.Ports {
		ports = append(ports, fmt.Sprintf("%d/%s", p.ContainerPort, p.Protocol))
	}
	if len(ports) == 0 {
		ports = []string{"<none>"}
	}
	fmt.Fprintf(w, "    Port:\t%s\n", strings.Join(ports, ", "))
	for _, l := range []struct {
		k string
		v []string
	}{{"Command", c.Command}, {"Args", c.Args}} {
		if len(l.v) > 0 {
			fmt.Fprintf(w, "    %s:\n", l.k)
			for _, a := range l.v {
				fmt.Fprintf(w, "      %s\n", a)
			}
		}
	}
	if cs != nil {
		describeState(w, "State", cs.State)
		if cs.LastTerminationState.Terminated != nil {
			describeState(w, "Last State", cs.LastTerminationState)
		}
		fmt.Fprintf(w, "    Ready:\t%t\n    Restart Count:\t%d\n", cs.Ready, cs.RestartCount)
	}
	describeProbes(w, *c)
	if len(c.Env) == 0 {
		fmt.Fprintln(w, "    Environment:\t<none>")
	} else {
		fmt.Fprintln(w, "    Environment:")
		for _, e := range c.Env {
			v := e.Value
			if e.ValueFrom != nil {
				v = envSource(e.ValueFrom)
			}
			fmt.Fprintf(w, "      %s:\t%s\n", e.Name, v)
		}
	}
	if len(c.VolumeMounts) == 0 {
		fmt.Fprintln(w, "    Mounts:\t<none>")
	} else {
		fmt.Fprintln(w, "    Mounts:")
		for _, m := range c.VolumeMounts {
			mode := "rw"
			if m.ReadOnly {
				mode = "ro"
			}
			fmt.Fprintf(w, "      %s from %s (%s)\n", m.MountPath, m.Name, mode)
		}
	}
}

// printEvents prints the Events table of describe: Type Reason Age From Message.
func printEvents(out io.Writer, events []corev1.Event, now time.Time) {
	if len(events) == 0 {
		fmt.Fprintln(out, "Events:\t<none>")
		return
	}
	fmt.Fprintln(out, "Events:")
	tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	defer tw.Flush()
	fmt.Fprintln(tw, "  Type\tReason\tAge\tFrom\tMessage")
	fmt.Fprintln(tw, "  ----\t------\t----\t----\t-------")
	for _, e := range events {
		a := age(e.LastTimestamp, now)
		if e.Count > 1 {
			a = fmt.Sprintf("%s (x%d over %s)", a, e.Count, age(e.FirstTimestamp, now))
		}
		from := e.Source.Component
		if e.Source.Host != "" {
			from += ", " + e.Source.Host
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", e.Type, e.Reason, a, from, strings.TrimSpace(e.Message))
	}
}

// envSource words an env var's valueFrom as kubectl describe does.
func envSource(f *corev1.EnvVarSource) string {
	switch {
	case f.FieldRef != nil:
		return fmt.Sprintf("(%s:%s)", orDefault(f.FieldRef.APIVersion, "v1"), f.FieldRef.FieldPath)
	case f.ResourceFieldRef != nil:
		return fmt.Sprintf("%s (%s:%s)", f.ResourceFieldRef.Divisor.String(), f.ResourceFieldRef.ContainerName, f.ResourceFieldRef.Resource)
	case f.ConfigMapKeyRef != nil:
		return fmt.Sprintf("<set to the key '%s' of config map '%s'>", f.ConfigMapKeyRef.Key, f.ConfigMapKeyRef.Name)
	case f.SecretKeyRef != nil:
		return fmt.Sprintf("<set to the key '%s' in secret '%s'>", f.SecretKeyRef.Key, f.SecretKeyRef.Name)
	}
	return "(from a source)"
}

func orDefault(v, d string) string {
	if v == "" {
		return d
	}
	return v
}

// describeProbe words a probe as kubectl describe does:
// "http-get http://127.0.0.1:8480/ delay=0s timeout=1s period=10s #success=1 #failure=3".
func describeProbe(p *corev1.Probe) string {
	var what string
	switch {
	case p.HTTPGet != nil:
		scheme := strings.ToLower(string(p.HTTPGet.Scheme))
		if scheme == "" {
			scheme = "http"
		}
		what = fmt.Sprintf("http-get %s://%s:%s%s", scheme, p.HTTPGet.Host, p.HTTPGet.Port.String(), p.HTTPGet.Path)
	case p.TCPSocket != nil:
		what = fmt.Sprintf("tcp-socket %s:%s", p.TCPSocket.Host, p.TCPSocket.Port.String())
	case p.GRPC != nil:
		what = fmt.Sprintf("grpc <pod>:%d %s", p.GRPC.Port, orDefault(ptrString(p.GRPC.Service), ""))
	case p.Exec != nil:
		what = fmt.Sprintf("exec %v", p.Exec.Command)
	default:
		what = "unknown"
	}
	num := func(v, d int32) int32 {
		if v == 0 {
			return d
		}
		return v
	}
	return fmt.Sprintf("%s delay=%ds timeout=%ds period=%ds #success=%d #failure=%d", strings.TrimSpace(what), p.InitialDelaySeconds,
		num(p.TimeoutSeconds, 1), num(p.PeriodSeconds, 10), num(p.SuccessThreshold, 1), num(p.FailureThreshold, 3))
}

func ptrString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
