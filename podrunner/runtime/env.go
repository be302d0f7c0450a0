package runtime

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/podkeeper/podkeeper/podrunner"
)

// ContainerEnv resolves a container's environment as the kubelet does: first every envFrom source
// in order (each key of the ConfigMap or Secret, with the prefix; later sources override earlier
// ones), then env in order, a plain value expanding $(VAR) references to the variables defined so
// far, configMapKeyRef and secretKeyRef read through lookup, and other sources (fieldRef...) through
// resolveSource. The result keeps the order in which names first appear.
//
// A ConfigMap, Secret or key that is missing and not optional is an error with the kubelet's
// message (`configmap "x" not found`, `couldn't find key k in ConfigMap default/x`): the container
// must not start (CreateContainerConfigError). envFrom keys that are not valid variable names are
// skipped and returned in skipped, as "<key> (from ConfigMap ns/name)".
//
// fileKeyRef variables are read through files (nil: none): an error reading or parsing the file
// is the container's configuration error ("couldn't parse env file"); a key missing and not
// optional too.
func ContainerEnv(c *corev1.Container, namespace string, lookup podrunner.ConfigLookup, resolveSource func(corev1.EnvVar) string, files func(corev1.FileKeySelector) (string, bool, error)) (env []corev1.EnvVar, skipped []string, err error) {
	var (
		order []string
		vars  = map[string]string{}
	)
	set := func(name, value string) {
		if _, ok := vars[name]; !ok {
			order = append(order, name)
		}
		vars[name] = value
	}
	for _, ef := range c.EnvFrom {
		var (
			data     map[string]string
			kind     string
			name     string
			optional bool
			found    bool
		)
		switch {
		case ef.ConfigMapRef != nil:
			kind, name, optional = "ConfigMap", ef.ConfigMapRef.Name, isTrue(ef.ConfigMapRef.Optional)
			var cm *corev1.ConfigMap
			if cm, found = getConfigMap(lookup, namespace, name); found {
				data = cm.Data
			}
		case ef.SecretRef != nil:
			kind, name, optional = "Secret", ef.SecretRef.Name, isTrue(ef.SecretRef.Optional)
			var s *corev1.Secret
			if s, found = getSecret(lookup, namespace, name); found {
				data = map[string]string{}
				for k, v := range s.Data {
					data[k] = string(v)
				}
			}
		default:
			continue
		}
		if !found {
			if optional {
				continue
			}
			return nil, nil, configNotFound(kind, name)
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			n := ef.Prefix + k
			if len(validation.IsRelaxedEnvVarName(n)) > 0 {
				skipped = append(skipped, fmt.Sprintf("%s (from %s %s/%s)", n, kind, namespace, name))
				continue
			}
			set(n, data[k])
		}
	}
	for _, e := range c.Env {
		v := e.Value
		switch vf := e.ValueFrom; {
		case vf == nil:
			v = ExpandEnv(v, vars)
		case vf.ConfigMapKeyRef != nil:
			r := vf.ConfigMapKeyRef
			cm, ok := getConfigMap(lookup, namespace, r.Name)
			if !ok {
				if isTrue(r.Optional) {
					continue
				}
				return nil, nil, configNotFound("ConfigMap", r.Name)
			}
			val, ok := cm.Data[r.Key]
			if !ok {
				if b, bok := cm.BinaryData[r.Key]; bok {
					val, ok = string(b), true
				}
			}
			if !ok {
				if isTrue(r.Optional) {
					continue
				}
				return nil, nil, fmt.Errorf("couldn't find key %s in ConfigMap %s/%s", r.Key, namespace, r.Name)
			}
			v = val
		case vf.SecretKeyRef != nil:
			r := vf.SecretKeyRef
			s, ok := getSecret(lookup, namespace, r.Name)
			if !ok {
				if isTrue(r.Optional) {
					continue
				}
				return nil, nil, configNotFound("Secret", r.Name)
			}
			b, ok := s.Data[r.Key]
			if !ok {
				if isTrue(r.Optional) {
					continue
				}
				return nil, nil, fmt.Errorf("couldn't find key %s in Secret %s/%s", r.Key, namespace, r.Name)
			}
			v = string(b)
		case vf.FileKeyRef != nil:
			f := vf.FileKeyRef
			if files == nil {
				return nil, nil, fmt.Errorf("cannot find the volume %q referenced by FileKeyRef", f.VolumeName)
			}
			val, found, err := files(*f)
			if vnf := (*volumeNotFound)(nil); errors.As(err, &vnf) {
				return nil, nil, vnf // as the kubelet says it, not an env file it could not parse
			}
			if err != nil {
				return nil, nil, fmt.Errorf("couldn't parse env file: %w", err)
			}
			if !found || val == "" {
				if isTrue(f.Optional) {
					continue
				}
				return nil, nil, fmt.Errorf("environment variable key %q not found in file %q", f.Key, f.Path)
			}
			v = val
		case resolveSource != nil:
			v = resolveSource(e)
		}
		set(e.Name, v)
	}
	env = make([]corev1.EnvVar, 0, len(order))
	for _, n := range order {
		env = append(env, corev1.EnvVar{Name: n, Value: vars[n]})
	}
	return env, skipped, nil
}

func configNotFound(kind, name string) error {
	return fmt.Errorf("%s %q not found", strings.ToLower(kind), name)
}

func isTrue(b *bool) bool { return b != nil && *b }

func getConfigMap(l podrunner.ConfigLookup, ns, name string) (*corev1.ConfigMap, bool) {
	if l == nil {
		return nil, false
	}
	return l.ConfigMap(ns, name)
}

func getSecret(l podrunner.ConfigLookup, ns, name string) (*corev1.Secret, bool) {
	if l == nil {
		return nil, false
	}
	return l.Secret(ns, name)
}
