// Package metrics holds podkeeper's Prometheus metrics and the HTTP listener that serves them
// (`podkeeper run --metrics-address`). The collectors are package variables so any part of the
// agent (workers, runtime, probes, eviction) records into them without wiring; all of them are
// registered in Registry, which Handler serves. Names follow Prometheus conventions with the
// podkeeper_ prefix; durations are in seconds.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	corev1 "k8s.io/api/core/v1"
)

// Registry holds every podkeeper metric plus the Go runtime and process collectors
// (go_goroutines, process_resident_memory_bytes, ...).
var Registry = prometheus.NewRegistry()

var (
	// SyncDuration is the time one pod worker's sync (plan and act) takes.
	SyncDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "podkeeper_pod_sync_duration_seconds",
		Help:    "Duration of one pod worker sync: plan plus the actions it ran.",
		Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	})
	// PodStartDuration is the time from a pod first seen in the manifests to all its containers
	// running (observed once per pod UID), image pulls and init containers included.
	PodStartDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "podkeeper_pod_start_duration_seconds",
		Help:    "Time from a pod's manifest being seen to all its containers running.",
		Buckets: []float64{.1, .25, .5, 1, 2, 3, 5, 8, 15, 30, 60, 120, 300},
	})
	// ImagePullDuration is the duration of registry pulls by result (success, error).
	ImagePullDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "podkeeper_image_pull_duration_seconds",
		Help:    "Duration of image pulls from registries, by result.",
		Buckets: []float64{.1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600},
	}, []string{"result"})
	// ProbeResults counts probe outcomes; probe_type is liveness, readiness or startup and
	// result is success, failure or unknown. For the probes package to record into.
	ProbeResults = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "podkeeper_probe_total",
		Help: "Probe runs by probe type and result.",
	}, []string{"probe_type", "result"})
	// ProbeDuration is the duration of one probe run, by probe_type.
	ProbeDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "podkeeper_probe_duration_seconds",
		Help:    "Duration of one probe run, by probe type.",
		Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"probe_type"})
	// Evictions counts pods evicted, by the eviction signal (memory.available, nodefs.available, ...).
	Evictions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "podkeeper_evictions_total",
		Help: "Pods evicted, by eviction signal.",
	}, []string{"eviction_signal"})
	// ManagedContainerdRestarts counts the managed containerd (--containerd managed) started
	// again after it exited on its own (a crash, the OOM killer).
	ManagedContainerdRestarts = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "podkeeper_managed_containerd_restarts_total",
		Help: "Times the managed containerd was started again after it exited on its own.",
	})
	// TasksLost counts container tasks that vanished from containerd with their exit unrecorded
	// (their runc shim died), recorded as exits from containerd's events.
	TasksLost = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "podkeeper_container_tasks_lost_total",
		Help: "Container tasks gone from containerd with their runc shim, recorded as exits.",
	})
)

func init() {
	Registry.MustRegister(SyncDuration, PodStartDuration, ImagePullDuration, ProbeResults, ProbeDuration, Evictions,
		ManagedContainerdRestarts, TasksLost,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
}

// ObserveImagePull records one registry pull.
func ObserveImagePull(d time.Duration, err error) {
	result := "success"
	if err != nil {
		result = "error"
	}
	ImagePullDuration.WithLabelValues(result).Observe(d.Seconds())
}

// PodLister returns the pods with their current status.
type PodLister func() []*corev1.Pod

// podCollector reports gauges computed from the pods' status at scrape time.
type podCollector struct {
	list     PodLister
	pods     *prometheus.Desc
	restarts *prometheus.Desc
	ready    *prometheus.Desc
}

// NewPodCollector returns a collector of podkeeper_pods{phase} (every phase, zeros included),
// podkeeper_container_restarts{namespace,pod,container} and podkeeper_container_ready.
func NewPodCollector(list PodLister) prometheus.Collector {
	return &podCollector{
		list:     list,
		pods:     prometheus.NewDesc("podkeeper_pods", "Pods by phase.", []string{"phase"}, nil),
		restarts: prometheus.NewDesc("podkeeper_container_restarts", "Restart count of each container of each pod.", []string{"namespace", "pod", "container"}, nil),
		ready:    prometheus.NewDesc("podkeeper_container_ready", "1 when the container is ready.", []string{"namespace", "pod", "container"}, nil),
	}
}

func (c *podCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.pods
	ch <- c.restarts
	ch <- c.ready
}

// Phases lists the pod phases podkeeper_pods always reports.
var Phases = []corev1.PodPhase{corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed, corev1.PodUnknown}

func (c *podCollector) Collect(ch chan<- prometheus.Metric) {
	counts := map[corev1.PodPhase]int{}
	for _, p := range c.list() {
		phase := p.Status.Phase
		if phase == "" {
			phase = corev1.PodPending
		}
		counts[phase]++
		statuses := append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
		for _, cs := range statuses {
			ch <- prometheus.MustNewConstMetric(c.restarts, prometheus.GaugeValue, float64(cs.RestartCount), p.Namespace, p.Name, cs.Name)
			ready := 0.0
			if cs.Ready {
				ready = 1
			}
			ch <- prometheus.MustNewConstMetric(c.ready, prometheus.GaugeValue, ready, p.Namespace, p.Name, cs.Name)
		}
	}
	for _, ph := range Phases {
		ch <- prometheus.MustNewConstMetric(c.pods, prometheus.GaugeValue, float64(counts[ph]), string(ph))
	}
}
