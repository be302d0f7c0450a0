// Package manifests turns the bytes of a static-pod manifest file into
// defaulted, validated Pods carrying their static-pod identity.
//
// The package is pure: it does no I/O beyond the bytes handed in and its
// output depends only on its input (path, content and node name), so the
// same file always yields the same pods with the same UIDs.
package manifests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// MaxFileSize is the largest manifest file DecodeFile accepts, in bytes.
const MaxFileSize = 10 << 20

// Objects is everything one manifest file declares.
type Objects struct {
	Pods       []*corev1.Pod       `json:"pods,omitempty"`
	ConfigMaps []*corev1.ConfigMap `json:"configMaps,omitempty"`
	Secrets    []*corev1.Secret    `json:"secrets,omitempty"`
}

// Len is the number of objects.
func (o *Objects) Len() int { return len(o.Pods) + len(o.ConfigMaps) + len(o.Secrets) }

// DecodeFile parses one manifest file's content and returns its Pods only (see Decode).
func DecodeFile(path string, data []byte, nodeName string) ([]*corev1.Pod, error) {
	objs, err := Decode(path, data, nodeName)
	if err != nil {
		return nil, err
	}
	return objs.Pods, nil
}

// Decode parses one manifest file's content. path is used for identity and messages only.
// A file is multi-document YAML separated by ---, or a single JSON object; each document is a
// v1 Pod, ConfigMap or Secret, or a v1 PodList/List of them. Every object is strictly decoded,
// defaulted and validated; pods get their static-pod identity. Empty documents are skipped.
// On any problem it returns a *FileError listing EVERY problem of the file (each with document
// index and a field path where known) and no objects (a file is all or nothing).
func Decode(path string, data []byte, nodeName string) (*Objects, error) {
	if len(data) > MaxFileSize {
		return nil, &FileError{Path: path, Problems: []Problem{{
			Doc:     FileDoc,
			Message: fmt.Sprintf("file exceeds the size limit of %d bytes", MaxFileSize),
		}}}
	}
	d := &fileDecoder{path: path, node: nodeName, objs: &Objects{}, seen: map[string]int{}}
	for i, doc := range splitDocuments(data) {
		d.document(i, doc)
	}
	if len(d.problems) > 0 {
		return nil, &FileError{Path: path, Problems: d.problems}
	}
	return d.objs, nil
}

// fileDecoder collects the objects and problems of one file.
type fileDecoder struct {
	path, node string
	objs       *Objects
	problems   []Problem
	seen       map[string]int // kind namespace/name -> doc index
}

func (d *fileDecoder) fail(idx int, field, format string, args ...any) {
	d.problems = append(d.problems, Problem{Doc: idx, Field: field, Message: fmt.Sprintf(format, args...)})
}

// document decodes document number idx.
func (d *fileDecoder) document(idx int, doc []byte) {
	jsonDoc, err := toJSON(doc)
	if err != nil {
		d.fail(idx, "", "%v", err)
		return
	}
	if jsonDoc == nil {
		return // empty document
	}
	d.object(idx, "", jsonDoc, false)
}

// object decodes one object (a document, or an item of a list whose field path prefix is
// prefix). inPodList lets the item omit apiVersion and kind.
func (d *fileDecoder) object(idx int, prefix string, jsonDoc []byte, inPodList bool) {
	// The normalised form (generic map re-marshalled with sorted keys) is
	// what the UID is computed from.
	var generic any
	dec := json.NewDecoder(bytes.NewReader(jsonDoc))
	dec.UseNumber() // keep numbers exactly as written
	if err := dec.Decode(&generic); err != nil {
		d.fail(idx, prefix, "invalid JSON: %v", err)
		return
	}
	if dec.More() {
		d.fail(idx, prefix, "invalid JSON: unexpected data after the top-level object")
		return
	}
	obj, ok := generic.(map[string]any)
	if !ok {
		if prefix != "" {
			d.fail(idx, strings.TrimSuffix(prefix, "."), "list item is not an object")
			return
		}
		d.fail(idx, "", "document is not an object")
		return
	}
	normalized, err := json.Marshal(obj)
	if err != nil {
		d.fail(idx, prefix, "normalising document: %v", err)
		return
	}
	kind, _ := obj["kind"].(string)
	apiVersion, _ := obj["apiVersion"].(string)
	if inPodList && kind == "" && apiVersion == "" {
		kind, apiVersion = "Pod", "v1"
	}
	switch {
	case kind == "":
		d.fail(idx, prefix+"kind", "kind is required (%s)", supportedKinds)
		return
	case apiVersion == "":
		d.fail(idx, prefix+"apiVersion", "apiVersion is required (%s)", supportedKinds)
		return
	case apiVersion != "v1" || !slices.Contains([]string{"Pod", "ConfigMap", "Secret", "PodList", "List"}, kind) ||
		(inPodList && kind != "Pod") || (prefix != "" && (kind == "List" || kind == "PodList")):
		supported := supportedKinds
		switch {
		case inPodList:
			supported = "a PodList holds v1 Pods only"
		case prefix != "":
			supported = "a List holds v1 Pods, ConfigMaps and Secrets"
		}
		d.fail(idx, strings.TrimSuffix(prefix, "."), "kind %s is not supported (%s)", describeKind(apiVersion, kind), supported)
		return
	}
	mark := len(d.problems)
	switch kind {
	case "Pod":
		var pod corev1.Pod
		if !d.strict(idx, prefix, jsonDoc, &pod, "Pod") {
			return
		}
		applyDefaults(&pod)
		if !d.validated(idx, prefix, validatePod(&pod, d.node), mark) {
			return
		}
		setIdentity(&pod, d.node, d.path, PodUID(d.node, d.path, normalized))
		if d.unique(idx, prefix, "pod", pod.Namespace+"/"+pod.Name) {
			d.objs.Pods = append(d.objs.Pods, &pod)
		}
	case "ConfigMap":
		var cm corev1.ConfigMap
		if !d.strict(idx, prefix, jsonDoc, &cm, "ConfigMap") {
			return
		}
		if cm.Namespace == "" {
			cm.Namespace = corev1.NamespaceDefault
		}
		if !d.validated(idx, prefix, validateConfigMap(&cm), mark) {
			return
		}
		setConfigIdentity(&cm.ObjectMeta, d.path)
		if d.unique(idx, prefix, "configmap", cm.Namespace+"/"+cm.Name) {
			d.objs.ConfigMaps = append(d.objs.ConfigMaps, &cm)
		}
	case "Secret":
		var s corev1.Secret
		if !d.strict(idx, prefix, jsonDoc, &s, "Secret") {
			return
		}
		defaultSecret(&s)
		if !d.validated(idx, prefix, validateSecret(&s), mark) {
			return
		}
		setConfigIdentity(&s.ObjectMeta, d.path)
		if d.unique(idx, prefix, "secret", s.Namespace+"/"+s.Name) {
			d.objs.Secrets = append(d.objs.Secrets, &s)
		}
	case "PodList", "List":
		var list listDocument
		if !d.strict(idx, prefix, jsonDoc, &list, kind) || len(d.problems) > mark {
			return
		}
		for i, item := range list.Items {
			d.object(idx, fmt.Sprintf("%sitems[%d].", prefix, i), item, kind == "PodList")
		}
	}
}

// typeErrorField finds the field path in a JSON type error ("... into Go struct field
// Container.spec.containers.image of type string").
var typeErrorField = regexp.MustCompile(`into Go struct field \w+\.(\S+) of type`)

// sanitizeQuantities replaces every unparsable resource quantity in a generic document (under
// resources.limits/requests, overhead, emptyDir.sizeLimit) by "0" and returns a problem for each,
// with its field path below path.
func sanitizeQuantities(v any, path string) []Problem {
	var probs []Problem
	check := func(m map[string]any, key, p string) {
		var s string
		switch q := m[key].(type) {
		case string:
			s = q
		case float64:
			return // a plain number is a valid quantity
		default:
			s = fmt.Sprint(q)
		}
		if _, err := resource.ParseQuantity(s); err != nil {
			probs = append(probs, Problem{Field: p, Message: fmt.Sprintf("Invalid value: %q: %v", s, err)})
			m[key] = "0"
		}
	}
	switch t := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(t) {
			p := k
			if path != "" {
				p = path + "." + k
			}
			child := t[k]
			switch {
			case k == "sizeLimit" && strings.HasSuffix(path, "emptyDir"):
				check(t, k, p)
			case (k == "limits" || k == "requests") && strings.HasSuffix(path, "resources"), k == "overhead" && path == "spec":
				if m, ok := child.(map[string]any); ok {
					for _, name := range sortedKeys(m) {
						check(m, name, p+"["+name+"]")
					}
				}
			default:
				probs = append(probs, sanitizeQuantities(child, p)...)
			}
		}
	case []any:
		for i, item := range t {
			probs = append(probs, sanitizeQuantities(item, fmt.Sprintf("%s[%d]", path, i))...)
		}
	}
	return probs
}

// supportedKinds is said in kind errors.
const supportedKinds = "supported: v1 Pod, ConfigMap, Secret, PodList, List"

// listDocument is a v1 List or PodList with its items kept raw.
type listDocument struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []json.RawMessage `json:"items"`
}

// strict decodes jsonDoc into out, rejecting unknown and duplicate fields; it records the
// problems and reports whether out was decoded at all (it was, if only strict problems occurred).
func (d *fileDecoder) strict(idx int, prefix string, jsonDoc []byte, out any, kind string) bool {
	strictErrs, err := sigsjson.UnmarshalStrict(jsonDoc, out,
		sigsjson.DisallowUnknownFields, sigsjson.DisallowDuplicateFields)
	if err != nil {
		// A bad quantity stops the decoder without saying where: find every one (with its
		// path), and decode again without them so that the rest is still checked.
		var generic any
		if json.Unmarshal(jsonDoc, &generic) == nil {
			if probs := sanitizeQuantities(generic, ""); len(probs) > 0 {
				if fixed, merr := json.Marshal(generic); merr == nil {
					if strictErrs, err = sigsjson.UnmarshalStrict(fixed, out,
						sigsjson.DisallowUnknownFields, sigsjson.DisallowDuplicateFields); err == nil {
						for _, p := range probs {
							d.fail(idx, prefix+p.Field, "%s", p.Message)
						}
					}
				}
			}
		}
	}
	if err != nil {
		field := strings.TrimSuffix(prefix, ".")
		if m := typeErrorField.FindStringSubmatch(err.Error()); m != nil {
			field = prefix + m[1]
		}
		d.fail(idx, field, "decoding %s: %v", kind, err)
		return false
	}
	for _, se := range strictErrs {
		p := Problem{Doc: idx, Message: se.Error()}
		if fe, ok := se.(sigsjson.FieldError); ok {
			p.Field = prefix + fe.FieldPath()
			if prefix != "" {
				p.Message = strings.Replace(p.Message, `"`+fe.FieldPath()+`"`, `"`+p.Field+`"`, 1)
			}
		}
		d.problems = append(d.problems, p)
	}
	return true // unknown fields are reported, and validation still runs to report the rest
}

// validated records validation errors (field paths under prefix) and reports whether the object
// has no problem at all (neither strict decoding nor validation ones), counting from mark.
func (d *fileDecoder) validated(idx int, prefix string, errs field.ErrorList, mark int) bool {
	for _, fe := range errs {
		d.problems = append(d.problems, Problem{Doc: idx, Field: prefix + fe.Field, Message: fe.ErrorBody()})
	}
	return len(d.problems) == mark
}

// unique reports whether kind key is new in the file, recording a problem otherwise.
func (d *fileDecoder) unique(idx int, prefix, kind, key string) bool {
	k := kind + " " + key
	if first, dup := d.seen[k]; dup {
		d.fail(idx, prefix+"metadata.name", "%s %s is already defined in doc %d", kind, key, first)
		return false
	}
	d.seen[k] = idx
	return true
}

// describeKind names a kind the way a user wrote it: "ConfigMap", or
// "apps/v1 Deployment" when the apiVersion is not v1.
func describeKind(apiVersion, kind string) string {
	if apiVersion == "v1" {
		return kind
	}
	return apiVersion + " " + kind
}

// toJSON converts one document to JSON. It returns nil, nil for a document
// that holds nothing (only blanks or comments, or an explicit null).
func toJSON(doc []byte) ([]byte, error) {
	trimmed := bytes.TrimSpace(doc)
	if len(trimmed) == 0 {
		return nil, nil
	}
	var out []byte
	if trimmed[0] == '{' && json.Valid(trimmed) {
		// JSON (a subset of YAML) is used as is, so numbers and
		// duplicate keys are seen exactly as written.
		out = trimmed
	} else {
		var err error
		if out, err = yaml.YAMLToJSONStrict(doc); err != nil {
			return nil, fmt.Errorf("invalid YAML: %w", err)
		}
	}
	if string(bytes.TrimSpace(out)) == "null" {
		return nil, nil
	}
	return out, nil
}

// splitDocuments splits a file into its YAML documents. A file whose first
// non-blank byte is '{' is a single JSON document. Separator lines are
// "---", optionally followed by blanks and a comment or inline content,
// which belongs to the next document. A leading chunk of only blank lines
// and comments before the first separator is dropped, so that a file
// starting with "---" (or a comment header) has its first pod as doc 0.
func splitDocuments(data []byte) [][]byte {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // UTF-8 BOM
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' {
		return [][]byte{data}
	}
	var (
		docs    [][]byte
		current []byte
		sawSep  bool
	)
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		if rest, ok := separatorRest(line); ok {
			if sawSep || !onlyComments(current) {
				docs = append(docs, current)
			}
			sawSep = true
			current = append([]byte(nil), rest...)
			continue
		}
		current = append(current, line...)
	}
	return append(docs, current)
}

// separatorRest reports whether line is a document separator and returns
// what follows "---" on it.
func separatorRest(line []byte) ([]byte, bool) {
	if !bytes.HasPrefix(line, []byte("---")) {
		return nil, false
	}
	rest := line[3:]
	if len(bytes.TrimSpace(rest)) == 0 {
		return nil, true
	}
	if rest[0] == ' ' || rest[0] == '\t' {
		return rest, true
	}
	return nil, false
}

// onlyComments reports whether b holds nothing but blank and comment lines.
func onlyComments(b []byte) bool {
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") {
			return false
		}
	}
	return true
}
