package manifests

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Probe checks beyond validateProbe's (which each container's validation runs): what depends on
// the container (named ports) or on the kind of container (init, sidecar), as the API server does.

// validateProbeContext checks a container's probes against the container itself.
func validateProbeContext(c *corev1.Container, path *field.Path, restartableInit bool, isInit bool) field.ErrorList {
	var errs field.ErrorList
	probes := []struct {
		name string
		p    *corev1.Probe
	}{{"startupProbe", c.StartupProbe}, {"livenessProbe", c.LivenessProbe}, {"readinessProbe", c.ReadinessProbe}}
	if isInit && !restartableInit {
		return nil // validatePod refuses a plain init container's probes (and lifecycle)
	}
	for _, pr := range probes {
		if pr.p == nil {
			continue
		}
		if g := pr.p.HTTPGet; g != nil {
			errs = append(errs, probePortNamed(c, g.Port, path.Child(pr.name, "httpGet", "port"))...)
		}
		if t := pr.p.TCPSocket; t != nil {
			errs = append(errs, probePortNamed(c, t.Port, path.Child(pr.name, "tcpSocket", "port"))...)
		}
	}
	if p := c.ReadinessProbe; p != nil && p.TerminationGracePeriodSeconds != nil && *p.TerminationGracePeriodSeconds > 0 {
		errs = append(errs, field.Invalid(path.Child("readinessProbe", "terminationGracePeriodSeconds"), *p.TerminationGracePeriodSeconds, "must not be set for readinessProbes"))
	}
	return errs
}

// probePortNamed checks that a well-formed port name names one of the container's ports (a
// malformed one is validatePortRef's to report).
func probePortNamed(c *corev1.Container, port intstr.IntOrString, path *field.Path) field.ErrorList {
	if port.Type == intstr.Int || len(validation.IsValidPortName(port.StrVal)) > 0 {
		return nil
	}
	for _, cp := range c.Ports {
		if cp.Name == port.StrVal {
			return nil
		}
	}
	return field.ErrorList{field.Invalid(path, port.StrVal, fmt.Sprintf("no container port named %q", port.StrVal))}
}

// validatePodProbes checks the probes of every container of a pod in context.
func validatePodProbes(pod *corev1.Pod, spec *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		restartable := c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		errs = append(errs, validateProbeContext(c, spec.Child("initContainers").Index(i), restartable, true)...)
	}
	for i := range pod.Spec.Containers {
		errs = append(errs, validateProbeContext(&pod.Spec.Containers[i], spec.Child("containers").Index(i), false, false)...)
	}
	return errs
}
