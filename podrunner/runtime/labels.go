package runtime

import (
	"strconv"
	"strings"
	"time"

	"github.com/podkeeper/podkeeper/podrunner"
)

// Labels on every containerd container podkeeper creates: they are the whole record of what runs.
// After a restart podkeeper rebuilds its view from them alone.
const (
	LabelPodUID        = "podkeeper.io/pod-uid"
	LabelPodName       = "podkeeper.io/pod-name"
	LabelPodNamespace  = "podkeeper.io/pod-namespace"
	LabelContainerName = "podkeeper.io/container-name"
	LabelKind          = "podkeeper.io/kind"
	LabelAttempt       = "podkeeper.io/restart-count"
	LabelSpecHash      = "podkeeper.io/spec-hash"
	LabelLogPath       = "podkeeper.io/log-path"
	LabelImageRef      = "podkeeper.io/image"
	LabelImageID       = "podkeeper.io/image-id"
	LabelStartedAt     = "podkeeper.io/started-at"
	LabelFinishedAt    = "podkeeper.io/finished-at"
	LabelExitCode      = "podkeeper.io/exit-code"
	LabelReason        = "podkeeper.io/reason"
	LabelMessage       = "podkeeper.io/message"
	LabelMessageMore   = "podkeeper.io/message-2" // the part of a message past what LabelMessage holds
	LabelGrace         = "podkeeper.io/grace-period"

	// shimGroupAnnotation makes the runc v2 shim serve every container of a pod from one shim
	// process (the value names the group: the pod's sandbox ID).
	shimGroupAnnotation = "io.containerd.runc.v2.group"
)

// recordFromLabels fills the label-derived fields of a record. Task state is added by the caller.
func recordFromLabels(id string, labels map[string]string) podrunner.ContainerRecord {
	r := podrunner.ContainerRecord{
		ID:           id,
		PodUID:       labels[LabelPodUID],
		PodName:      labels[LabelPodName],
		PodNamespace: labels[LabelPodNamespace],
		Name:         labels[LabelContainerName],
		Kind:         podrunner.ContainerKind(labels[LabelKind]),
		SpecHash:     labels[LabelSpecHash],
		Image:        labels[LabelImageRef],
		ImageID:      labels[LabelImageID],
		LogPath:      labels[LabelLogPath],
		Reason:       labels[LabelReason],
		Message:      messageFromLabels(labels),
	}
	if g, err := strconv.ParseInt(labels[LabelGrace], 10, 64); err == nil {
		r.GracePeriod = time.Duration(g) * time.Second
	} else {
		r.GracePeriod = 30 * time.Second
	}
	if ips := labels[LabelPodIPs]; ips != "" {
		r.PodIPs = strings.Split(ips, ",")
	}
	r.Attempt, _ = strconv.Atoi(labels[LabelAttempt])
	r.StartedAt = parseTime(labels[LabelStartedAt])
	r.FinishedAt = parseTime(labels[LabelFinishedAt])
	if v, ok := labels[LabelExitCode]; ok {
		c, _ := strconv.ParseInt(v, 10, 32)
		r.ExitCode = int32(c)
	}
	return r
}

func parseTime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// exitReason is the kubelet's reason for a terminated container: Completed for exit 0, else Error.
func exitReason(code int32) string {
	if code == 0 {
		return "Completed"
	}
	return "Error"
}
