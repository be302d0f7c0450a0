package podrunner

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The manifest of a running pod that became unusable: the pod keeps running on its last good
// spec, and the problem is shown on it.
const (
	// AnnotationManifestError is set by the desired-state source on a pod whose manifest's current
	// content is rejected while its last good spec keeps running (manifests.AnnotationManifestError).
	AnnotationManifestError = "podkeeper.io/manifest-error"
	// ConditionManifestValid is the pod condition podkeeper adds while the pod's manifest is
	// rejected (status False, reason ReasonManifestInvalid). It is absent while the manifest is fine.
	ConditionManifestValid corev1.PodConditionType = "podkeeper.io/ManifestValid"
	// ReasonManifestInvalid is the reason of the Warning event recorded when a running pod's
	// manifest becomes invalid (or its error changes), and of the condition.
	ReasonManifestInvalid = "ManifestInvalid"
	// ReasonManifestFixed is the Normal event recorded when the error clears without a new pod
	// (e.g. the file was restored to the content that runs).
	ReasonManifestFixed = "ManifestFixed"
)

// UpdateConfig hands the manager the ConfigMaps and Secrets of the latest desired state. Containers
// started from now on resolve configMapKeyRef, secretKeyRef and envFrom (and volumes) through it.
// Call it before Update with the same snapshot's pods. Never blocks; l may be nil.
func (m *Manager) UpdateConfig(l ConfigLookup) {
	m.config.Store(&configHolder{l})
}

// ConfigLookup returns the latest lookup given to UpdateConfig (Config.Lookup before the first).
func (m *Manager) ConfigLookup() ConfigLookup {
	if h := m.config.Load(); h != nil {
		return h.l
	}
	return m.cfg.Lookup
}

type configHolder struct{ l ConfigLookup }

// noteManifestError records an event when the manifest error of a running pod changes between
// its old and new desired spec (same UID).
func (m *Manager) noteManifestError(old, next *corev1.Pod) {
	was, now := old.Annotations[AnnotationManifestError], next.Annotations[AnnotationManifestError]
	switch {
	case now == was:
	case now != "":
		m.log.Warn("manifest of a running pod is rejected; the pod keeps running on its last good spec",
			"pod", next.Namespace+"/"+next.Name, "err", now)
		m.rec.Eventf(next, "", EventWarning, ReasonManifestInvalid, "Manifest rejected, the pod keeps running its last good spec: %s", now)
	default:
		m.rec.Eventf(next, "", EventNormal, ReasonManifestFixed, "Manifest is valid again")
	}
}

// withManifestCondition adds ConditionManifestValid=False to a pod's status while its manifest is
// rejected.
func withManifestCondition(p *corev1.Pod) {
	msg := p.Annotations[AnnotationManifestError]
	if msg == "" {
		return
	}
	for _, c := range p.Status.Conditions {
		if c.Type == ConditionManifestValid {
			return
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
		Type: ConditionManifestValid, Status: corev1.ConditionFalse, Reason: ReasonManifestInvalid,
		Message: msg, LastTransitionTime: metav1.Now(),
	})
}
