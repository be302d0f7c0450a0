package manifests

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MaxConfigSize is the API server's limit on the data of one ConfigMap or Secret (1 MiB).
const MaxConfigSize = 1 << 20

// AnnotationManifestError is set on the pods of a file whose current content is rejected while its
// last good pods keep running; it holds the error. Absent when the file is fine.
const AnnotationManifestError = "podkeeper.io/manifest-error"

// validateConfigMap checks a ConfigMap as the API server does: its name and keys, no key in both
// data and binaryData, and the size limit.
func validateConfigMap(cm *corev1.ConfigMap) field.ErrorList {
	errs := validateConfigMeta(cm.Name, cm.Namespace)
	size := 0
	for _, k := range sortedKeys(cm.Data) {
		errs = append(errs, validateKey(field.NewPath("data").Key(k), k)...)
		size += len(cm.Data[k])
	}
	for _, k := range sortedKeys(cm.BinaryData) {
		p := field.NewPath("binaryData").Key(k)
		errs = append(errs, validateKey(p, k)...)
		if _, dup := cm.Data[k]; dup {
			errs = append(errs, field.Invalid(p, k, "duplicate of key present in data"))
		}
		size += len(cm.BinaryData[k])
	}
	if size > MaxConfigSize {
		errs = append(errs, field.TooLong(field.NewPath(""), "", MaxConfigSize))
	}
	return errs
}

// defaultSecret merges stringData into data (stringData wins, as the API server does) and
// defaults the type to Opaque.
func defaultSecret(s *corev1.Secret) {
	if s.Namespace == "" {
		s.Namespace = corev1.NamespaceDefault
	}
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
	if len(s.StringData) > 0 {
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
		s.StringData = nil
	}
}

// validateSecret checks a (defaulted) Secret: name, keys, size, and the keys its type requires.
func validateSecret(s *corev1.Secret) field.ErrorList {
	errs := validateConfigMeta(s.Name, s.Namespace)
	size := 0
	for _, k := range sortedKeys(s.Data) {
		errs = append(errs, validateKey(field.NewPath("data").Key(k), k)...)
		size += len(s.Data[k])
	}
	if size > MaxConfigSize {
		errs = append(errs, field.TooLong(field.NewPath("data"), "", MaxConfigSize))
	}
	var need []string
	switch s.Type {
	case corev1.SecretTypeTLS:
		need = []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey}
	case corev1.SecretTypeDockerConfigJson:
		need = []string{corev1.DockerConfigJsonKey}
	case corev1.SecretTypeDockercfg:
		need = []string{corev1.DockerConfigKey}
	case corev1.SecretTypeBasicAuth:
		if len(s.Data[corev1.BasicAuthUsernameKey]) == 0 && len(s.Data[corev1.BasicAuthPasswordKey]) == 0 {
			errs = append(errs, field.Required(field.NewPath("data"), "username or password is required for kubernetes.io/basic-auth"))
		}
	case corev1.SecretTypeSSHAuth:
		need = []string{corev1.SSHAuthPrivateKey}
	}
	for _, k := range need {
		if _, ok := s.Data[k]; !ok {
			errs = append(errs, field.Required(field.NewPath("data").Key(k), ""))
		}
	}
	return errs
}

func validateConfigMeta(name, namespace string) field.ErrorList {
	var errs field.ErrorList
	meta := field.NewPath("metadata")
	if name == "" {
		errs = append(errs, field.Required(meta.Child("name"), ""))
	}
	for _, m := range validation.IsDNS1123Subdomain(name) {
		if name != "" {
			errs = append(errs, field.Invalid(meta.Child("name"), name, m))
		}
	}
	for _, m := range validation.IsDNS1123Label(namespace) {
		errs = append(errs, field.Invalid(meta.Child("namespace"), namespace, m))
	}
	return errs
}

func validateKey(p *field.Path, k string) field.ErrorList {
	var errs field.ErrorList
	for _, m := range validation.IsConfigMapKey(k) {
		errs = append(errs, field.Invalid(p, k, m))
	}
	return errs
}

func sortedKeys[K ~string, V any](m map[K]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, string(k))
	}
	sort.Strings(out)
	return out
}

// setConfigIdentity records where a ConfigMap or Secret came from.
func setConfigIdentity(meta interface {
	GetAnnotations() map[string]string
	SetAnnotations(map[string]string)
}, path string) {
	a := meta.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[AnnotationConfigSource] = SourceFile
	a[AnnotationManifestPath] = path
	meta.SetAnnotations(a)
}

// ConfigSet is the set of ConfigMaps and Secrets of the desired state, by namespace/name. It
// implements podrunner.ConfigLookup. It is read-only once built and safe for concurrent use.
type ConfigSet struct {
	configMaps map[string]*corev1.ConfigMap
	secrets    map[string]*corev1.Secret
}

// NewConfigSet indexes cms and secrets (the first of a name wins).
func NewConfigSet(cms []*corev1.ConfigMap, secrets []*corev1.Secret) *ConfigSet {
	s := &ConfigSet{configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{}}
	for _, cm := range cms {
		if _, ok := s.configMaps[cm.Namespace+"/"+cm.Name]; !ok {
			s.configMaps[cm.Namespace+"/"+cm.Name] = cm
		}
	}
	for _, sec := range secrets {
		if _, ok := s.secrets[sec.Namespace+"/"+sec.Name]; !ok {
			s.secrets[sec.Namespace+"/"+sec.Name] = sec
		}
	}
	return s
}

// ConfigMap returns the ConfigMap namespace/name. Callers must not modify it.
func (s *ConfigSet) ConfigMap(namespace, name string) (*corev1.ConfigMap, bool) {
	if s == nil {
		return nil, false
	}
	cm, ok := s.configMaps[namespace+"/"+name]
	return cm, ok
}

// Secret returns the Secret namespace/name. Callers must not modify it.
func (s *ConfigSet) Secret(namespace, name string) (*corev1.Secret, bool) {
	if s == nil {
		return nil, false
	}
	sec, ok := s.secrets[namespace+"/"+name]
	return sec, ok
}

// EnvConfigRef is one ConfigMap or Secret (or one key of it) a pod's env or envFrom reads.
type EnvConfigRef struct {
	Kind string // "ConfigMap" or "Secret"
	Name string
	Key  string // "" for envFrom: the whole object
}

// EnvConfigRefs lists the ConfigMaps and Secrets the env and envFrom of a pod's containers
// read, sorted and without duplicates. Volumes are not included: their files are updated in
// place and do not change the pod's identity.
func EnvConfigRefs(pod *corev1.Pod) []EnvConfigRef {
	set := map[EnvConfigRef]bool{}
	add := func(cs []corev1.Container) {
		for _, c := range cs {
			for _, ef := range c.EnvFrom {
				if ef.ConfigMapRef != nil {
					set[EnvConfigRef{Kind: "ConfigMap", Name: ef.ConfigMapRef.Name}] = true
				}
				if ef.SecretRef != nil {
					set[EnvConfigRef{Kind: "Secret", Name: ef.SecretRef.Name}] = true
				}
			}
			for _, e := range c.Env {
				if e.ValueFrom == nil {
					continue
				}
				if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
					set[EnvConfigRef{Kind: "ConfigMap", Name: r.Name, Key: r.Key}] = true
				}
				if r := e.ValueFrom.SecretKeyRef; r != nil {
					set[EnvConfigRef{Kind: "Secret", Name: r.Name, Key: r.Key}] = true
				}
			}
		}
	}
	add(pod.Spec.InitContainers)
	add(pod.Spec.Containers)
	out := make([]EnvConfigRef, 0, len(set))
	for r := range set {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Key < b.Key
	})
	return out
}

// ConfigLookup finds ConfigMaps and Secrets (a *ConfigSet is one).
type ConfigLookup interface {
	ConfigMap(namespace, name string) (*corev1.ConfigMap, bool)
	Secret(namespace, name string) (*corev1.Secret, bool)
}

// BindEnvConfig folds the content of the ConfigMaps and Secrets a pod's env and envFrom read into
// its identity, so that a change to them makes a new pod (and the old one is replaced) while
// pods that do not read them keep their UID. A pod that reads none is returned unchanged; the
// others get a new UID and config hash derived from their manifest UID and, for each reference in
// EnvConfigRefs order, the value read (the key's value, the whole data for envFrom, or "absent").
// pod is modified in place.
func BindEnvConfig(pod *corev1.Pod, lookup ConfigLookup) {
	refs := EnvConfigRefs(pod)
	if len(refs) == 0 {
		return
	}
	h := sha256.New()
	h.Write([]byte(pod.UID))
	for _, r := range refs {
		var data map[string][]byte
		found := false
		switch r.Kind {
		case "ConfigMap":
			if cm, ok := lookup.ConfigMap(pod.Namespace, r.Name); ok {
				found = true
				data = map[string][]byte{}
				for k, v := range cm.Data {
					data[k] = []byte(v)
				}
				for k, v := range cm.BinaryData {
					data[k] = v
				}
			}
		case "Secret":
			if s, ok := lookup.Secret(pod.Namespace, r.Name); ok {
				found = true
				data = s.Data
			}
		}
		var value any = "absent"
		switch {
		case found && r.Key == "":
			value = data // json.Marshal sorts map keys
		case found:
			if v, ok := data[r.Key]; ok {
				value = v
			}
		}
		b, _ := json.Marshal([]any{r.Kind, r.Name, r.Key, value})
		fmt.Fprintf(h, "%d:", len(b))
		h.Write(b)
	}
	uid := types.UID(hex.EncodeToString(h.Sum(nil))[:32])
	pod.UID = uid
	pod.Annotations[AnnotationConfigHash] = string(uid)
}

// SalvagePodNames reads, leniently, the namespace/name of every Pod a file that Decode rejects
// would declare ("default/web-node1"), as far as its YAML or JSON can be read at all: unknown
// fields and invalid values do not matter, only metadata.name. It lets the agent recognise, after
// a restart, the running pods of a manifest that is broken now. It never fails; unreadable
// documents give nothing.
func SalvagePodNames(data []byte, nodeName string) []string {
	if len(data) > MaxFileSize {
		return nil
	}
	var out []string
	var visit func(obj map[string]any, inPodList bool, depth int)
	visit = func(obj map[string]any, inPodList bool, depth int) {
		kind, _ := obj["kind"].(string)
		if inPodList && kind == "" {
			kind = "Pod"
		}
		switch kind {
		case "Pod":
			meta, _ := obj["metadata"].(map[string]any)
			name, _ := meta["name"].(string)
			ns, _ := meta["namespace"].(string)
			if name == "" {
				return
			}
			if ns == "" {
				ns = corev1.NamespaceDefault
			}
			out = append(out, ns+"/"+StaticPodName(name, nodeName))
		case "PodList", "List":
			if depth > 0 {
				return
			}
			items, _ := obj["items"].([]any)
			for _, it := range items {
				if m, ok := it.(map[string]any); ok {
					visit(m, kind == "PodList", depth+1)
				}
			}
		}
	}
	for _, doc := range splitDocuments(data) {
		j, err := toJSON(doc)
		if err != nil || j == nil {
			continue
		}
		var obj map[string]any
		if json.Unmarshal(j, &obj) == nil {
			visit(obj, false, 0)
		}
	}
	return out
}
