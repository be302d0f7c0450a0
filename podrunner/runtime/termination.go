package runtime

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkeeper/podkeeper/podrunner/crilog"
)

// Termination messages, as the kubelet: a host file is bind-mounted at the container's
// terminationMessagePath; at exit podkeeper reads it (its last 4096 bytes). With
// FallbackToLogsOnError, an empty file and a failed exit take the last 80 lines of the log (at
// most 2048 bytes) instead. The message becomes the terminated state's message.
const (
	maxTerminationMessage     = 4096
	maxFallbackLogLines       = 80
	maxFallbackLogBytes       = 2048
	defaultTerminationMsgPath = "/dev/termination-log"

	LabelTermMsgFile   = "podkeeper.io/termination-message-file"
	LabelTermMsgPolicy = "podkeeper.io/termination-message-policy"
)

// termMsgSuffix ends the name of an instance's termination message file, after its attempt.
const termMsgSuffix = "-termination-log"

// terminationMessageMount creates the host file for container c's instance and returns its bind
// mount, recording where it is in labels.
func terminationMessageMount(root string, pod *corev1.Pod, c *corev1.Container, attempt int, labels map[string]string) (specs.Mount, error) {
	dest := c.TerminationMessagePath
	if dest == "" {
		dest = defaultTerminationMsgPath
	}
	dir := filepath.Join(podDir(root, string(pod.UID)), "containers", c.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return specs.Mount{}, fmt.Errorf("termination message dir: %w", err)
	}
	file := filepath.Join(dir, strconv.Itoa(attempt)+termMsgSuffix)
	if err := os.WriteFile(file, nil, 0o666); err != nil {
		return specs.Mount{}, fmt.Errorf("termination message file: %w", err)
	}
	if err := os.Chmod(file, 0o666); err != nil { // writable by any runAsUser, past the umask
		return specs.Mount{}, err
	}
	labels[LabelTermMsgFile] = file
	labels[LabelTermMsgPolicy] = string(c.TerminationMessagePolicy)
	return specs.Mount{Destination: dest, Type: "bind", Source: file, Options: []string{"rbind", "rprivate", "rw"}}, nil
}

// terminationMessage is the message of an instance that exited with code, from its labels.
func terminationMessage(labels map[string]string, code int32) string {
	msg := readCapped(labels[LabelTermMsgFile], maxTerminationMessage)
	if msg != "" || code == 0 || corev1.TerminationMessagePolicy(labels[LabelTermMsgPolicy]) != corev1.TerminationMessageFallbackToLogsOnError {
		return msg
	}
	return logTail(labels[LabelLogPath])
}

// readCapped reads the last n bytes of a file, as the kubelet reads termination messages.
func readCapped(path string, n int64) string {
	if path == "" {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > n {
		if _, err := f.Seek(fi.Size()-n, io.SeekStart); err != nil {
			return ""
		}
	}
	b, _ := io.ReadAll(io.LimitReader(f, n))
	return string(b)
}

// logTail is the last lines of a container's log, as the kubelet's fallback message.
func logTail(path string) string {
	if path == "" {
		return ""
	}
	var buf bytes.Buffer
	if err := crilog.ReadLog(context.Background(), path, crilog.ReadOptions{Tail: maxFallbackLogLines}, &buf); err != nil {
		return ""
	}
	b := buf.Bytes()
	if len(b) > maxFallbackLogBytes {
		b = b[len(b)-maxFallbackLogBytes:]
	}
	return string(b)
}

// messageLabels stores a message (at most maxTerminationMessage bytes, as the kubelet keeps)
// in labels: containerd limits a label's key and value to 4096 bytes together, so what
// LabelMessage cannot hold goes to LabelMessageMore. An empty message sets nothing.
func messageLabels(msg string) map[string]string {
	if len(msg) > maxTerminationMessage {
		msg = msg[len(msg)-maxTerminationMessage:]
	}
	out := map[string]string{}
	if msg == "" {
		return out
	}
	if room := 4096 - len(LabelMessage); len(msg) > room {
		out[LabelMessageMore] = msg[room:]
		msg = msg[:room]
	}
	out[LabelMessage] = msg
	return out
}

// messageFromLabels is the message messageLabels stored.
func messageFromLabels(labels map[string]string) string {
	return labels[LabelMessage] + labels[LabelMessageMore]
}

// removeTermMsgFile deletes an instance's termination message file (when it lies under root).
func removeTermMsgFile(root string, labels map[string]string) {
	if f := termMsgFile(root, labels); f != "" {
		_ = os.Remove(f)
	}
}

// termMsgFile is the termination message file of the instance with labels when it is one of
// podkeeper's (under root's pods), else "".
func termMsgFile(root string, labels map[string]string) string {
	f := labels[LabelTermMsgFile]
	if !strings.HasPrefix(f, filepath.Join(root, "pods")+string(filepath.Separator)) {
		return ""
	}
	return f
}
