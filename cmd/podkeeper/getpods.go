package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/podkeeper/podkeeper/manifests"
	"github.com/podkeeper/podkeeper/podrunner/api"
)

// podFilter selects pods as `kubectl get pods [NAME] -n NS -l SELECTOR` does.
type podFilter struct {
	namespace string
	name      string // full or manifest name; empty: all
	selector  labels.Selector
}

func newPodFilter(namespace, name, selector string) (podFilter, error) {
	f := podFilter{namespace: namespace, name: name, selector: labels.Everything()}
	if selector != "" {
		s, err := labels.Parse(selector)
		if err != nil {
			return f, fmt.Errorf("-l %q: %w", selector, err)
		}
		f.selector = s
	}
	return f, nil
}

func (f podFilter) match(p *corev1.Pod) bool {
	if f.namespace != "" && p.Namespace != f.namespace {
		return false
	}
	if f.name != "" && p.Name != f.name && p.Annotations[manifests.AnnotationManifestName] != f.name {
		return false
	}
	return f.selector.Matches(labels.Set(p.Labels))
}

// apply returns the pods that match; a named pod that is not there is an error listing the
// pods that are (in the namespace asked for).
func (f podFilter) apply(items []corev1.Pod) ([]corev1.Pod, error) {
	var out []corev1.Pod
	var names []string
	for i := range items {
		p := &items[i]
		if f.namespace == "" || p.Namespace == f.namespace {
			names = append(names, p.Name)
		}
		if f.match(p) {
			out = append(out, *p)
		}
	}
	if f.name != "" && len(out) == 0 {
		if len(names) == 0 {
			return nil, fmt.Errorf("pod %s not found (no pods)", f.name)
		}
		return nil, fmt.Errorf("pod %s not found (pods: %s)", f.name, strings.Join(names, ", "))
	}
	return out, nil
}

// printPods writes pods in one of the output formats of `get pods`.
func printPods(w io.Writer, errw io.Writer, list *corev1.PodList, output string, allNamespaces bool, now time.Time) error {
	switch output {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(list)
	case "yaml":
		b, err := yaml.Marshal(list)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	case "name":
		for _, p := range list.Items {
			fmt.Fprintf(w, "pod/%s\n", p.Name)
		}
		return nil
	case "", "wide":
		if len(list.Items) == 0 {
			fmt.Fprintln(errw, "No resources found.")
			return nil
		}
		printPodTable(w, list.Items, output == "wide", allNamespaces, now)
		return nil
	}
	return fmt.Errorf("unknown output format %q (want wide, json, yaml or name)", output)
}

func getPodsAction(c *cli.Context) error {
	f, err := newPodFilter(c.String("namespace"), c.Args().First(), c.String("selector"))
	if err != nil {
		return err
	}
	cl := client(c)
	list, err := cl.Pods(c.Context)
	if err != nil {
		return err
	}
	if list.Items, err = f.apply(list.Items); err != nil {
		return err
	}
	out := c.String("output")
	if c.Bool("watch") {
		return watchPods(c.Context, cl, f, list.Items, out, c.Bool("all-namespaces"), c.Duration("watch-interval"), c.App.Writer)
	}
	if err := printPods(c.App.Writer, c.App.ErrWriter, list, out, c.Bool("all-namespaces"), time.Now()); err != nil {
		return err
	}
	if errs, err := cl.ManifestErrors(c.Context); err == nil {
		for _, e := range errs {
			fmt.Fprintf(c.App.ErrWriter, "warning: %s\n", e.Error)
		}
	}
	return nil
}

// watchPods prints the table, then one row each time a pod appears or its row changes (AGE
// aside), as `kubectl get pods -w` does, polling the agent every interval until ctx ends. A
// pod that goes away gets a last row with STATUS "Deleted". With -o name only names print.
func watchPods(ctx context.Context, cl *api.Client, f podFilter, first []corev1.Pod, output string, allNS bool, interval time.Duration, w io.Writer) error {
	if interval <= 0 {
		interval = time.Second
	}
	switch output {
	case "", "wide", "name":
	default:
		return fmt.Errorf("--watch prints tables or names (-o wide, -o name), not %q", output)
	}
	wp := &watchPrinter{w: w, wide: output == "wide", allNS: allNS, names: output == "name", last: map[string]string{}}
	wp.header(first, time.Now())
	for i := range first {
		wp.row(&first[i], time.Now(), false)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		list, err := cl.Pods(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		now := time.Now()
		present := map[string]bool{}
		for i := range list.Items {
			p := &list.Items[i]
			if !f.match(p) {
				continue
			}
			present[watchKey(p)] = true
			wp.row(p, now, false)
		}
		for k, prev := range wp.lastPods() {
			if !present[k] {
				wp.row(prev, now, true)
			}
		}
	}
}

func watchKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name + "/" + string(p.UID) }

// watchPrinter prints rows in fixed columns (the widths of the first table) so rows printed
// later line up with it.
type watchPrinter struct {
	w             io.Writer
	wide, allNS   bool
	names         bool
	widths        []int
	last          map[string]string // key -> row printed last (AGE excluded)
	pods          map[string]*corev1.Pod
	headerPrinted bool
}

func (wp *watchPrinter) cols() []string {
	cols := []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE"}
	if wp.allNS {
		cols = append([]string{"NAMESPACE"}, cols...)
	}
	if wp.wide {
		cols = append(cols, "IP", "NODE")
	}
	return cols
}

func (wp *watchPrinter) header(pods []corev1.Pod, now time.Time) {
	if wp.names {
		return
	}
	cols := wp.cols()
	wp.widths = make([]int, len(cols))
	for i, c := range cols {
		wp.widths[i] = len(c)
	}
	for i := range pods {
		for j, v := range podRow(&pods[i], wp.wide, wp.allNS, now) {
			if len(v) > wp.widths[j] {
				wp.widths[j] = len(v)
			}
		}
	}
	wp.print(cols)
}

func (wp *watchPrinter) print(vals []string) {
	var b strings.Builder
	for i, v := range vals {
		if i == len(vals)-1 {
			b.WriteString(v)
			break
		}
		b.WriteString(v)
		b.WriteString(strings.Repeat(" ", max(wp.widths[i]-len(v), 0)+3))
	}
	fmt.Fprintln(wp.w, strings.TrimRight(b.String(), " "))
}

func (wp *watchPrinter) lastPods() map[string]*corev1.Pod {
	out := map[string]*corev1.Pod{}
	for k, p := range wp.pods {
		out[k] = p
	}
	return out
}

// row prints p's row when it differs from the one printed last for it.
func (wp *watchPrinter) row(p *corev1.Pod, now time.Time, deleted bool) {
	if wp.pods == nil {
		wp.pods = map[string]*corev1.Pod{}
	}
	key := watchKey(p)
	vals := podRow(p, wp.wide, wp.allNS, now)
	statusCol := 2
	if wp.allNS {
		statusCol = 3
	}
	if deleted {
		vals[statusCol] = "Deleted"
		delete(wp.pods, key)
		delete(wp.last, key)
	} else {
		wp.pods[key] = p.DeepCopy()
	}
	ageCol := statusCol + 2
	sig := strings.Join(append(append([]string(nil), vals[:ageCol]...), vals[ageCol+1:]...), "\x00")
	if !deleted {
		if wp.last[key] == sig {
			return
		}
		wp.last[key] = sig
	}
	if wp.names {
		fmt.Fprintf(wp.w, "pod/%s\n", p.Name)
		return
	}
	wp.print(vals)
}
