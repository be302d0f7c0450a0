package manifests

import (
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkeeper/podkeeper/cgroup"
)

// Defaults applied to fields podkeeper reads, matching the API server's.
const (
	defaultTerminationGracePeriod = int64(30)
	defaultSchedulerName          = "default-scheduler"
	defaultVolumeMode             = int32(0o644) // ConfigMap, Secret, projected, downwardAPI volumes

	probeTimeoutSeconds    = 1
	probePeriodSeconds     = 10
	probeSuccessThreshold  = 1
	probeFailureThreshold  = 3
	defaultEnableSvcLinks  = true
	defaultHTTPPath        = "/"
	defaultFieldAPIVersion = "v1"
)

// applyDefaults fills in the fields the API server would default.
func applyDefaults(pod *corev1.Pod) {
	spec := &pod.Spec
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	if spec.TerminationGracePeriodSeconds == nil {
		g := defaultTerminationGracePeriod
		spec.TerminationGracePeriodSeconds = &g
	}
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = corev1.DNSClusterFirst
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = defaultSchedulerName
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	if spec.EnableServiceLinks == nil {
		v := defaultEnableSvcLinks
		spec.EnableServiceLinks = &v
	}
	for i := range spec.InitContainers {
		defaultContainer(&spec.InitContainers[i], spec.HostNetwork)
	}
	for i := range spec.Containers {
		defaultContainer(&spec.Containers[i], spec.HostNetwork)
	}
	defaultPodLevelRequests(pod)
	for i := range spec.Volumes {
		defaultVolume(&spec.Volumes[i])
	}
}

// defaultContainer fills in one container's defaults.
func defaultContainer(c *corev1.Container, hostNetwork bool) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = defaultPullPolicy(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		p := &c.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if hostNetwork && p.HostPort == 0 {
			p.HostPort = p.ContainerPort // as the API server does for hostNetwork pods
		}
	}
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		defaultProbe(p)
	}
	if c.Lifecycle != nil {
		for _, h := range []*corev1.LifecycleHandler{c.Lifecycle.PostStart, c.Lifecycle.PreStop} {
			if h != nil {
				defaultHTTPGet(h.HTTPGet)
			}
		}
	}
	for i := range c.Env {
		if vf := c.Env[i].ValueFrom; vf != nil && vf.FieldRef != nil && vf.FieldRef.APIVersion == "" {
			vf.FieldRef.APIVersion = defaultFieldAPIVersion
		}
	}
	// Requests default to limits for each resource with a limit and no request.
	if len(c.Resources.Limits) > 0 {
		if c.Resources.Requests == nil {
			c.Resources.Requests = corev1.ResourceList{}
		}
		for name, q := range c.Resources.Limits {
			if _, ok := c.Resources.Requests[name]; !ok {
				c.Resources.Requests[name] = q.DeepCopy()
			}
		}
	}
}

func defaultProbe(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = probeTimeoutSeconds
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = probePeriodSeconds
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = probeSuccessThreshold
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = probeFailureThreshold
	}
	defaultHTTPGet(p.HTTPGet)
	if p.GRPC != nil && p.GRPC.Service == nil {
		s := ""
		p.GRPC.Service = &s
	}
}

func defaultHTTPGet(h *corev1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = defaultHTTPPath
	}
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
}

func defaultVolume(v *corev1.Volume) {
	mode := func(m **int32) {
		if *m == nil {
			d := defaultVolumeMode
			*m = &d
		}
	}
	if reflect.ValueOf(v.VolumeSource).IsZero() {
		v.EmptyDir = &corev1.EmptyDirVolumeSource{} // a volume with no source, as the API server defaults it
	}
	switch {
	case v.Image != nil:
		if v.Image.PullPolicy == "" {
			v.Image.PullPolicy = defaultPullPolicy(v.Image.Reference)
		}
	case v.ConfigMap != nil:
		mode(&v.ConfigMap.DefaultMode)
	case v.Secret != nil:
		mode(&v.Secret.DefaultMode)
	case v.Projected != nil:
		mode(&v.Projected.DefaultMode)
	case v.DownwardAPI != nil:
		mode(&v.DownwardAPI.DefaultMode)
		for i := range v.DownwardAPI.Items {
			if f := v.DownwardAPI.Items[i].FieldRef; f != nil && f.APIVersion == "" {
				f.APIVersion = defaultFieldAPIVersion
			}
		}
	case v.HostPath != nil:
		if v.HostPath.Type == nil {
			t := corev1.HostPathUnset
			v.HostPath.Type = &t
		}
	}
}

// defaultPullPolicy is Always for an image with no tag or the tag "latest"
// (and no digest), IfNotPresent otherwise.
func defaultPullPolicy(image string) corev1.PullPolicy {
	if strings.Contains(image, "@") {
		return corev1.PullIfNotPresent // pinned by digest
	}
	tag := ""
	// The tag follows the last ':' after the last '/', so a registry
	// port ("localhost:5000/app") is not mistaken for a tag.
	last := image[strings.LastIndex(image, "/")+1:]
	if i := strings.LastIndex(last, ":"); i >= 0 {
		tag = last[i+1:]
	}
	if tag == "" || tag == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// defaultPodLevelRequests fills in the pod-level requests (spec.resources) of a pod with pod-level
// limits, as the API server does: a CPU or memory request missing there is the containers'
// aggregate request when any container requests it, and any other missing request is the
// pod-level limit. (The kubelet 1.37 without an API server skips this, since the API server took
// it over: there a pod with pod-level limits only is Burstable with 2 CPU shares; here, as in a
// cluster, it is Guaranteed.)
func defaultPodLevelRequests(pod *corev1.Pod) {
	r := pod.Spec.Resources
	if r == nil || len(r.Limits) == 0 {
		return
	}
	req := r.Requests
	if req == nil {
		req = corev1.ResourceList{}
	}
	for name, q := range cgroup.AggregateContainerRequests(pod) {
		if _, ok := req[name]; !ok && (name == corev1.ResourceCPU || name == corev1.ResourceMemory) {
			req[name] = q.DeepCopy()
		}
	}
	for name, q := range r.Limits {
		if _, ok := req[name]; !ok && cgroup.PodLevelResource(name) {
			req[name] = q.DeepCopy()
		}
	}
	if len(req) > 0 {
		r.Requests = req
	}
}
