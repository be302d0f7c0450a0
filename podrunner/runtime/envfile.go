package runtime

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

// env[].valueFrom.fileKeyRef (the kubelet's EnvFiles, beta and on since 1.35): a variable's value
// read from a file in one of the pod's emptyDir volumes, typically written by an init container,
// when the container starts. The file holds KEY='value' lines (the value in single quotes, which
// may span lines; blank lines and # comments skipped; KEY= 'x', with a space after the =, is an
// empty value), as the kubelet reads it.

// envFileValue reads key from the env file at path (relative, never out of the volume) in pod
// uid's emptyDir volume vol. found is false when the file has no such key.
func envFileValue(root, uid, vol, path, key string) (value string, found bool, err error) {
	if err := checkRelPath(path); err != nil {
		return "", false, fmt.Errorf("fileKeyRef path: %w", err)
	}
	dir, err := unix.Open(volumeDir(root, uid, volEmptyDir, vol), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", false, &volumeNotFound{vol: vol, err: err}
	}
	defer unix.Close(dir)
	fd, err := openBeneath(dir, path, false, 0)
	if err != nil {
		return "", false, fmt.Errorf("failed to open environment variable file %q: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	// An O_PATH descriptor cannot be read: reopen it through /proc, still the checked file.
	r, err := os.Open("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return "", false, fmt.Errorf("failed to open environment variable file %q: %w", path, err)
	}
	defer r.Close()
	return parseEnvFile(r, key)
}

// parseEnvFile finds key in an env file (pure but for reading r).
func parseEnvFile(r io.Reader, key string) (string, bool, error) {
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		l := strings.TrimLeft(sc.Text(), " \t")
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		name, rest, ok := strings.Cut(l, "=")
		switch {
		case !ok:
			return "", false, fmt.Errorf("invalid environment variable format at line %d: missing '='", line)
		case strings.TrimRight(name, " \t") == "":
			return "", false, fmt.Errorf("invalid environment variable format at line %d: empty variable name", line)
		case strings.TrimRight(name, " \t") != name:
			return "", false, fmt.Errorf("invalid environment variable format at line %d: whitespace before '=' is not allowed", line)
		}
		if v := strings.TrimLeft(rest, " \t"); v != rest { // KEY= 'x': empty, as bash has it
			if name == key {
				return "", true, nil
			}
			continue
		}
		if !strings.HasPrefix(rest, "'") {
			return "", false, fmt.Errorf("invalid environment variable format at line %d: value must be enclosed in single quotes", line)
		}
		var val strings.Builder
		rest, start := rest[1:], line
		for {
			end := strings.IndexByte(rest, '\'')
			if end >= 0 {
				val.WriteString(rest[:end])
				if after := strings.TrimLeft(rest[end+1:], " \t"); after != "" && !strings.HasPrefix(after, "#") {
					return "", false, fmt.Errorf("invalid environment variable format at line %d: unexpected content after closing quote", line)
				}
				break
			}
			val.WriteString(rest)
			val.WriteByte('\n')
			if !sc.Scan() {
				return "", false, fmt.Errorf("invalid environment variable format starting at line %d: unclosed single quote", start)
			}
			line++
			rest = sc.Text()
		}
		if name == key {
			return val.String(), true, nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", false, err
	}
	return "", false, nil
}

// fileKeyLookup resolves a container's fileKeyRef variables for ContainerEnv.
func fileKeyLookup(root string, pod *corev1.Pod) func(corev1.FileKeySelector) (string, bool, error) {
	return func(f corev1.FileKeySelector) (string, bool, error) {
		return envFileValue(root, string(pod.UID), f.VolumeName, f.Path, f.Key)
	}
}

// volumeNotFound is a fileKeyRef's volume that is not there (no container mounted it, so it was
// never set up): the kubelet's words, without the cause, which the log keeps.
type volumeNotFound struct {
	vol string
	err error
}

func (e *volumeNotFound) Error() string {
	return fmt.Sprintf("cannot find the volume %q referenced by FileKeyRef", e.vol)
}

func (e *volumeNotFound) Unwrap() error { return e.err }
