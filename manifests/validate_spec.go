package manifests

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateSpecMore checks the pod spec's fields about names, networking, scheduling and the OS,
// as the API server's validation does (which the kubelet applies to a static pod): make
// conformance's edge-* scenarios found each of these run by podkeeper and refused by the kubelet.
func validateSpecMore(spec *corev1.PodSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if d := spec.Subdomain; d != "" {
		errs = append(errs, invalidAll(p.Child("subdomain"), d, validation.IsDNS1123Label(d))...)
	}
	errs = append(errs, validateDNSConfig(spec.DNSConfig, p.Child("dnsConfig"))...)
	for i, a := range spec.HostAliases {
		ap := p.Child("hostAliases").Index(i)
		if _, err := netip.ParseAddr(a.IP); err != nil {
			errs = append(errs, field.Invalid(ap.Child("ip"), a.IP, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"))
		}
		for j, h := range a.Hostnames {
			errs = append(errs, invalidAll(ap.Child("hostnames").Index(j), h, validation.IsDNS1123Subdomain(h))...)
		}
	}
	// hostPorts: one protocol, host IP and port once among the app containers.
	ports := sets.New[string]()
	for i, c := range spec.Containers {
		for j, port := range c.Ports {
			if port.HostPort == 0 {
				continue
			}
			key := fmt.Sprintf("%s/%s/%d", port.Protocol, port.HostIP, port.HostPort)
			if ports.Has(key) {
				errs = append(errs, field.Duplicate(p.Child("containers").Index(i).Child("ports").Index(j).Child("hostPort"), key))
			}
			ports.Insert(key)
		}
	}
	if spec.ShareProcessNamespace != nil && *spec.ShareProcessNamespace && spec.HostPID {
		errs = append(errs, field.Invalid(p.Child("shareProcessNamespace"), true, "ShareProcessNamespace and HostPID cannot both be enabled"))
	}
	if spec.HostUsers != nil && !*spec.HostUsers {
		for _, f := range []struct {
			name string
			set  bool
		}{{"hostNetwork", spec.HostNetwork}, {"hostPID", spec.HostPID}, {"hostIPC", spec.HostIPC}} {
			if f.set {
				errs = append(errs, field.Forbidden(p.Child(f.name), "when `hostUsers` is false"))
			}
		}
	}
	for _, k := range sortedKeys(spec.NodeSelector) {
		kp := p.Child("nodeSelector")
		errs = append(errs, invalidAll(kp, k, validation.IsQualifiedName(k))...)
		errs = append(errs, invalidAll(kp, spec.NodeSelector[k], validation.IsValidLabelValue(spec.NodeSelector[k]))...)
	}
	if pp := spec.PreemptionPolicy; pp != nil && *pp != corev1.PreemptLowerPriority && *pp != corev1.PreemptNever {
		errs = append(errs, field.NotSupported(p.Child("preemptionPolicy"), *pp, []corev1.PreemptionPolicy{corev1.PreemptLowerPriority, corev1.PreemptNever}))
	}
	for i, g := range spec.ReadinessGates {
		ct := string(g.ConditionType)
		errs = append(errs, invalidAll(p.Child("readinessGates").Index(i).Child("conditionType"), ct, validation.IsQualifiedName(ct))...)
	}
	if len(spec.SchedulingGates) > 0 {
		// A static pod is bound to its node from the start (the kubelet's words).
		errs = append(errs, field.Forbidden(p.Child("nodeName"), "cannot be set until all schedulingGates have been cleared"))
	}
	errs = append(errs, validateAffinity(spec.Affinity, p.Child("affinity"))...)
	spreads := sets.New[string]()
	for i, c := range spec.TopologySpreadConstraints {
		cp := p.Child("topologySpreadConstraints").Index(i)
		if key := fmt.Sprintf("{%s, %s}", c.TopologyKey, c.WhenUnsatisfiable); spreads.Has(key) {
			errs = append(errs, field.Duplicate(cp.Child("{topologyKey, whenUnsatisfiable}"), key))
		} else {
			spreads.Insert(key)
		}
		policies := []corev1.NodeInclusionPolicy{corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore}
		if np := c.NodeAffinityPolicy; np != nil && !slices.Contains(policies, *np) {
			errs = append(errs, field.NotSupported(cp.Child("nodeAffinityPolicy"), *np, policies))
		}
		if np := c.NodeTaintsPolicy; np != nil && !slices.Contains(policies, *np) {
			errs = append(errs, field.NotSupported(cp.Child("nodeTaintsPolicy"), *np, policies))
		}
		if c.MaxSkew <= 0 {
			errs = append(errs, field.Invalid(cp.Child("maxSkew"), c.MaxSkew, "must be greater than zero"))
		}
		if c.TopologyKey == "" {
			errs = append(errs, field.Required(cp.Child("topologyKey"), "can not be empty"))
		}
		if w := c.WhenUnsatisfiable; w != corev1.DoNotSchedule && w != corev1.ScheduleAnyway {
			errs = append(errs, field.NotSupported(cp.Child("whenUnsatisfiable"), w, []corev1.UnsatisfiableConstraintAction{corev1.DoNotSchedule, corev1.ScheduleAnyway}))
		}
		if m := c.MinDomains; m != nil {
			switch {
			case *m <= 0:
				errs = append(errs, field.Invalid(cp.Child("minDomains"), *m, "must be greater than 0"))
			case c.WhenUnsatisfiable != corev1.DoNotSchedule:
				errs = append(errs, field.Invalid(cp.Child("minDomains"), *m, fmt.Sprintf("can only use minDomains if whenUnsatisfiable=%s, not %s", corev1.DoNotSchedule, c.WhenUnsatisfiable)))
			}
		}
	}
	eachContainer(spec, p, func(c *corev1.Container, cp *field.Path) {
		errs = append(errs, validateHugePagesNeedCPUOrMemory(c.Resources, cp.Child("resources"))...)
	})
	errs = append(errs, validateTolerations(spec.Tolerations, p.Child("tolerations"))...)
	errs = append(errs, validateOS(spec, p)...)
	return errs
}

// validateDNSConfig: at most 3 nameservers, each an IP; at most 32 search domains, each a DNS
// subdomain (a trailing dot allowed), 2048 characters together; options named.
func validateDNSConfig(c *corev1.PodDNSConfig, p *field.Path) field.ErrorList {
	if c == nil {
		return nil
	}
	var errs field.ErrorList
	if len(c.Nameservers) > 3 {
		errs = append(errs, field.Invalid(p.Child("nameservers"), c.Nameservers, "must not have more than 3 nameservers"))
	}
	for i, ns := range c.Nameservers {
		if _, err := netip.ParseAddr(ns); err != nil {
			errs = append(errs, field.Invalid(p.Child("nameservers").Index(i), ns, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"))
		}
	}
	if len(c.Searches) > 32 {
		errs = append(errs, field.Invalid(p.Child("searches"), c.Searches, "must not have more than 32 search paths"))
	}
	total := 0
	for i, s := range c.Searches {
		total += len(s)
		name := s
		if len(name) > 1 && name[len(name)-1] == '.' {
			name = name[:len(name)-1]
		}
		if s == "." {
			continue
		}
		errs = append(errs, invalidAll(p.Child("searches").Index(i), name, validation.IsDNS1123SubdomainWithUnderscore(name))...)
	}
	if n := len(c.Searches); n > 0 && total+n-1 > 2048 {
		errs = append(errs, field.Invalid(p.Child("searches"), c.Searches, "must not have more than 2048 characters (including spaces) in the search list"))
	}
	for i, o := range c.Options {
		if o.Name == "" {
			errs = append(errs, field.Required(p.Child("options").Index(i), "Option.Name must not be empty"))
		}
	}
	return errs
}

// validateTolerations: a key is a label name; an empty key needs operator Exists; Exists takes
// no value, Equal a label value; tolerationSeconds only with NoExecute; known effects.
func validateTolerations(ts []corev1.Toleration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	effects := []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}
	for i, t := range ts {
		tp := p.Index(i)
		if t.Key != "" {
			errs = append(errs, invalidAll(tp.Child("key"), t.Key, validation.IsQualifiedName(t.Key))...)
		} else if t.Operator != corev1.TolerationOpExists {
			errs = append(errs, field.Invalid(tp.Child("operator"), t.Operator, "operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			errs = append(errs, field.Invalid(tp.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "":
			errs = append(errs, invalidAll(tp.Child("operator"), t.Value, validation.IsValidLabelValue(t.Value))...)
		case corev1.TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(tp.Child("operator"), t.Value, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			errs = append(errs, field.NotSupported(tp.Child("operator"), t.Operator, []corev1.TolerationOperator{corev1.TolerationOpEqual, corev1.TolerationOpExists}))
		}
		if t.Effect != "" && !slices.Contains(effects, t.Effect) {
			errs = append(errs, field.NotSupported(tp.Child("effect"), t.Effect, effects))
		}
	}
	return errs
}

// validateOS: os.name is linux or windows; a windows pod may not set what only Linux has (the
// API's list: SELinux, seccomp, AppArmor, capabilities, privileged, ids, procMount, read-only
// root, sysctls, fsGroup, shared process namespace, user namespaces).
func validateOS(spec *corev1.PodSpec, p *field.Path) field.ErrorList {
	if spec.OS == nil {
		return nil
	}
	op := p.Child("os", "name")
	switch spec.OS.Name {
	case corev1.Linux:
		var errs field.ErrorList
		if sc := spec.SecurityContext; sc != nil && sc.WindowsOptions != nil {
			errs = append(errs, field.Forbidden(p.Child("securityContext", "windowsOptions"), "windows options cannot be set for a linux pod"))
		}
		eachContainer(spec, p, func(c *corev1.Container, cp *field.Path) {
			if sc := c.SecurityContext; sc != nil && sc.WindowsOptions != nil {
				errs = append(errs, field.Forbidden(cp.Child("securityContext", "windowsOptions"), "windows options cannot be set for a linux pod"))
			}
		})
		return errs
	case corev1.Windows:
	default:
		return field.ErrorList{field.NotSupported(op, spec.OS.Name, []corev1.OSName{corev1.Linux, corev1.Windows})}
	}
	var errs field.ErrorList
	forbid := func(fp *field.Path, set bool) {
		if set {
			errs = append(errs, field.Forbidden(fp, "cannot be set for a windows pod"))
		}
	}
	if sc := spec.SecurityContext; sc != nil {
		sp := p.Child("securityContext")
		forbid(sp.Child("seLinuxOptions"), sc.SELinuxOptions != nil)
		forbid(sp.Child("seccompProfile"), sc.SeccompProfile != nil)
		forbid(sp.Child("appArmorProfile"), sc.AppArmorProfile != nil)
		forbid(sp.Child("runAsUser"), sc.RunAsUser != nil)
		forbid(sp.Child("runAsGroup"), sc.RunAsGroup != nil)
		forbid(sp.Child("fsGroup"), sc.FSGroup != nil)
		forbid(sp.Child("fsGroupChangePolicy"), sc.FSGroupChangePolicy != nil)
		forbid(sp.Child("supplementalGroups"), len(sc.SupplementalGroups) > 0)
		forbid(sp.Child("supplementalGroupsPolicy"), sc.SupplementalGroupsPolicy != nil)
		forbid(sp.Child("sysctls"), len(sc.Sysctls) > 0)
		forbid(sp.Child("seLinuxChangePolicy"), sc.SELinuxChangePolicy != nil)
	}
	forbid(p.Child("shareProcessNamespace"), spec.ShareProcessNamespace != nil && *spec.ShareProcessNamespace)
	forbid(p.Child("hostUsers"), spec.HostUsers != nil)
	eachContainer(spec, p, func(c *corev1.Container, cp *field.Path) {
		sc := c.SecurityContext
		if sc == nil {
			return
		}
		sp := cp.Child("securityContext")
		forbid(sp.Child("seLinuxOptions"), sc.SELinuxOptions != nil)
		forbid(sp.Child("seccompProfile"), sc.SeccompProfile != nil)
		forbid(sp.Child("appArmorProfile"), sc.AppArmorProfile != nil)
		forbid(sp.Child("capabilities"), sc.Capabilities != nil)
		forbid(sp.Child("readOnlyRootFilesystem"), sc.ReadOnlyRootFilesystem != nil)
		forbid(sp.Child("privileged"), sc.Privileged != nil)
		forbid(sp.Child("allowPrivilegeEscalation"), sc.AllowPrivilegeEscalation != nil)
		forbid(sp.Child("procMount"), sc.ProcMount != nil)
		forbid(sp.Child("runAsUser"), sc.RunAsUser != nil)
		forbid(sp.Child("runAsGroup"), sc.RunAsGroup != nil)
	})
	return errs
}

// validateResizePolicy: each entry names cpu or memory once, with a known restart policy.
func validateResizePolicy(list []corev1.ContainerResizePolicy, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[corev1.ResourceName]()
	names := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}
	policies := []corev1.ResourceResizeRestartPolicy{corev1.NotRequired, corev1.RestartContainer}
	for i, rp := range list {
		ip := p.Index(i)
		switch {
		case !slices.Contains(names, rp.ResourceName):
			errs = append(errs, field.NotSupported(p, rp.ResourceName, names))
		case seen.Has(rp.ResourceName):
			errs = append(errs, field.Duplicate(ip.Child("resourceName"), rp.ResourceName))
		}
		seen.Insert(rp.ResourceName)
		if !slices.Contains(policies, rp.RestartPolicy) {
			errs = append(errs, field.NotSupported(ip.Child("restartPolicy"), rp.RestartPolicy, policies))
		}
	}
	return errs
}

// validateDownwardItems: each item a relative path without '..', one of fieldRef and
// resourceFieldRef, a fieldRef of what the downward API offers in a volume.
func validateDownwardItems(items []corev1.DownwardAPIVolumeFile, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, it := range items {
		ip := p.Index(i)
		errs = append(errs, validateRelativePath(ip.Child("path"), it.Path)...)
		errs = append(errs, validateMode(ip.Child("mode"), it.Mode)...)
		switch {
		case it.FieldRef != nil && it.ResourceFieldRef != nil:
			errs = append(errs, field.Invalid(ip, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
		case it.FieldRef == nil && it.ResourceFieldRef == nil:
			errs = append(errs, field.Required(ip, "one of fieldRef and resourceFieldRef is required"))
		case it.FieldRef != nil:
			fp := it.FieldRef.FieldPath
			if subErrs, sub := validateSubscript(ip.Child("fieldRef"), fp); sub {
				errs = append(errs, subErrs...)
			} else if !slices.Contains(downwardVolumeFieldPaths, fp) {
				errs = append(errs, field.NotSupported(ip.Child("fieldRef", "fieldPath"), fp, downwardVolumeFieldPaths))
			}
		case it.ResourceFieldRef != nil:
			if it.ResourceFieldRef.ContainerName == "" {
				errs = append(errs, field.Required(ip.Child("resourceFieldRef", "containerName"), ""))
			}
			errs = append(errs, validateDivisor(ip.Child("resourceFieldRef", "divisor"), it.ResourceFieldRef)...)
		}
	}
	return errs
}

// validateAffinity: node selector requirements with known operators (In and NotIn with values,
// Exists and DoesNotExist without, Gt and Lt with one integer) and label keys.
func validateAffinity(a *corev1.Affinity, p *field.Path) field.ErrorList {
	if a == nil {
		return nil
	}
	var errs field.ErrorList
	errs = append(errs, validatePodAffinity(a.PodAffinity, p.Child("podAffinity"))...)
	if pa := a.PodAntiAffinity; pa != nil {
		errs = append(errs, validatePodAffinity(&corev1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution:  pa.RequiredDuringSchedulingIgnoredDuringExecution,
			PreferredDuringSchedulingIgnoredDuringExecution: pa.PreferredDuringSchedulingIgnoredDuringExecution,
		}, p.Child("podAntiAffinity"))...)
	}
	if a.NodeAffinity == nil {
		return errs
	}
	na := a.NodeAffinity
	np := p.Child("nodeAffinity")
	reqs := func(list []corev1.NodeSelectorRequirement, lp *field.Path) {
		for i, r := range list {
			errs = append(errs, validateRequirement(lp.Index(i), r.Key, string(r.Operator), r.Values, true)...)
		}
	}
	term := func(t corev1.NodeSelectorTerm, tp *field.Path) {
		reqs(t.MatchExpressions, tp.Child("matchExpressions"))
	}
	if r := na.RequiredDuringSchedulingIgnoredDuringExecution; r != nil {
		rp := np.Child("requiredDuringSchedulingIgnoredDuringExecution")
		if len(r.NodeSelectorTerms) == 0 {
			errs = append(errs, field.Required(rp.Child("nodeSelectorTerms"), "must have at least one node selector term"))
		}
		for i, t := range r.NodeSelectorTerms {
			term(t, rp.Child("nodeSelectorTerms").Index(i))
		}
	}
	for i, t := range na.PreferredDuringSchedulingIgnoredDuringExecution {
		tp := np.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
		if t.Weight < 1 || t.Weight > 100 {
			errs = append(errs, field.Invalid(tp.Child("weight"), t.Weight, "must be in the range 1-100"))
		}
		term(t.Preference, tp.Child("preference"))
	}
	return errs
}

// validateHugePagesNeedCPUOrMemory: a container asking for hugepages asks for cpu or memory too.
func validateHugePagesNeedCPUOrMemory(r corev1.ResourceRequirements, p *field.Path) field.ErrorList {
	huge, cpuMem := false, false
	for _, list := range []corev1.ResourceList{r.Requests, r.Limits} {
		for name := range list {
			switch {
			case strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix):
				huge = true
			case name == corev1.ResourceCPU, name == corev1.ResourceMemory:
				cpuMem = true
			}
		}
	}
	if huge && !cpuMem {
		return field.ErrorList{field.Forbidden(p, "HugePages require cpu or memory")}
	}
	return nil
}

// validateDivisor: a downward-API divisor the API accepts for the resource (cpu: 1m or 1;
// memory and ephemeral-storage: 1 or a power of 1000 or 1024 up to E or Ei).
func validateDivisor(p *field.Path, r *corev1.ResourceFieldSelector) field.ErrorList {
	if r.Divisor.IsZero() {
		return nil
	}
	d := r.Divisor.String()
	switch {
	case strings.HasSuffix(r.Resource, "cpu"):
		if d != "1m" && d != "1" {
			return field.ErrorList{field.Invalid(p, r.Resource, "only divisor's values 1m and 1 are supported with the cpu resource")}
		}
	case strings.HasSuffix(r.Resource, "memory"), strings.HasSuffix(r.Resource, "ephemeral-storage"):
		ok := []string{"1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei"}
		if !slices.Contains(ok, d) {
			what := "memory"
			if strings.HasSuffix(r.Resource, "ephemeral-storage") {
				what = "local ephemeral storage"
			}
			return field.ErrorList{field.Invalid(p, r.Resource, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the "+what+" resource")}
		}
	}
	return nil
}

// sysctlName is the API's pattern of a sysctl name (dots or slashes between segments).
var sysctlName = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`)

// validateSubscript reports whether fpath is a fieldPath metadata.labels['k'] or
// metadata.annotations['k'], and checks its key: a label key, or an annotation key (a qualified
// name, any case).
func validateSubscript(p *field.Path, fpath string) (field.ErrorList, bool) {
	for _, prefix := range []string{"metadata.labels['", "metadata.annotations['"} {
		rest, ok := strings.CutPrefix(fpath, prefix)
		if !ok {
			continue
		}
		key, ok := strings.CutSuffix(rest, "']")
		if !ok {
			return field.ErrorList{field.Invalid(p.Child("fieldPath"), fpath, "error converting fieldPath: field label not supported")}, true
		}
		if prefix == "metadata.annotations['" {
			key = strings.ToLower(key)
		}
		return invalidAll(p, key, validation.IsQualifiedName(key)), true
	}
	return nil, false
}

// invalidAll is one Invalid error at p for each of msgs about value (a validation.Is*'s answer).
func invalidAll(p *field.Path, value any, msgs []string) field.ErrorList {
	var errs field.ErrorList
	for _, m := range msgs {
		errs = append(errs, field.Invalid(p, value, m))
	}
	return errs
}

// eachContainer calls fn for every init and app container of spec with its field path.
func eachContainer(spec *corev1.PodSpec, p *field.Path, fn func(c *corev1.Container, cp *field.Path)) {
	for i := range spec.InitContainers {
		fn(&spec.InitContainers[i], p.Child("initContainers").Index(i))
	}
	for i := range spec.Containers {
		fn(&spec.Containers[i], p.Child("containers").Index(i))
	}
}

// validateRequirement checks one selector requirement (a node selector's or a label
// selector's): its key a label key; In and NotIn with values, Exists and DoesNotExist without;
// Gt and Lt, with one value, only where numeric (node selectors).
func validateRequirement(rp *field.Path, key, op string, values []string, numeric bool) field.ErrorList {
	var errs field.ErrorList
	switch {
	case op == "In" || op == "NotIn":
		if len(values) == 0 {
			errs = append(errs, field.Required(rp.Child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
		}
	case op == "Exists" || op == "DoesNotExist":
		if len(values) > 0 {
			errs = append(errs, field.Forbidden(rp.Child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
		}
	case numeric && (op == "Gt" || op == "Lt"):
		if len(values) != 1 {
			errs = append(errs, field.Required(rp.Child("values"), "must be specified single value when `operator` is 'Lt' or 'Gt'"))
		}
	default:
		errs = append(errs, field.Invalid(rp.Child("operator"), op, "not a valid selector operator"))
	}
	return append(errs, invalidAll(rp.Child("key"), key, validation.IsQualifiedName(key))...)
}

// linuxStopSignals are the signals lifecycle.stopSignal may name in a Linux pod (the API's list).
var linuxStopSignals = func() sets.Set[corev1.Signal] {
	s := sets.New[corev1.Signal]("SIGABRT", "SIGALRM", "SIGBUS", "SIGCHLD", "SIGCLD", "SIGCONT", "SIGFPE", "SIGHUP",
		"SIGILL", "SIGINT", "SIGIO", "SIGIOT", "SIGKILL", "SIGPIPE", "SIGPOLL", "SIGPROF", "SIGPWR", "SIGQUIT",
		"SIGSEGV", "SIGSTKFLT", "SIGSTOP", "SIGSYS", "SIGTERM", "SIGTRAP", "SIGTSTP", "SIGTTIN", "SIGTTOU", "SIGURG",
		"SIGUSR1", "SIGUSR2", "SIGVTALRM", "SIGWINCH", "SIGXCPU", "SIGXFSZ", "SIGRTMIN", "SIGRTMAX")
	for i := 1; i <= 15; i++ {
		s.Insert(corev1.Signal(fmt.Sprintf("SIGRTMIN+%d", i)))
	}
	for i := 1; i <= 14; i++ {
		s.Insert(corev1.Signal(fmt.Sprintf("SIGRTMAX-%d", i)))
	}
	return s
}()

// validateStopSignal: lifecycle.stopSignal needs spec.os.name; a Linux pod's names one of
// linuxStopSignals, a Windows pod's SIGKILL or SIGTERM.
func validateStopSignal(sig *corev1.Signal, p *field.Path, os *corev1.PodOS) field.ErrorList {
	if sig == nil {
		return nil
	}
	switch {
	case os == nil:
		return field.ErrorList{field.Forbidden(p, "may not be set for containers with empty `spec.os.name`")}
	case os.Name == corev1.Windows && *sig != "SIGKILL" && *sig != "SIGTERM":
		return field.ErrorList{field.NotSupported(p, *sig, []corev1.Signal{"SIGKILL", "SIGTERM"})}
	case os.Name == corev1.Linux && !linuxStopSignals.Has(*sig):
		return field.ErrorList{field.NotSupported(p, *sig, sets.List(linuxStopSignals))}
	}
	return nil
}

// validatePodAffinity: each term has a topologyKey (a label key) and label selectors whose
// requirements use known operators (In and NotIn with values, Exists and DoesNotExist without);
// preferred terms weigh 1 to 100.
func validatePodAffinity(a *corev1.PodAffinity, p *field.Path) field.ErrorList {
	if a == nil {
		return nil
	}
	var errs field.ErrorList
	term := func(t corev1.PodAffinityTerm, tp *field.Path) {
		if t.TopologyKey == "" {
			errs = append(errs, field.Required(tp.Child("topologyKey"), "can not be empty"))
		} else {
			errs = append(errs, invalidAll(tp.Child("topologyKey"), t.TopologyKey, validation.IsQualifiedName(t.TopologyKey))...)
		}
		for _, sel := range []struct {
			name string
			s    *metav1.LabelSelector
		}{{"labelSelector", t.LabelSelector}, {"namespaceSelector", t.NamespaceSelector}} {
			if sel.s == nil {
				continue
			}
			sp := tp.Child(sel.name)
			for k, v := range sel.s.MatchLabels {
				errs = append(errs, invalidAll(sp.Child("matchLabels"), k, validation.IsQualifiedName(k))...)
				errs = append(errs, invalidAll(sp.Child("matchLabels"), v, validation.IsValidLabelValue(v))...)
			}
			for i, r := range sel.s.MatchExpressions {
				errs = append(errs, validateRequirement(sp.Child("matchExpressions").Index(i), r.Key, string(r.Operator), r.Values, false)...)
			}
		}
	}
	for i, t := range a.RequiredDuringSchedulingIgnoredDuringExecution {
		term(t, p.Child("requiredDuringSchedulingIgnoredDuringExecution").Index(i))
	}
	for i, w := range a.PreferredDuringSchedulingIgnoredDuringExecution {
		wp := p.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
		if w.Weight < 1 || w.Weight > 100 {
			errs = append(errs, field.Invalid(wp.Child("weight"), w.Weight, "must be in the range 1-100"))
		}
		term(w.PodAffinityTerm, wp.Child("podAffinityTerm"))
	}
	return errs
}

// downwardVolumeFieldPaths are what a downwardAPI volume item's fieldRef may name (besides
// metadata.labels['k'] and metadata.annotations['k']): no status or spec fields, unlike env.
var downwardVolumeFieldPaths = []string{"metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"}
