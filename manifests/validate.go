package manifests

import (
	"fmt"
	"path"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podkeeper/podkeeper/cgroup"
)

var (
	supportedRestartPolicies = []corev1.RestartPolicy{
		corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever,
	}
	supportedProtocols    = []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP}
	supportedDNSPolicies  = []corev1.DNSPolicy{corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone}
	supportedPullPolicies = []corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}
	supportedTermPolicies = []corev1.TerminationMessagePolicy{corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError}
	supportedSchemes      = []corev1.URIScheme{corev1.URISchemeHTTP, corev1.URISchemeHTTPS}
	supportedFieldPaths   = []string{
		"metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName",
		"status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs",
	}
	supportedResourceFields = []string{
		"limits.cpu", "limits.memory", "limits.ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage",
	}
	supportedSeccomp = []corev1.SeccompProfileType{corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined, corev1.SeccompProfileTypeLocalhost}
)

// validatePod checks a defaulted pod (before identity is set) as the API server would, for what
// podkeeper runs, and returns every problem found. nodeName is needed to check the full static
// name.
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
	for k := range pod.Labels {
		for _, m := range validation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(meta.Child("labels").Key(k), k, m))
		}
		for _, m := range validation.IsValidLabelValue(pod.Labels[k]) {
			errs = append(errs, field.Invalid(meta.Child("labels").Key(k), pod.Labels[k], m))
		}
	}
	for i, f := range pod.Finalizers {
		for _, m := range validation.IsQualifiedName(f) {
			errs = append(errs, field.Invalid(meta.Child("finalizers").Index(i), f, m))
		}
	}
	total := 0
	for k, v := range pod.Annotations {
		total += len(k) + len(v)
	}
	if total > 256*1024 {
		errs = append(errs, field.TooLong(meta.Child("annotations"), "", 256*1024))
	}
	for k := range pod.Annotations {
		for _, m := range validation.IsQualifiedName(strings.ToLower(k)) {
			errs = append(errs, field.Invalid(meta.Child("annotations").Key(k), k, m))
		}
	}

	spec := field.NewPath("spec")
	if len(pod.Spec.Containers) == 0 {
		errs = append(errs, field.Required(spec.Child("containers"), "at least one container is required"))
	}
	vols, volErrs := validateVolumes(pod.Spec.Volumes, spec.Child("volumes"), pod.Spec.ServiceAccountName)
	errs = append(errs, volErrs...)
	names := sets.New[string]()
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		p := spec.Child("initContainers").Index(i)
		errs = append(errs, validateContainer(c, p, names, vols, &pod.Spec)...)
		errs = append(errs, validateRestartRules(c, p)...)
		sidecar := c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		if !sidecar {
			for _, f := range []struct {
				name string
				set  bool
			}{{"livenessProbe", c.LivenessProbe != nil}, {"readinessProbe", c.ReadinessProbe != nil}, {"startupProbe", c.StartupProbe != nil}, {"lifecycle", c.Lifecycle != nil}} {
				if f.set {
					errs = append(errs, field.Forbidden(p.Child(f.name), "may not be set for init containers without restartPolicy=Always"))
				}
			}
		}
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		p := spec.Child("containers").Index(i)
		errs = append(errs, validateContainer(c, p, names, vols, &pod.Spec)...)
		errs = append(errs, validateRestartRules(c, p)...)
	}
	errs = append(errs, validatePodProbes(pod, spec)...)
	errs = append(errs, validatePodResources(&pod.Spec, spec.Child("resources"))...)
	// spec.overhead: checked as limits, as the API server does (it reuses that validation).
	errs = append(errs, validateResources(corev1.ResourceRequirements{Limits: pod.Spec.Overhead}, spec.Child("overhead"))...)
	// What needs API objects or an API call the kubelet refuses in a static pod too; podkeeper
	// would otherwise run the pod without the device, claim or container asked for.
	if len(pod.Spec.ResourceClaims) > 0 {
		errs = append(errs, field.Forbidden(spec.Child("resourceClaims"), "static pods may not reference resourceclaims (they need an API server)"))
	}
	for i, v := range pod.Spec.Volumes {
		vp := spec.Child("volumes").Index(i)
		switch {
		case v.PersistentVolumeClaim != nil:
			errs = append(errs, field.Forbidden(vp.Child("persistentVolumeClaim"), "static pods may not reference persistentvolumeclaims"))
		case v.Ephemeral != nil:
			errs = append(errs, field.Forbidden(vp.Child("ephemeral"), "static pods may not reference persistentvolumeclaims (via ephemeral volumes)"))
		case v.CSI != nil:
			errs = append(errs, field.Forbidden(vp.Child("csi"), "static pods may not reference csidrivers (via CSI volumes)"))
		}
	}
	if len(pod.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(spec.Child("ephemeralContainers"), "cannot be set on create"))
	}
	eachContainer(&pod.Spec, spec, func(c *corev1.Container, cp *field.Path) {
		if len(c.Resources.Claims) > 0 {
			errs = append(errs, field.Forbidden(cp.Child("resources", "claims"), "static pods may not reference resourceclaims (they need an API server)"))
		}
		if len(c.VolumeDevices) > 0 {
			errs = append(errs, field.Forbidden(cp.Child("volumeDevices"), "static pods may not reference persistentvolumeclaims (a volumeDevice needs one)"))
		}
	})

	if !slices.Contains(supportedRestartPolicies, pod.Spec.RestartPolicy) {
		errs = append(errs, field.NotSupported(spec.Child("restartPolicy"), pod.Spec.RestartPolicy, supportedRestartPolicies))
	}
	if !slices.Contains(supportedDNSPolicies, pod.Spec.DNSPolicy) {
		errs = append(errs, field.NotSupported(spec.Child("dnsPolicy"), pod.Spec.DNSPolicy, supportedDNSPolicies))
	}
	if pod.Spec.DNSPolicy == corev1.DNSNone && (pod.Spec.DNSConfig == nil || len(pod.Spec.DNSConfig.Nameservers) == 0) {
		errs = append(errs, field.Required(spec.Child("dnsConfig").Child("nameservers"), "must provide at least one DNS nameserver when `dnsPolicy` is None"))
	}
	// A negative terminationGracePeriodSeconds is accepted, as the kubelet accepts it in a static
	// pod (the API server turns it into 1 on create): it stops as 0 does (terminationGrace).
	if d := pod.Spec.ActiveDeadlineSeconds; d != nil && (*d < 1 || *d > 2147483647) {
		errs = append(errs, field.Invalid(spec.Child("activeDeadlineSeconds"), *d, "must be between 1 and 2147483647, inclusive"))
	}
	if o := pod.Spec.HostnameOverride; o != nil {
		op := spec.Child("hostnameOverride")
		if f := pod.Spec.SetHostnameAsFQDN; f != nil && *f {
			errs = append(errs, field.Forbidden(op, "may not be specified when setHostnameAsFQDN is true"))
		}
		if pod.Spec.HostNetwork {
			errs = append(errs, field.Forbidden(op, "may not be specified when hostNetwork is true"))
		}
		if len(*o) > 64 {
			errs = append(errs, field.TooLong(op, "", 64))
		}
		for _, m := range validation.IsDNS1123Subdomain(*o) {
			errs = append(errs, field.Invalid(op, *o, m))
		}
	}
	if h := pod.Spec.Hostname; h != "" {
		for _, m := range validation.IsDNS1123Label(h) {
			errs = append(errs, field.Invalid(spec.Child("hostname"), h, m))
		}
	}
	if sc := pod.Spec.SecurityContext; sc != nil {
		sp := spec.Child("securityContext")
		errs = append(errs, nonNegativeID(sp.Child("runAsUser"), sc.RunAsUser)...)
		errs = append(errs, nonNegativeID(sp.Child("runAsGroup"), sc.RunAsGroup)...)
		errs = append(errs, nonNegativeID(sp.Child("fsGroup"), sc.FSGroup)...)
		if p := sc.SupplementalGroupsPolicy; p != nil && *p != corev1.SupplementalGroupsPolicyMerge && *p != corev1.SupplementalGroupsPolicyStrict {
			errs = append(errs, field.NotSupported(sp.Child("supplementalGroupsPolicy"), *p, []corev1.SupplementalGroupsPolicy{corev1.SupplementalGroupsPolicyMerge, corev1.SupplementalGroupsPolicyStrict}))
		}
		for i, g := range sc.SupplementalGroups {
			errs = append(errs, nonNegativeID(sp.Child("supplementalGroups").Index(i), &g)...)
		}
		errs = append(errs, validateSeccomp(sp.Child("seccompProfile"), sc.SeccompProfile)...)
		errs = append(errs, validateAppArmorProfile(sp.Child("appArmorProfile"), sc.AppArmorProfile)...)
		seen := sets.New[string]()
		for i, s := range sc.Sysctls {
			np := sp.Child("sysctls").Index(i).Child("name")
			switch {
			case s.Name == "":
				errs = append(errs, field.Required(np, ""))
			case !sysctlName.MatchString(s.Name) || len(s.Name) > 253:
				errs = append(errs, field.Invalid(np, s.Name, "must have at most 253 characters and match regex "+sysctlName.String()))
			case seen.Has(s.Name):
				errs = append(errs, field.Duplicate(np, s.Name))
			}
			seen.Insert(s.Name)
		}
		if p := sc.FSGroupChangePolicy; p != nil && *p != corev1.FSGroupChangeAlways && *p != corev1.FSGroupChangeOnRootMismatch {
			errs = append(errs, field.NotSupported(sp.Child("fsGroupChangePolicy"), *p, []corev1.PodFSGroupChangePolicy{corev1.FSGroupChangeAlways, corev1.FSGroupChangeOnRootMismatch}))
		}
	}
	errs = append(errs, validateSpecMore(&pod.Spec, spec)...)
	return errs
}

// validateVolumes checks names (unique DNS-1123 labels), that each volume has exactly one
// source, and that source's fields (a projected serviceAccountToken needs serviceAccount, the
// pod's serviceAccountName), and returns the names.
func validateVolumes(vols []corev1.Volume, p *field.Path, serviceAccount string) (sets.Set[string], field.ErrorList) {
	var errs field.ErrorList
	names := sets.New[string]()
	for i := range vols {
		v := &vols[i]
		vp := p.Index(i)
		switch {
		case v.Name == "":
			errs = append(errs, field.Required(vp.Child("name"), ""))
		case names.Has(v.Name):
			errs = append(errs, field.Duplicate(vp.Child("name"), v.Name))
		default:
			for _, m := range validation.IsDNS1123Label(v.Name) {
				errs = append(errs, field.Invalid(vp.Child("name"), v.Name, m))
			}
		}
		names.Insert(v.Name)
		n := 0
		rv := reflect.ValueOf(v.VolumeSource)
		for j := 0; j < rv.NumField(); j++ {
			if !rv.Field(j).IsNil() {
				n++
			}
		}
		switch {
		case n == 0:
			errs = append(errs, field.Required(vp, "must specify a volume type"))
		case n > 1:
			errs = append(errs, field.Forbidden(vp, "may not specify more than 1 volume type"))
		}
		switch {
		case v.NFS != nil:
			np := vp.Child("nfs")
			if v.NFS.Server == "" {
				errs = append(errs, field.Required(np.Child("server"), ""))
			}
			switch {
			case v.NFS.Path == "":
				errs = append(errs, field.Required(np.Child("path"), ""))
			case !path.IsAbs(v.NFS.Path):
				errs = append(errs, field.Invalid(np.Child("path"), v.NFS.Path, "must be an absolute path"))
			}
		case v.HostPath != nil:
			hp := vp.Child("hostPath")
			if v.HostPath.Path == "" {
				errs = append(errs, field.Required(hp.Child("path"), ""))
			} else if slices.Contains(strings.Split(v.HostPath.Path, "/"), "..") {
				errs = append(errs, field.Invalid(hp.Child("path"), v.HostPath.Path, "must not contain '..'"))
			}
			types := []corev1.HostPathType{corev1.HostPathUnset, corev1.HostPathDirectoryOrCreate, corev1.HostPathDirectory,
				corev1.HostPathFileOrCreate, corev1.HostPathFile, corev1.HostPathSocket, corev1.HostPathCharDev, corev1.HostPathBlockDev}
			if t := v.HostPath.Type; t != nil && !slices.Contains(types, *t) {
				errs = append(errs, field.NotSupported(hp.Child("type"), *t, types))
			}
		case v.EmptyDir != nil:
			if m := v.EmptyDir.Medium; m != corev1.StorageMediumDefault && m != corev1.StorageMediumMemory && !strings.HasPrefix(string(m), "HugePages") {
				errs = append(errs, field.NotSupported(vp.Child("emptyDir").Child("medium"), m, []corev1.StorageMedium{corev1.StorageMediumDefault, corev1.StorageMediumMemory}))
			}
			if l := v.EmptyDir.SizeLimit; l != nil && l.Sign() < 0 {
				errs = append(errs, field.Invalid(vp.Child("emptyDir").Child("sizeLimit"), l.String(), "must be greater than or equal to 0"))
			}
		case v.Image != nil: // ImageVolume, GA in the kubelet 1.36
			ip := vp.Child("image")
			if v.Image.Reference == "" {
				errs = append(errs, field.Required(ip.Child("reference"), ""))
			}
			if !slices.Contains(supportedPullPolicies, v.Image.PullPolicy) {
				errs = append(errs, field.NotSupported(ip.Child("pullPolicy"), v.Image.PullPolicy, supportedPullPolicies))
			}
		case v.ConfigMap != nil:
			cp := vp.Child("configMap")
			if v.ConfigMap.Name == "" {
				errs = append(errs, field.Required(cp.Child("name"), ""))
			}
			errs = append(errs, validateMode(cp.Child("defaultMode"), v.ConfigMap.DefaultMode)...)
			errs = append(errs, validateItems(cp.Child("items"), v.ConfigMap.Items)...)
		case v.DownwardAPI != nil:
			dp := vp.Child("downwardAPI")
			errs = append(errs, validateMode(dp.Child("defaultMode"), v.DownwardAPI.DefaultMode)...)
			errs = append(errs, validateDownwardItems(v.DownwardAPI.Items, dp.Child("items"))...)
		case v.Projected != nil:
			pp := vp.Child("projected")
			errs = append(errs, validateMode(pp.Child("defaultMode"), v.Projected.DefaultMode)...)
			paths := sets.New[string]()
			dup := func(p string) {
				if paths.Has(p) {
					errs = append(errs, field.Invalid(pp, p, "conflicting duplicate paths"))
				}
				paths.Insert(p)
			}
			for _, src := range v.Projected.Sources {
				if src.DownwardAPI != nil {
					for _, it := range src.DownwardAPI.Items {
						dup(it.Path)
					}
				}
				if src.ConfigMap != nil {
					for _, it := range src.ConfigMap.Items {
						dup(it.Path)
					}
				}
				if src.Secret != nil {
					for _, it := range src.Secret.Items {
						dup(it.Path)
					}
				}
				if src.ServiceAccountToken != nil {
					dup(src.ServiceAccountToken.Path)
				}
			}
			for j, src := range v.Projected.Sources {
				sp := pp.Child("sources").Index(j)
				if src.ServiceAccountToken != nil && serviceAccount == "" {
					errs = append(errs, field.Forbidden(sp.Child("serviceAccountToken"), "must not be specified when serviceAccountName is not set"))
				}
				if src.DownwardAPI != nil {
					errs = append(errs, validateDownwardItems(src.DownwardAPI.Items, sp.Child("downwardAPI", "items"))...)
				}
				if src.ConfigMap != nil {
					errs = append(errs, validateItems(sp.Child("configMap", "items"), src.ConfigMap.Items)...)
				}
				if src.Secret != nil {
					errs = append(errs, validateItems(sp.Child("secret", "items"), src.Secret.Items)...)
				}
			}
		case v.Secret != nil:
			sp := vp.Child("secret")
			if v.Secret.SecretName == "" {
				errs = append(errs, field.Required(sp.Child("secretName"), ""))
			}
			errs = append(errs, validateMode(sp.Child("defaultMode"), v.Secret.DefaultMode)...)
			errs = append(errs, validateItems(sp.Child("items"), v.Secret.Items)...)
		}
	}
	return names, errs
}

func validateItems(p *field.Path, items []corev1.KeyToPath) field.ErrorList {
	var errs field.ErrorList
	for i, it := range items {
		ip := p.Index(i)
		if it.Key == "" {
			errs = append(errs, field.Required(ip.Child("key"), ""))
		}
		errs = append(errs, validateRelativePath(ip.Child("path"), it.Path)...)
		errs = append(errs, validateMode(ip.Child("mode"), it.Mode)...)
	}
	return errs
}

func validateMode(p *field.Path, m *int32) field.ErrorList {
	if m != nil && (*m < 0 || *m > 0o777) {
		return field.ErrorList{field.Invalid(p, *m, "must be a number between 0 and 0777 (octal), both inclusive")}
	}
	return nil
}

func validateRelativePath(p *field.Path, s string) field.ErrorList {
	switch {
	case s == "":
		return field.ErrorList{field.Required(p, "")}
	case path.IsAbs(s):
		return field.ErrorList{field.Invalid(p, s, "must be a relative path")}
	case slices.Contains(strings.Split(s, "/"), ".."):
		return field.ErrorList{field.Invalid(p, s, "must not contain '..'")}
	}
	return nil
}

// validateContainer checks one container; names collects the container
// names seen so far in the pod (init and app containers share one space).
func validateContainer(c *corev1.Container, p *field.Path, names sets.Set[string], vols sets.Set[string], spec *corev1.PodSpec) field.ErrorList {
	var errs field.ErrorList
	name := p.Child("name")
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
		errs = append(errs, field.Required(p.Child("image"), ""))
	} else if strings.TrimSpace(c.Image) != c.Image {
		errs = append(errs, field.Invalid(p.Child("image"), c.Image, "must not have leading or trailing whitespace"))
	}
	if !slices.Contains(supportedPullPolicies, c.ImagePullPolicy) {
		errs = append(errs, field.NotSupported(p.Child("imagePullPolicy"), c.ImagePullPolicy, supportedPullPolicies))
	}
	if !slices.Contains(supportedTermPolicies, c.TerminationMessagePolicy) {
		errs = append(errs, field.NotSupported(p.Child("terminationMessagePolicy"), c.TerminationMessagePolicy, supportedTermPolicies))
	}
	portNames := sets.New[string]()
	for i, port := range c.Ports {
		pp := p.Child("ports").Index(i)
		if port.Name != "" {
			for _, m := range validation.IsValidPortName(port.Name) {
				errs = append(errs, field.Invalid(pp.Child("name"), port.Name, m))
			}
			if portNames.Has(port.Name) {
				errs = append(errs, field.Duplicate(pp.Child("name"), port.Name))
			}
			portNames.Insert(port.Name)
		}
		for _, m := range validation.IsValidPortNum(int(port.ContainerPort)) {
			errs = append(errs, field.Invalid(pp.Child("containerPort"), port.ContainerPort, m))
		}
		if port.HostPort != 0 {
			for _, m := range validation.IsValidPortNum(int(port.HostPort)) {
				errs = append(errs, field.Invalid(pp.Child("hostPort"), port.HostPort, m))
			}
			if spec.HostNetwork && port.HostPort != port.ContainerPort {
				errs = append(errs, field.Invalid(pp.Child("hostPort"), port.HostPort, "must match `containerPort` when `hostNetwork` is true"))
			}
		}
		if !slices.Contains(supportedProtocols, port.Protocol) {
			errs = append(errs, field.NotSupported(pp.Child("protocol"), port.Protocol, supportedProtocols))
		}
	}
	errs = append(errs, validateEnv(c, p, spec)...)
	errs = append(errs, validateMounts(c, p, vols, spec)...)
	errs = append(errs, validateResources(c.Resources, p.Child("resources"))...)
	errs = append(errs, validateResizePolicy(c.ResizePolicy, p.Child("resizePolicy"))...)
	errs = append(errs, validateProbe(c.LivenessProbe, p.Child("livenessProbe"), true)...)
	errs = append(errs, validateProbe(c.StartupProbe, p.Child("startupProbe"), true)...)
	errs = append(errs, validateProbe(c.ReadinessProbe, p.Child("readinessProbe"), false)...)
	if c.Lifecycle != nil {
		lp := p.Child("lifecycle")
		errs = append(errs, validateLifecycleHandler(c.Lifecycle.PostStart, lp.Child("postStart"), spec.TerminationGracePeriodSeconds)...)
		errs = append(errs, validateLifecycleHandler(c.Lifecycle.PreStop, lp.Child("preStop"), spec.TerminationGracePeriodSeconds)...)
		errs = append(errs, validateStopSignal(c.Lifecycle.StopSignal, lp.Child("stopSignal"), spec.OS)...)
	}
	if sc := c.SecurityContext; sc != nil {
		sp := p.Child("securityContext")
		errs = append(errs, nonNegativeID(sp.Child("runAsUser"), sc.RunAsUser)...)
		errs = append(errs, nonNegativeID(sp.Child("runAsGroup"), sc.RunAsGroup)...)
		if sc.Privileged != nil && *sc.Privileged && sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
			errs = append(errs, field.Invalid(sp, "", "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
		}
		if sc.Capabilities != nil && sc.Capabilities.Add != nil && sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
			for _, capName := range sc.Capabilities.Add {
				// The API's check is of the literal name: SYS_ADMIN passes it (the kubelet runs such
				// a pod; make conformance's edge-sysadmin-no-escalation).
				if capName == "CAP_SYS_ADMIN" {
					errs = append(errs, field.Invalid(sp, "", "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"))
				}
			}
		}
		if pm := sc.ProcMount; pm != nil && *pm != corev1.DefaultProcMount && *pm != corev1.UnmaskedProcMount {
			errs = append(errs, field.NotSupported(sp.Child("procMount"), *pm, []corev1.ProcMountType{corev1.DefaultProcMount, corev1.UnmaskedProcMount}))
		} else if pm != nil && *pm == corev1.UnmaskedProcMount && (spec.HostUsers == nil || *spec.HostUsers) {
			// The API server's rule; podkeeper would otherwise run the container masked.
			errs = append(errs, field.Invalid(sp.Child("procMount"), *pm, "`hostUsers` must be false to use `Unmasked`"))
		}
		errs = append(errs, validateSeccomp(sp.Child("seccompProfile"), sc.SeccompProfile)...)
		errs = append(errs, validateAppArmorProfile(sp.Child("appArmorProfile"), sc.AppArmorProfile)...)
	}
	return errs
}

// validateFileKeyRef checks an env fileKeyRef as the API server does: the volume must be one of
// the pod's emptyDir volumes, the path relative and without "..", the key a variable name.
func validateFileKeyRef(p *field.Path, r *corev1.FileKeySelector, spec *corev1.PodSpec) field.ErrorList {
	var errs field.ErrorList
	if r.VolumeName == "" {
		errs = append(errs, field.Required(p.Child("volumeName"), ""))
	} else {
		i := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == r.VolumeName })
		switch {
		case i < 0:
			errs = append(errs, field.NotFound(p.Child("volumeName"), r.VolumeName))
		case spec.Volumes[i].EmptyDir == nil:
			errs = append(errs, field.Invalid(p.Child("volumeName"), r.VolumeName, "referenced volume must be an emptyDir volume"))
		}
	}
	errs = append(errs, validateRelativePath(p.Child("path"), r.Path)...)
	if r.Key == "" {
		errs = append(errs, field.Required(p.Child("key"), ""))
	} else {
		for _, m := range validation.IsRelaxedEnvVarName(r.Key) {
			errs = append(errs, field.Invalid(p.Child("key"), r.Key, m))
		}
	}
	return errs
}

// validateEnv checks env names and sources and envFrom.
func validateEnv(c *corev1.Container, p *field.Path, spec *corev1.PodSpec) field.ErrorList {
	var errs field.ErrorList
	for i, e := range c.Env {
		ep := p.Child("env").Index(i)
		if e.Name == "" {
			errs = append(errs, field.Required(ep.Child("name"), ""))
		} else {
			for _, m := range validation.IsRelaxedEnvVarName(e.Name) {
				errs = append(errs, field.Invalid(ep.Child("name"), e.Name, m))
			}
		}
		vf := e.ValueFrom
		if vf == nil {
			continue
		}
		vp := ep.Child("valueFrom")
		n := 0
		if vf.FieldRef != nil {
			n++
			fp := vp.Child("fieldRef")
			if vf.FieldRef.APIVersion != "v1" {
				errs = append(errs, field.NotSupported(fp.Child("apiVersion"), vf.FieldRef.APIVersion, []string{"v1"}))
			}
			fpath := vf.FieldRef.FieldPath
			subErrs, sub := validateSubscript(fp, fpath)
			errs = append(errs, subErrs...)
			if !sub && !slices.Contains(supportedFieldPaths, fpath) {
				if fpath == "" {
					errs = append(errs, field.Required(fp.Child("fieldPath"), ""))
				} else {
					errs = append(errs, field.NotSupported(fp.Child("fieldPath"), fpath, supportedFieldPaths))
				}
			}
		}
		if vf.ResourceFieldRef != nil {
			n++
			rp := vp.Child("resourceFieldRef")
			if !slices.Contains(supportedResourceFields, vf.ResourceFieldRef.Resource) {
				errs = append(errs, field.NotSupported(rp.Child("resource"), vf.ResourceFieldRef.Resource, supportedResourceFields))
			}
			errs = append(errs, validateDivisor(rp.Child("divisor"), vf.ResourceFieldRef)...)
			if vf.ResourceFieldRef.ContainerName != "" && vf.ResourceFieldRef.ContainerName != c.Name {
				errs = append(errs, field.Invalid(rp.Child("containerName"), vf.ResourceFieldRef.ContainerName, "podkeeper resolves resources of the container itself only"))
			}
		}
		if r := vf.ConfigMapKeyRef; r != nil {
			n++
			errs = append(errs, validateKeyRef(vp.Child("configMapKeyRef"), r.Name, r.Key)...)
		}
		if r := vf.SecretKeyRef; r != nil {
			n++
			errs = append(errs, validateKeyRef(vp.Child("secretKeyRef"), r.Name, r.Key)...)
		}
		if r := vf.FileKeyRef; r != nil {
			n++
			errs = append(errs, validateFileKeyRef(vp.Child("fileKeyRef"), r, spec)...)
		}
		switch {
		case n == 0:
			errs = append(errs, field.Invalid(vp, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`"))
		case n > 1:
			errs = append(errs, field.Invalid(vp, "", "may not have more than one field specified at a time"))
		}
		if e.Value != "" {
			errs = append(errs, field.Invalid(ep.Child("valueFrom"), "", "may not be specified when `value` is not empty"))
		}
	}
	for i, ef := range c.EnvFrom {
		fp := p.Child("envFrom").Index(i)
		if ef.Prefix != "" {
			for _, m := range validation.IsRelaxedEnvVarName(ef.Prefix) {
				errs = append(errs, field.Invalid(fp.Child("prefix"), ef.Prefix, m))
			}
		}
		n := 0
		if ef.ConfigMapRef != nil {
			n++
			errs = append(errs, validateRefName(fp.Child("configMapRef").Child("name"), ef.ConfigMapRef.Name)...)
		}
		if ef.SecretRef != nil {
			n++
			errs = append(errs, validateRefName(fp.Child("secretRef").Child("name"), ef.SecretRef.Name)...)
		}
		switch {
		case n == 0:
			errs = append(errs, field.Invalid(fp, "", "must specify one of: `configMapRef` or `secretRef`"))
		case n > 1:
			errs = append(errs, field.Invalid(fp, "", "may not have more than one field specified at a time"))
		}
	}
	return errs
}

func validateKeyRef(p *field.Path, name, key string) field.ErrorList {
	errs := validateRefName(p.Child("name"), name)
	if key == "" {
		return append(errs, field.Required(p.Child("key"), ""))
	}
	for _, m := range validation.IsConfigMapKey(key) {
		errs = append(errs, field.Invalid(p.Child("key"), key, m))
	}
	return errs
}

func validateRefName(p *field.Path, name string) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	for _, m := range validation.IsDNS1123Subdomain(name) {
		errs = append(errs, field.Invalid(p, name, m))
	}
	return errs
}

// validateMounts checks volumeMounts: known volume, absolute unique mountPath, relative subPath
// and subPathExpr.
func validateMounts(c *corev1.Container, p *field.Path, vols sets.Set[string], spec *corev1.PodSpec) field.ErrorList {
	var errs field.ErrorList
	imageVols := sets.New[string]()
	for _, v := range spec.Volumes {
		if v.Image != nil {
			imageVols.Insert(v.Name)
		}
	}
	paths := sets.New[string]()
	for i, m := range c.VolumeMounts {
		mp := p.Child("volumeMounts").Index(i)
		switch {
		case m.Name == "":
			errs = append(errs, field.Required(mp.Child("name"), ""))
		case !vols.Has(m.Name):
			errs = append(errs, field.NotFound(mp.Child("name"), m.Name))
		}
		switch {
		case m.MountPath == "":
			errs = append(errs, field.Required(mp.Child("mountPath"), ""))
		case paths.Has(m.MountPath):
			errs = append(errs, field.Invalid(mp.Child("mountPath"), m.MountPath, "must be unique"))
		}
		paths.Insert(m.MountPath)
		// Both paths without the mount's index, as the API server words them.
		if m.SubPath != "" {
			errs = append(errs, validateRelativePath(p.Child("volumeMounts").Child("subPath"), m.SubPath)...)
		}
		if m.SubPathExpr != "" {
			errs = append(errs, validateRelativePath(p.Child("volumeMounts").Child("subPathExpr"), m.SubPathExpr)...)
		}
		for j, o := range m.BindMountOptions {
			if o != "noexec" && o != "nodev" && o != "nosuid" {
				errs = append(errs, field.NotSupported(mp.Child("bindMountOptions").Index(j), o, []string{"noexec", "nodev", "nosuid"}))
			}
		}
		if len(m.BindMountOptions) > 0 && imageVols.Has(m.Name) {
			errs = append(errs, field.Invalid(mp.Child("bindMountOptions"), m.BindMountOptions, "bindMountOptions may not be used with image volumes"))
		}
		if m.SubPath != "" && m.SubPathExpr != "" {
			errs = append(errs, field.Invalid(mp.Child("subPathExpr"), m.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
		}
		errs = append(errs, validatePropagation(c, m, mp)...)
	}
	return errs
}

var (
	supportedPropagations = []corev1.MountPropagationMode{corev1.MountPropagationBidirectional, corev1.MountPropagationHostToContainer, corev1.MountPropagationNone}
	supportedRRO          = []corev1.RecursiveReadOnlyMode{corev1.RecursiveReadOnlyDisabled, corev1.RecursiveReadOnlyIfPossible, corev1.RecursiveReadOnlyEnabled}
)

// validatePropagation checks a mount's mountPropagation and recursiveReadOnly as the API
// server does: Bidirectional only for privileged containers; a recursive read-only mount only
// when readOnly is true and the propagation is None.
func validatePropagation(c *corev1.Container, m corev1.VolumeMount, mp *field.Path) field.ErrorList {
	var errs field.ErrorList
	if prop := m.MountPropagation; prop != nil {
		if !slices.Contains(supportedPropagations, *prop) {
			errs = append(errs, field.NotSupported(mp.Child("mountPropagation"), *prop, supportedPropagations))
		}
		privileged := c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
		if *prop == corev1.MountPropagationBidirectional && !privileged {
			errs = append(errs, field.Forbidden(mp.Child("mountPropagation"), "Bidirectional mount propagation is available only to privileged containers"))
		}
	}
	if rro := m.RecursiveReadOnly; rro != nil && *rro != corev1.RecursiveReadOnlyDisabled {
		rp := mp.Child("recursiveReadOnly")
		if !slices.Contains(supportedRRO, *rro) {
			return append(errs, field.NotSupported(rp, *rro, supportedRRO))
		}
		if !m.ReadOnly {
			errs = append(errs, field.Forbidden(rp, "may only be specified when readOnly is true"))
		}
		if m.MountPropagation != nil && *m.MountPropagation != corev1.MountPropagationNone {
			errs = append(errs, field.Forbidden(rp, "may only be specified when mountPropagation is None or not specified"))
		}
	}
	return errs
}

// validateResources checks resource names, non-negative quantities and requests <= limits.
func validateResources(r corev1.ResourceRequirements, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	check := func(list corev1.ResourceList, lp *field.Path) {
		for _, name := range sortedKeys(list) {
			q := list[corev1.ResourceName(name)]
			kp := lp.Key(name)
			errs = append(errs, validateResourceName(kp, name)...)
			if q.Sign() < 0 {
				errs = append(errs, field.Invalid(kp, q.String(), "must be greater than or equal to 0"))
			}
			if extendedResource(name) && q.MilliValue()%1000 != 0 {
				errs = append(errs, field.Invalid(kp, q.String(), "must be an integer"))
			}
		}
	}
	check(r.Limits, p.Child("limits"))
	check(r.Requests, p.Child("requests"))
	for _, name := range sortedKeys(r.Requests) {
		req := r.Requests[corev1.ResourceName(name)]
		lim, ok := r.Limits[corev1.ResourceName(name)]
		switch {
		case ok && req.Cmp(lim) != 0 && !overcommittable(name):
			errs = append(errs, field.Invalid(p.Child("requests"), req.String(), fmt.Sprintf("must be equal to %s limit of %s", name, lim.String())))
		case ok && req.Cmp(lim) > 0:
			errs = append(errs, field.Invalid(p.Child("requests").Key(name), req.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, lim.String())))
		case !ok && !overcommittable(name):
			errs = append(errs, field.Required(p.Child("limits"), "Limit must be set for non overcommitable resources"))
		}
	}
	return errs
}

// overcommittable reports whether a resource may be requested below its limit, as the API has
// it: native resources (no domain, or a kubernetes.io one) but hugepages. Extended resources
// (example.com/gpu) and hugepages are asked for whole: request equal to limit.
func overcommittable(name string) bool {
	native := !strings.Contains(name, "/") || strings.Contains(name, "kubernetes.io/")
	return native && !strings.HasPrefix(name, corev1.ResourceHugePagesPrefix)
}

// extendedResource reports whether name is an extended resource (a domain other than
// kubernetes.io), whose quantities are whole numbers.
func extendedResource(name string) bool {
	return strings.Contains(name, "/") && !strings.Contains(name, "kubernetes.io/") && !strings.HasPrefix(name, "requests.")
}

// validatePodResources checks pod-level resources (spec.resources) as the API server does: only
// cpu, memory and hugepages, no claims, requests within limits, requests at least what the
// containers request together, and no container limit above the pod's.
func validatePodResources(spec *corev1.PodSpec, p *field.Path) field.ErrorList {
	r := spec.Resources
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	for _, l := range []struct {
		list corev1.ResourceList
		p    *field.Path
	}{{r.Limits, p.Child("limits")}, {r.Requests, p.Child("requests")}} {
		for _, name := range sortedKeys(l.list) {
			if !cgroup.PodLevelResource(corev1.ResourceName(name)) {
				errs = append(errs, field.NotSupported(l.p.Key(name), name, []string{"cpu", "memory", "hugepages-<size>"}))
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	errs = validateResources(*r, p)
	if len(r.Claims) > 0 {
		errs = append(errs, field.Forbidden(p.Child("claims"), "claims may not be set for Resources at pod-level"))
	}
	agg := cgroup.AggregateContainerRequests(&corev1.Pod{Spec: *spec})
	for _, name := range sortedKeys(agg) {
		want := agg[corev1.ResourceName(name)]
		if got, ok := r.Requests[corev1.ResourceName(name)]; ok && want.Cmp(got) > 0 {
			errs = append(errs, field.Invalid(p.Child("requests").Key(name), got.String(), fmt.Sprintf("must be greater than or equal to aggregate container requests of %s", want.String())))
		}
	}
	for i, c := range spec.Containers {
		for _, name := range sortedKeys(c.Resources.Limits) {
			lim := c.Resources.Limits[corev1.ResourceName(name)]
			if pod, ok := r.Limits[corev1.ResourceName(name)]; ok && lim.Cmp(pod) > 0 {
				errs = append(errs, field.Invalid(field.NewPath("spec", "containers").Index(i).Child("resources", "limits").Key(name), lim.String(), fmt.Sprintf("must be less than or equal to pod limits of %s", pod.String())))
			}
		}
	}
	return errs
}

// validateRestartRules checks a container's restartPolicy and restartPolicyRules (the kubelet's
// ContainerRestartRules, beta and on since 1.35, and RestartAllContainersOnContainerExits, beta
// and on since 1.36: the rule action RestartAllContainers, an in-place restart of the whole pod)
// as the API server does; sidecars (restartPolicy Always) may have rules too.
func validateRestartRules(c *corev1.Container, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	policies := []corev1.ContainerRestartPolicy{corev1.ContainerRestartPolicyAlways, corev1.ContainerRestartPolicyNever, corev1.ContainerRestartPolicyOnFailure}
	switch {
	case c.RestartPolicy == nil && len(c.RestartPolicyRules) > 0:
		errs = append(errs, field.Required(p.Child("restartPolicy"), "must specify restartPolicy when restart rules are used"))
	case c.RestartPolicy != nil && !slices.Contains(policies, *c.RestartPolicy):
		errs = append(errs, field.NotSupported(p.Child("restartPolicy"), *c.RestartPolicy, policies))
	}
	if len(c.RestartPolicyRules) > 20 {
		errs = append(errs, field.TooMany(p.Child("restartPolicyRules"), len(c.RestartPolicyRules), 20))
	}
	for i, r := range c.RestartPolicyRules {
		rp := p.Child("restartPolicyRules").Index(i)
		actions := []corev1.ContainerRestartRuleAction{corev1.ContainerRestartRuleActionRestart, corev1.ContainerRestartRuleActionRestartAllContainers}
		if !slices.Contains(actions, r.Action) {
			errs = append(errs, field.NotSupported(rp.Child("action"), r.Action, actions))
		}
		if r.ExitCodes == nil {
			errs = append(errs, field.Required(rp.Child("exitCodes"), "must be specified"))
			continue
		}
		ops := []corev1.ContainerRestartRuleOnExitCodesOperator{corev1.ContainerRestartRuleOnExitCodesOpIn, corev1.ContainerRestartRuleOnExitCodesOpNotIn}
		if !slices.Contains(ops, r.ExitCodes.Operator) {
			errs = append(errs, field.NotSupported(rp.Child("exitCodes", "operator"), r.ExitCodes.Operator, ops))
		}
		if len(r.ExitCodes.Values) > 255 {
			errs = append(errs, field.TooMany(rp.Child("exitCodes", "values"), len(r.ExitCodes.Values), 255))
		}
	}
	return errs
}

func validateResourceName(p *field.Path, name string) field.ErrorList {
	switch {
	case name == string(corev1.ResourceCPU), name == string(corev1.ResourceMemory), name == string(corev1.ResourceEphemeralStorage),
		strings.HasPrefix(name, corev1.ResourceHugePagesPrefix):
		return nil
	case strings.Contains(name, "/"):
		var errs field.ErrorList
		for _, m := range validation.IsQualifiedName(name) {
			errs = append(errs, field.Invalid(p, name, m))
		}
		return errs
	}
	return field.ErrorList{field.Invalid(p, name, "must be a standard resource type or fully qualified")}
}

// validateProbe checks a defaulted probe: one handler, non-negative numbers, thresholds.
func validateProbe(pr *corev1.Probe, p *field.Path, successMustBeOne bool) field.ErrorList {
	if pr == nil {
		return nil
	}
	errs := validateHandler(&pr.ProbeHandler, p, false)
	for _, f := range []struct {
		name string
		v    int32
		min  int32
	}{
		{"initialDelaySeconds", pr.InitialDelaySeconds, 0}, {"timeoutSeconds", pr.TimeoutSeconds, 1},
		{"periodSeconds", pr.PeriodSeconds, 1}, {"successThreshold", pr.SuccessThreshold, 1},
		{"failureThreshold", pr.FailureThreshold, 1},
	} {
		if f.v < f.min {
			errs = append(errs, field.Invalid(p.Child(f.name), f.v, fmt.Sprintf("must be greater than or equal to %d", f.min)))
		}
	}
	if successMustBeOne && pr.SuccessThreshold != 1 {
		errs = append(errs, field.Invalid(p.Child("successThreshold"), pr.SuccessThreshold, "must be 1"))
	}
	if g := pr.TerminationGracePeriodSeconds; g != nil && *g <= 0 {
		errs = append(errs, field.Invalid(p.Child("terminationGracePeriodSeconds"), *g, "must be greater than 0"))
	}
	return errs
}

// validateLifecycleHandler checks one hook; grace is the pod's terminationGracePeriodSeconds
// (nil: not checked against it): a sleep may not outlast it, as the API server's validation and
// the kubelet's for static pods have it.
func validateLifecycleHandler(h *corev1.LifecycleHandler, p *field.Path, grace *int64) field.ErrorList {
	if h == nil {
		return nil
	}
	ph := corev1.ProbeHandler{Exec: h.Exec, HTTPGet: h.HTTPGet, TCPSocket: h.TCPSocket}
	n := 0
	if h.Sleep != nil {
		n++
		if h.Sleep.Seconds < 0 {
			return field.ErrorList{field.Invalid(p.Child("sleep").Child("seconds"), h.Sleep.Seconds, "must be greater than or equal to 0")}
		}
		if grace != nil && h.Sleep.Seconds > *grace {
			return field.ErrorList{field.Invalid(p.Child("sleep").Child("seconds"), h.Sleep.Seconds,
				fmt.Sprintf("must be non-negative and less than terminationGracePeriodSeconds (%d)", *grace))}
		}
	}
	if n == 1 && (ph.Exec != nil || ph.HTTPGet != nil || ph.TCPSocket != nil) {
		return field.ErrorList{field.Forbidden(p, "may not specify more than 1 handler type")}
	}
	if n == 1 {
		return nil
	}
	return validateHandler(&ph, p, true)
}

// validateHandler checks that exactly one action is set and that it is well formed.
func validateHandler(h *corev1.ProbeHandler, p *field.Path, lifecycle bool) field.ErrorList {
	var errs field.ErrorList
	n := 0
	if h.Exec != nil {
		n++
		if len(h.Exec.Command) == 0 {
			errs = append(errs, field.Required(p.Child("exec").Child("command"), ""))
		}
	}
	if h.HTTPGet != nil {
		n++
		hp := p.Child("httpGet")
		errs = append(errs, validatePortRef(hp.Child("port"), h.HTTPGet.Port)...)
		if !slices.Contains(supportedSchemes, h.HTTPGet.Scheme) {
			errs = append(errs, field.NotSupported(hp.Child("scheme"), h.HTTPGet.Scheme, supportedSchemes))
		}
		for i, hd := range h.HTTPGet.HTTPHeaders {
			for _, m := range validation.IsHTTPHeaderName(hd.Name) {
				errs = append(errs, field.Invalid(hp.Child("httpHeaders").Index(i).Child("name"), hd.Name, m))
			}
		}
	}
	if h.TCPSocket != nil {
		n++
		errs = append(errs, validatePortRef(p.Child("tcpSocket").Child("port"), h.TCPSocket.Port)...)
	}
	if h.GRPC != nil {
		n++
		for _, m := range validation.IsValidPortNum(int(h.GRPC.Port)) {
			errs = append(errs, field.Invalid(p.Child("grpc").Child("port"), h.GRPC.Port, m))
		}
	}
	switch {
	case n == 0 && lifecycle:
		errs = append(errs, field.Required(p, "must specify a handler type"))
	case n == 0:
		errs = append(errs, field.Required(p, "must specify a handler type"))
	case n > 1:
		errs = append(errs, field.Forbidden(p, "may not specify more than 1 handler type"))
	}
	return errs
}

func validatePortRef(p *field.Path, port intstr.IntOrString) field.ErrorList {
	var msgs []string
	if port.Type == intstr.Int {
		msgs = validation.IsValidPortNum(port.IntValue())
	} else {
		msgs = validation.IsValidPortName(port.StrVal)
	}
	var errs field.ErrorList
	for _, m := range msgs {
		errs = append(errs, field.Invalid(p, port.String(), m))
	}
	return errs
}

func nonNegativeID(p *field.Path, id *int64) field.ErrorList {
	if id != nil && (*id < 0 || *id > 2147483647) {
		return field.ErrorList{field.Invalid(p, *id, "must be between 0 and 2147483647, inclusive")}
	}
	return nil
}

// validateAppArmorProfile: a known type; Localhost names its profile, the others do not.
func validateAppArmorProfile(p *field.Path, ap *corev1.AppArmorProfile) field.ErrorList {
	if ap == nil {
		return nil
	}
	types := []corev1.AppArmorProfileType{corev1.AppArmorProfileTypeLocalhost, corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeUnconfined}
	local := ap.LocalhostProfile != nil && *ap.LocalhostProfile != ""
	switch {
	case !slices.Contains(types, ap.Type):
		return field.ErrorList{field.NotSupported(p.Child("type"), ap.Type, types)}
	case ap.Type == corev1.AppArmorProfileTypeLocalhost && !local:
		return field.ErrorList{field.Required(p.Child("localhostProfile"), "must be set when AppArmor type is Localhost")}
	case ap.Type != corev1.AppArmorProfileTypeLocalhost && ap.LocalhostProfile != nil:
		return field.ErrorList{field.Invalid(p.Child("localhostProfile"), ap.LocalhostProfile, "can only be set when AppArmor type is Localhost")}
	}
	return nil
}

func validateSeccomp(p *field.Path, sp *corev1.SeccompProfile) field.ErrorList {
	if sp == nil {
		return nil
	}
	if !slices.Contains(supportedSeccomp, sp.Type) {
		return field.ErrorList{field.NotSupported(p.Child("type"), sp.Type, supportedSeccomp)}
	}
	if sp.Type == corev1.SeccompProfileTypeLocalhost && (sp.LocalhostProfile == nil || *sp.LocalhostProfile == "") {
		return field.ErrorList{field.Required(p.Child("localhostProfile"), "must be set when seccomp type is Localhost")}
	}
	if sp.Type != corev1.SeccompProfileTypeLocalhost && sp.LocalhostProfile != nil {
		return field.ErrorList{field.Invalid(p.Child("localhostProfile"), *sp.LocalhostProfile, "can only be set when seccomp type is Localhost")}
	}
	return nil
}
