package runtime

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// DNSConfig is the node's DNS setup pods' /etc/resolv.conf and /etc/hosts are made from, as the
// kubelet's --cluster-dns, --cluster-domain and --resolv-conf.
type DNSConfig struct {
	// ClusterDNS are the cluster DNS servers for dnsPolicy ClusterFirst. podkeeper runs without a
	// cluster, so this is usually empty; ClusterFirst then falls back to Default (the host's
	// resolv.conf), exactly as the kubelet does when it has no cluster DNS.
	ClusterDNS []string
	// ClusterDomain is the domain of FQDNs (hostname.subdomain.namespace.svc.<domain>) and of
	// ClusterFirst search paths. Default "cluster.local".
	ClusterDomain string
	// ResolvConf is the host file Default (and the ClusterFirst fallback) copy. Default
	// /etc/resolv.conf.
	ResolvConf string
}

func (d DNSConfig) domain() string {
	if d.ClusterDomain == "" {
		return "cluster.local"
	}
	return d.ClusterDomain
}

// The kubelet's limits on a pod's resolv.conf.
const (
	maxDNSNameservers  = 3
	maxDNSSearchPaths  = 32
	maxDNSSearchLength = 2048
)

// PodHostnameAndFQDN is the hostname a pod's containers see and its FQDN: with spec.subdomain,
// <hostname>.<subdomain>.<namespace>.svc.<clusterDomain>, else "". With setHostnameAsFQDN the
// hostname is the FQDN (at most 64 characters, as the kubelet requires).
func PodHostnameAndFQDN(pod *corev1.Pod, clusterDomain string) (hostname, fqdn string, err error) {
	hostname = PodHostname(pod)
	if pod.Spec.HostnameOverride != nil { // the whole name: no subdomain, no FQDN
		return hostname, "", nil
	}
	if pod.Spec.Subdomain != "" {
		if clusterDomain == "" {
			clusterDomain = "cluster.local"
		}
		fqdn = fmt.Sprintf("%s.%s.%s.svc.%s", hostname, pod.Spec.Subdomain, pod.Namespace, clusterDomain)
	}
	if pod.Spec.SetHostnameAsFQDN != nil && *pod.Spec.SetHostnameAsFQDN && fqdn != "" {
		if len(fqdn) > 64 {
			return "", "", fmt.Errorf("failed to construct FQDN from pod hostname and cluster domain, FQDN %s is too long (64 characters is the max, %d characters requested)", fqdn, len(fqdn))
		}
		hostname = fqdn
	}
	return hostname, fqdn, nil
}

// HostsFile renders a pod's /etc/hosts as the kubelet does. A pod with its own network gets
// localhost entries, a line for each pod IP with its FQDN (when it has a subdomain) and hostname,
// then its hostAliases. A hostNetwork pod gets the kubelet's header for it, the host's file and
// its hostAliases. Pure.
func HostsFile(pod *corev1.Pod, podIPs []string, hostname, fqdn string, hostHosts []byte) []byte {
	var b bytes.Buffer
	if pod.Spec.HostNetwork {
		b.WriteString("# Kubernetes-managed hosts file (host network).\n")
		b.Write(hostHosts)
		if len(hostHosts) > 0 && hostHosts[len(hostHosts)-1] != '\n' {
			b.WriteByte('\n')
		}
	} else {
		b.WriteString("# Kubernetes-managed hosts file.\n")
		b.WriteString("127.0.0.1\tlocalhost\n")
		b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
		b.WriteString("fe00::0\tip6-localnet\n")
		b.WriteString("fe00::0\tip6-mcastprefix\n")
		b.WriteString("fe00::1\tip6-allnodes\n")
		b.WriteString("fe00::2\tip6-allrouters\n")
		names := hostname
		if fqdn != "" && fqdn != hostname {
			names = fqdn + "\t" + hostname
		}
		for _, ip := range podIPs {
			fmt.Fprintf(&b, "%s\t%s\n", ip, names)
		}
	}
	if len(pod.Spec.HostAliases) > 0 {
		b.WriteString("\n# Entries added by HostAliases.\n")
		for _, a := range pod.Spec.HostAliases {
			if a.IP == "" || len(a.Hostnames) == 0 {
				continue
			}
			fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
		}
	}
	return b.Bytes()
}

// ResolvSettings is the content of a resolv.conf.
type ResolvSettings struct {
	Nameservers []string
	Searches    []string
	Options     []string
}

// ParseResolvConf reads nameserver, search (and domain) and options lines. Pure.
func ParseResolvConf(b []byte) ResolvSettings {
	var r ResolvSettings
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexAny(line, "#;"); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "nameserver":
			if len(f) > 1 {
				r.Nameservers = append(r.Nameservers, f[1])
			}
		case "domain", "search": // the last of these wins, as the resolver reads them
			r.Searches = append([]string(nil), f[1:]...)
		case "options":
			r.Options = append(r.Options, f[1:]...)
		}
	}
	return r
}

// ResolvConf computes a pod's resolv.conf from its dnsPolicy and dnsConfig the way the kubelet
// does:
//   - Default: the host's resolv.conf (nameservers, searches, options);
//   - ClusterFirst (the default policy), and ClusterFirstWithHostNet: the cluster DNS servers,
//     search <ns>.svc.<domain> svc.<domain> <domain> then the host's searches, options ndots:5;
//     with no cluster DNS configured (podkeeper's usual case), or for a hostNetwork pod under
//     plain ClusterFirst, it falls back to Default;
//   - None: only dnsConfig.
//
// dnsConfig is then merged: nameservers and searches appended without duplicates, options by
// name (the pod's value wins). Nameservers are cut to 3, searches to 32 paths / 2048 characters.
// It also returns a warning when something was cut or ClusterFirst fell back. Pure.
func ResolvConf(pod *corev1.Pod, host ResolvSettings, dns DNSConfig) (ResolvSettings, []string) {
	var warnings []string
	policy := pod.Spec.DNSPolicy
	if policy == "" {
		policy = corev1.DNSClusterFirst
	}
	if policy == corev1.DNSClusterFirst && pod.Spec.HostNetwork {
		policy = corev1.DNSDefault
	}
	if (policy == corev1.DNSClusterFirst || policy == corev1.DNSClusterFirstWithHostNet) && len(dns.ClusterDNS) == 0 {
		warnings = append(warnings, "ClusterFirst policy specified but no cluster DNS configured: falling back to the Default policy (the host's resolv.conf)")
		policy = corev1.DNSDefault
	}
	var r ResolvSettings
	switch policy {
	case corev1.DNSNone:
	case corev1.DNSDefault:
		r = ResolvSettings{Nameservers: append([]string(nil), host.Nameservers...), Searches: append([]string(nil), host.Searches...), Options: append([]string(nil), host.Options...)}
	default: // ClusterFirst, ClusterFirstWithHostNet with cluster DNS
		d := dns.domain()
		r.Nameservers = append([]string(nil), dns.ClusterDNS...)
		r.Searches = append([]string{pod.Namespace + ".svc." + d, "svc." + d, d}, host.Searches...)
		r.Options = []string{"ndots:5"}
	}
	if dc := pod.Spec.DNSConfig; dc != nil {
		r.Nameservers = append(r.Nameservers, dc.Nameservers...)
		r.Searches = append(r.Searches, dc.Searches...)
		r.Options = mergeDNSOptions(r.Options, dc.Options)
	}
	r.Nameservers = dedup(r.Nameservers)
	r.Searches = dedup(r.Searches)
	if len(r.Nameservers) > maxDNSNameservers {
		warnings = append(warnings, fmt.Sprintf("Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: %s", strings.Join(r.Nameservers[:maxDNSNameservers], " ")))
		r.Nameservers = r.Nameservers[:maxDNSNameservers]
	}
	if cut := trimSearches(r.Searches); len(cut) < len(r.Searches) {
		warnings = append(warnings, fmt.Sprintf("Search Line limits were exceeded, some search paths have been omitted, the applied search line is: %s", strings.Join(cut, " ")))
		r.Searches = cut
	}
	return r, warnings
}

func trimSearches(s []string) []string {
	if len(s) > maxDNSSearchPaths {
		s = s[:maxDNSSearchPaths]
	}
	for len(s) > 0 && len(strings.Join(s, " ")) > maxDNSSearchLength {
		s = s[:len(s)-1]
	}
	return s
}

func dedup(in []string) []string {
	seen := map[string]bool{}
	out := in[:0:0]
	for _, s := range in {
		if s == "" || seen[s] {
			continue
		}
		seen[s] = true
		out = append(out, s)
	}
	return out
}

// mergeDNSOptions overlays the pod's dnsConfig options on base: same name replaces, new names
// are appended.
func mergeDNSOptions(base []string, pod []corev1.PodDNSConfigOption) []string {
	out := append([]string(nil), base...)
	index := map[string]int{}
	for i, o := range out {
		name, _, _ := strings.Cut(o, ":")
		index[name] = i
	}
	for _, o := range pod {
		s := o.Name
		if o.Value != nil {
			s += ":" + *o.Value
		}
		if i, ok := index[o.Name]; ok {
			out[i] = s
			continue
		}
		index[o.Name] = len(out)
		out = append(out, s)
	}
	return out
}

// Render writes the settings in resolv.conf syntax.
func (r ResolvSettings) Render() []byte {
	var b bytes.Buffer
	if len(r.Searches) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(r.Searches, " "))
	}
	for _, n := range r.Nameservers {
		fmt.Fprintf(&b, "nameserver %s\n", n)
	}
	if len(r.Options) > 0 {
		fmt.Fprintf(&b, "options %s\n", strings.Join(r.Options, " "))
	}
	return b.Bytes()
}
