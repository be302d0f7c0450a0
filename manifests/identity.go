package manifests

import (
	"crypto/sha256"
	"encoding/hex"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Annotations set on every pod decoded from a manifest.
const (
	// AnnotationConfigHash holds the pod UID, as the kubelet sets it.
	AnnotationConfigHash = "kubernetes.io/config.hash"
	// AnnotationConfigSource is always "file".
	AnnotationConfigSource = "kubernetes.io/config.source"
	// AnnotationManifestPath is the path of the manifest file.
	AnnotationManifestPath = "podkeeper.io/manifest-path"
	// AnnotationManifestName is metadata.name as written in the manifest.
	AnnotationManifestName = "podkeeper.io/manifest-name"

	// SourceFile is the value of AnnotationConfigSource.
	SourceFile = "file"
)

// StaticPodName returns the name a static pod gets on a node: "<name>-<nodeName>".
func StaticPodName(name, nodeName string) string {
	return name + "-" + nodeName
}

// PodUID derives a pod's UID from the node, the manifest path and the
// normalised document (sorted-key JSON), as 32 hex characters of a SHA-256.
// Each part is length-prefixed so that no two different inputs collide by
// concatenation.
func PodUID(nodeName, path string, normalizedDoc []byte) types.UID {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(nodeName), []byte(path), normalizedDoc} {
		var n [8]byte
		l := uint64(len(part))
		for i := range n {
			n[i] = byte(l >> (8 * i))
		}
		h.Write(n[:])
		h.Write(part)
	}
	return types.UID(hex.EncodeToString(h.Sum(nil))[:32])
}

// setIdentity gives a validated pod its static-pod identity: node-suffixed
// name, namespace, node, UID, annotations and the kubelet's NoExecute
// toleration.
func setIdentity(pod *corev1.Pod, nodeName, path string, uid types.UID) {
	original := pod.Name
	pod.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"} // also for PodList items that omit it
	pod.Name = StaticPodName(original, nodeName)
	if pod.Namespace == "" {
		pod.Namespace = corev1.NamespaceDefault
	}
	pod.UID = uid
	pod.Spec.NodeName = nodeName
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[AnnotationConfigHash] = string(uid)
	pod.Annotations[AnnotationConfigSource] = SourceFile
	pod.Annotations[AnnotationManifestPath] = path
	pod.Annotations[AnnotationManifestName] = original

	tol := corev1.Toleration{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}
	for _, t := range pod.Spec.Tolerations {
		if t.MatchToleration(&tol) && t.TolerationSeconds == nil {
			return
		}
	}
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, tol)
}
