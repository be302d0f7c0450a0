package manifests

import (
	"fmt"
	"strings"
)

// FileDoc is the Problem.Doc value of a problem that concerns the whole file
// (for example its size) rather than one document.
const FileDoc = -1

// Problem is one thing wrong with a manifest file.
type Problem struct {
	// Doc is the 0-based index of the document in the file, or FileDoc.
	// Documents are counted in file order, empty ones included; a leading
	// chunk of only blank lines and comments before the first "---" is not
	// counted.
	Doc int
	// Field is the field path (e.g. "spec.containers[1].name"), or "" when
	// the problem is not about one field.
	Field string
	// Message says what is wrong.
	Message string
}

// String formats the problem as "doc 0: spec.containers[0].name: Required value".
func (p Problem) String() string {
	var b strings.Builder
	if p.Doc != FileDoc {
		fmt.Fprintf(&b, "doc %d: ", p.Doc)
	}
	if p.Field != "" {
		b.WriteString(p.Field)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// FileError reports every problem found in one manifest file. A file with
// any problem yields no pods at all.
type FileError struct {
	Path     string
	Problems []Problem
}

// Error prints the path followed by every problem, separated by "; ".
func (e *FileError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return e.Path + ": " + strings.Join(parts, "; ")
}
