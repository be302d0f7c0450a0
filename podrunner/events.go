package podrunner

import (
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Event types and the reasons podkeeper reports, named as the kubelet names them.
const (
	EventNormal  = corev1.EventTypeNormal
	EventWarning = corev1.EventTypeWarning

	ReasonPulling        = "Pulling"
	ReasonPulled         = "Pulled"
	ReasonCreated        = "Created"
	ReasonStarted        = "Started"
	ReasonKilling        = "Killing"
	ReasonBackOff        = "BackOff"
	ReasonFailed         = "Failed"
	ReasonSandboxChanged = "SandboxChanged"
	ReasonFailedMount    = "FailedMount"

	ReasonFailedToRetrieveImagePullSecret = "FailedToRetrieveImagePullSecret"
)

// Recorder keeps the recent events of every pod in memory, aggregating repeats the way the API
// server's event series do (count and last timestamp). Safe for concurrent use.
type Recorder struct {
	node  string
	max   int
	now   func() time.Time
	mu    sync.Mutex
	seq   int
	items []*corev1.Event // oldest first
}

// NewRecorder returns a recorder that keeps at most max events (oldest dropped first).
func NewRecorder(node string, max int) *Recorder {
	return &Recorder{node: node, max: max, now: time.Now}
}

// Eventf records an event about pod (container may be empty) with a printf-style message.
func (r *Recorder) Eventf(pod *corev1.Pod, container, typ, reason, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	now := metav1.NewTime(r.now())
	field := ""
	if container != "" {
		field = containerFieldPath(pod, container)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.items) - 1; i >= 0 && i >= len(r.items)-50; i-- {
		e := r.items[i]
		if e.InvolvedObject.UID == pod.UID && e.Type == typ && e.Reason == reason && e.Message == msg && e.InvolvedObject.FieldPath == field {
			e.Count++
			e.LastTimestamp = now
			// keep the list ordered by last timestamp
			r.items = append(append(r.items[:i:i], r.items[i+1:]...), e)
			return
		}
	}
	r.seq++
	e := &corev1.Event{
		TypeMeta: metav1.TypeMeta{Kind: "Event", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Name:              fmt.Sprintf("%s.%x", pod.Name, now.UnixNano()+int64(r.seq)),
			Namespace:         pod.Namespace,
			CreationTimestamp: now,
		},
		InvolvedObject: corev1.ObjectReference{
			Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, FieldPath: field,
		},
		Reason:         reason,
		Message:        msg,
		Type:           typ,
		Count:          1,
		FirstTimestamp: now,
		LastTimestamp:  now,
		Source:         corev1.EventSource{Component: "podkeeper", Host: r.node},
	}
	r.items = append(r.items, e)
	if len(r.items) > r.max {
		r.items = append([]*corev1.Event(nil), r.items[len(r.items)-r.max:]...)
	}
}

// Events returns copies of the recorded events, oldest first; only pod uid's when uid is set.
func (r *Recorder) Events(uid types.UID) []corev1.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]corev1.Event, 0, len(r.items))
	for _, e := range r.items {
		if uid == "" || e.InvolvedObject.UID == uid {
			out = append(out, *e.DeepCopy())
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].LastTimestamp.Before(&out[j].LastTimestamp) })
	return out
}

func containerFieldPath(pod *corev1.Pod, name string) string {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return "spec.initContainers{" + name + "}"
		}
	}
	return "spec.containers{" + name + "}"
}
