package manifests

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	supportedRestartPolicies = []corev1.RestartPolicy{
		corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever,
	}
	supportedProtocols = []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP}
)

// validatePod checks a defaulted pod (before identity is set) and returns
// every problem found. nodeName is needed to check the full static name.
func validatePod(pod *corev1.Pod, nodeName string) field.ErrorList {
	var errs field.ErrorList
	meta := field.NewPath("metadata")

	name := meta.Child("name")
	switch {
	case pod.Name == "":
		errs = append(errs, field.Required(name, ""))
	default:
		if msgs := validation.IsDNS1123Subdomain(pod.Name); len(msgs) > 0 {
			for _, m := range msgs {
				errs = append(errs, field.Invalid(name, pod.Name, m))
			}
		} else {
			full := StaticPodName(pod.Name, nodeName)
			for _, m := range validation.IsDNS1123Subdomain(full) {
				errs = append(errs, field.Invalid(name, pod.Name,
					fmt.Sprintf("static pod name %q (<name>-<node>) is invalid: %s", full, m)))
			}
		}
	}
	if pod.Namespace != "" {
		for _, m := range validation.IsDNS1123Label(pod.Namespace) {
			errs = append(errs, field.Invalid(meta.Child("namespace"), pod.Namespace, m))
		}
	}

	spec := field.NewPath("spec")
	if len(pod.Spec.Containers) == 0 {
		errs = append(errs, field.Required(spec.Child("containers"), "at least one container is required"))
	}
	names := sets.New[string]()
	for i := range pod.Spec.InitContainers {
		errs = append(errs, validateContainer(&pod.Spec.InitContainers[i], spec.Child("initContainers").Index(i), names)...)
	}
	for i := range pod.Spec.Containers {
		errs = append(errs, validateContainer(&pod.Spec.Containers[i], spec.Child("containers").Index(i), names)...)
	}
	errs = append(errs, validatePodProbes(pod, spec)...)

	if !slices.Contains(supportedRestartPolicies, pod.Spec.RestartPolicy) {
		errs = append(errs, field.NotSupported(spec.Child("restartPolicy"), pod.Spec.RestartPolicy, supportedRestartPolicies))
	}
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		errs = append(errs, field.Invalid(spec.Child("terminationGracePeriodSeconds"), *g, "must be greater than or equal to 0"))
	}
	return errs
}

// validateContainer checks one container; names collects the container
// names seen so far in the pod (init and app containers share one space).
func validateContainer(c *corev1.Container, path *field.Path, names sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	name := path.Child("name")
	switch {
	case c.Name == "":
		errs = append(errs, field.Required(name, ""))
	case names.Has(c.Name):
		errs = append(errs, field.Duplicate(name, c.Name))
	default:
		for _, m := range validation.IsDNS1123Label(c.Name) {
			errs = append(errs, field.Invalid(name, c.Name, m))
		}
	}
	names.Insert(c.Name)

	if c.Image == "" {
		errs = append(errs, field.Required(path.Child("image"), ""))
	}
	for i, p := range c.Ports {
		pp := path.Child("ports").Index(i)
		for _, m := range validation.IsValidPortNum(int(p.ContainerPort)) {
			errs = append(errs, field.Invalid(pp.Child("containerPort"), p.ContainerPort, m))
		}
		if p.HostPort != 0 {
			for _, m := range validation.IsValidPortNum(int(p.HostPort)) {
				errs = append(errs, field.Invalid(pp.Child("hostPort"), p.HostPort, m))
			}
		}
		if !slices.Contains(supportedProtocols, p.Protocol) {
			errs = append(errs, field.NotSupported(pp.Child("protocol"), p.Protocol, supportedProtocols))
		}
	}
	return errs
}
