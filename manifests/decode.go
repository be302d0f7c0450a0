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
	"strings"

	corev1 "k8s.io/api/core/v1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// MaxFileSize is the largest manifest file DecodeFile accepts, in bytes.
const MaxFileSize = 10 << 20

// DecodeFile parses one manifest file's content. path is used for identity and messages only.
// It returns every Pod in the file (multi-document YAML separated by ---, or a single JSON object),
// each with defaults applied and static-pod identity set. Empty documents are skipped.
// On any problem it returns a *FileError listing EVERY problem of the file (each with document index
// and a field path where known) and no pods (a file is all or nothing).
func DecodeFile(path string, data []byte, nodeName string) ([]*corev1.Pod, error) {
	if len(data) > MaxFileSize {
		return nil, &FileError{Path: path, Problems: []Problem{{
			Doc:     FileDoc,
			Message: fmt.Sprintf("file exceeds the size limit of %d bytes", MaxFileSize),
		}}}
	}

	var (
		pods     []*corev1.Pod
		problems []Problem
		seen     = map[string]int{} // namespace/name -> doc index
	)
	for i, doc := range splitDocuments(data) {
		pod, probs := decodeDocument(i, doc, path, nodeName)
		problems = append(problems, probs...)
		if pod == nil {
			continue
		}
		key := pod.Namespace + "/" + pod.Name
		if first, dup := seen[key]; dup {
			problems = append(problems, Problem{Doc: i, Field: "metadata.name",
				Message: fmt.Sprintf("pod %s is already defined in doc %d", key, first)})
			continue
		}
		seen[key] = i
		pods = append(pods, pod)
	}
	if len(problems) > 0 {
		return nil, &FileError{Path: path, Problems: problems}
	}
	return pods, nil
}

// decodeDocument decodes, defaults, validates and identifies document
// number idx. It returns (nil, nil) for an empty document, (pod, nil) for a
// good one and (nil, problems) otherwise.
func decodeDocument(idx int, doc []byte, path, nodeName string) (*corev1.Pod, []Problem) {
	fail := func(format string, args ...any) (*corev1.Pod, []Problem) {
		return nil, []Problem{{Doc: idx, Message: fmt.Sprintf(format, args...)}}
	}

	jsonDoc, err := toJSON(doc)
	if err != nil {
		return fail("%v", err)
	}
	if jsonDoc == nil {
		return nil, nil // empty document
	}

	// The normalised form (generic map re-marshalled with sorted keys) is
	// what the UID is computed from.
	var generic any
	dec := json.NewDecoder(bytes.NewReader(jsonDoc))
	dec.UseNumber() // keep numbers exactly as written
	if err := dec.Decode(&generic); err != nil {
		return fail("invalid JSON: %v", err)
	}
	if dec.More() {
		return fail("invalid JSON: unexpected data after the top-level object")
	}
	obj, ok := generic.(map[string]any)
	if !ok {
		return fail("document is not an object")
	}
	normalized, err := json.Marshal(obj)
	if err != nil {
		return fail("normalising document: %v", err)
	}

	if probs := checkKind(idx, obj); len(probs) > 0 {
		return nil, probs
	}

	var pod corev1.Pod
	strictErrs, err := sigsjson.UnmarshalStrict(jsonDoc, &pod,
		sigsjson.DisallowUnknownFields, sigsjson.DisallowDuplicateFields)
	if err != nil {
		return fail("decoding Pod: %v", err)
	}
	var problems []Problem
	for _, se := range strictErrs {
		p := Problem{Doc: idx, Message: se.Error()}
		if fe, ok := se.(sigsjson.FieldError); ok {
			p.Field = fe.FieldPath()
		}
		problems = append(problems, p)
	}

	applyDefaults(&pod)
	for _, fe := range validatePod(&pod, nodeName) {
		problems = append(problems, Problem{Doc: idx, Field: fe.Field, Message: fe.ErrorBody()})
	}
	if len(problems) > 0 {
		return nil, problems
	}
	setIdentity(&pod, nodeName, path, PodUID(nodeName, path, normalized))
	return &pod, nil
}

// checkKind reports a problem unless the object is a v1 Pod.
func checkKind(idx int, obj map[string]any) []Problem {
	kind, _ := obj["kind"].(string)
	apiVersion, _ := obj["apiVersion"].(string)
	switch {
	case kind == "":
		return []Problem{{Doc: idx, Field: "kind", Message: "kind is required (only v1 Pod is supported)"}}
	case apiVersion == "":
		return []Problem{{Doc: idx, Field: "apiVersion", Message: "apiVersion is required (only v1 Pod is supported)"}}
	case kind != "Pod" || apiVersion != "v1":
		return []Problem{{Doc: idx, Message: fmt.Sprintf("kind %s is not supported (only v1 Pod)", describeKind(apiVersion, kind))}}
	}
	return nil
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
