package manifests

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// defaultProbe fills in a probe's defaults as the API server does: period 10 s, timeout 1 s,
// success and failure thresholds 1 and 3, HTTP scheme and path.
func defaultProbe(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	if g := p.HTTPGet; g != nil {
		if g.Scheme == "" {
			g.Scheme = corev1.URISchemeHTTP
		}
		if g.Path == "" {
			g.Path = "/"
		}
	}
}

func defaultProbes(c *corev1.Container) {
	defaultProbe(c.StartupProbe)
	defaultProbe(c.LivenessProbe)
	defaultProbe(c.ReadinessProbe)
}

// validateProbes checks a container's probes as the API server would.
func validateProbes(c *corev1.Container, path *field.Path, restartableInit bool, isInit bool) field.ErrorList {
	var errs field.ErrorList
	if isInit && !restartableInit {
		for _, pr := range []struct {
			name string
			p    *corev1.Probe
		}{{"startupProbe", c.StartupProbe}, {"livenessProbe", c.LivenessProbe}, {"readinessProbe", c.ReadinessProbe}} {
			if pr.p != nil {
				errs = append(errs, field.Forbidden(path.Child(pr.name), "may not be set for init containers without restartPolicy=Always"))
			}
		}
		return errs
	}
	errs = append(errs, validateProbe(c, c.StartupProbe, path.Child("startupProbe"), true)...)
	errs = append(errs, validateProbe(c, c.LivenessProbe, path.Child("livenessProbe"), true)...)
	errs = append(errs, validateProbe(c, c.ReadinessProbe, path.Child("readinessProbe"), false)...)
	if p := c.ReadinessProbe; p != nil && p.TerminationGracePeriodSeconds != nil {
		errs = append(errs, field.Invalid(path.Child("readinessProbe", "terminationGracePeriodSeconds"), *p.TerminationGracePeriodSeconds, "must not be set for readinessProbes"))
	}
	return errs
}

func validateProbe(c *corev1.Container, p *corev1.Probe, path *field.Path, successMustBeOne bool) field.ErrorList {
	if p == nil {
		return nil
	}
	var errs field.ErrorList
	positive := func(name string, v int32) {
		if v < 1 {
			errs = append(errs, field.Invalid(path.Child(name), v, "must be greater than or equal to 1"))
		}
	}
	if p.InitialDelaySeconds < 0 {
		errs = append(errs, field.Invalid(path.Child("initialDelaySeconds"), p.InitialDelaySeconds, "must be greater than or equal to 0"))
	}
	positive("timeoutSeconds", p.TimeoutSeconds)
	positive("periodSeconds", p.PeriodSeconds)
	positive("successThreshold", p.SuccessThreshold)
	positive("failureThreshold", p.FailureThreshold)
	if successMustBeOne && p.SuccessThreshold != 1 {
		errs = append(errs, field.Invalid(path.Child("successThreshold"), p.SuccessThreshold, "must be 1"))
	}
	if g := p.TerminationGracePeriodSeconds; g != nil && *g <= 0 {
		errs = append(errs, field.Invalid(path.Child("terminationGracePeriodSeconds"), *g, "must be greater than 0"))
	}
	h := p.ProbeHandler
	n := 0
	if h.Exec != nil {
		n++
		if len(h.Exec.Command) == 0 {
			errs = append(errs, field.Required(path.Child("exec", "command"), ""))
		}
	}
	if h.HTTPGet != nil {
		n++
		errs = append(errs, validateProbePort(c, h.HTTPGet.Port, path.Child("httpGet", "port"))...)
		if s := strings.ToUpper(string(h.HTTPGet.Scheme)); s != "HTTP" && s != "HTTPS" {
			errs = append(errs, field.NotSupported(path.Child("httpGet", "scheme"), h.HTTPGet.Scheme, []string{"HTTP", "HTTPS"}))
		}
		for i, hd := range h.HTTPGet.HTTPHeaders {
			for _, m := range validation.IsHTTPHeaderName(hd.Name) {
				errs = append(errs, field.Invalid(path.Child("httpGet", "httpHeaders").Index(i).Child("name"), hd.Name, m))
			}
		}
	}
	if h.TCPSocket != nil {
		n++
		errs = append(errs, validateProbePort(c, h.TCPSocket.Port, path.Child("tcpSocket", "port"))...)
	}
	if h.GRPC != nil {
		n++
		for _, m := range validation.IsValidPortNum(int(h.GRPC.Port)) {
			errs = append(errs, field.Invalid(path.Child("grpc", "port"), h.GRPC.Port, m))
		}
	}
	switch {
	case n == 0:
		errs = append(errs, field.Required(path, "must specify a handler type (exec, httpGet, tcpSocket or grpc)"))
	case n > 1:
		errs = append(errs, field.Forbidden(path, "may not specify more than 1 handler type"))
	}
	return errs
}

// validateProbePort checks a probe's port: a valid number, or the name of one of the
// container's ports.
func validateProbePort(c *corev1.Container, port intstr.IntOrString, path *field.Path) field.ErrorList {
	if port.Type == intstr.Int {
		var errs field.ErrorList
		for _, m := range validation.IsValidPortNum(int(port.IntVal)) {
			errs = append(errs, field.Invalid(path, port.IntVal, m))
		}
		return errs
	}
	for _, cp := range c.Ports {
		if cp.Name == port.StrVal {
			return nil
		}
	}
	if len(validation.IsValidPortName(port.StrVal)) > 0 {
		return field.ErrorList{field.Invalid(path, port.StrVal, "must be a port number or the name of a container port")}
	}
	return field.ErrorList{field.Invalid(path, port.StrVal, fmt.Sprintf("no container port named %q", port.StrVal))}
}

// validatePodProbes checks the probes of every container of a pod.
func validatePodProbes(pod *corev1.Pod, spec *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		restartable := c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		errs = append(errs, validateProbes(c, spec.Child("initContainers").Index(i), restartable, true)...)
	}
	for i := range pod.Spec.Containers {
		errs = append(errs, validateProbes(&pod.Spec.Containers[i], spec.Child("containers").Index(i), false, false)...)
	}
	return errs
}
