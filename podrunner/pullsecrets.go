package podrunner

import (
	corev1 "k8s.io/api/core/v1"
)

// PullSecrets resolves a pod's imagePullSecrets through lookup: the Secrets found, in the pod's
// order, and the names that are missing or of a type that carries no registry credentials
// (the kubelet pulls anyway and warns about them). A nil lookup finds nothing.
func PullSecrets(lookup ConfigLookup, pod *corev1.Pod) (found []*corev1.Secret, missing []string) {
	for _, ref := range pod.Spec.ImagePullSecrets {
		if ref.Name == "" {
			continue
		}
		var s *corev1.Secret
		ok := false
		if lookup != nil {
			s, ok = lookup.Secret(pod.Namespace, ref.Name)
		}
		if !ok || s == nil || (s.Type != corev1.SecretTypeDockerConfigJson && s.Type != corev1.SecretTypeDockercfg) {
			missing = append(missing, ref.Name)
			continue
		}
		found = append(found, s)
	}
	return found, missing
}
