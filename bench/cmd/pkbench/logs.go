package main

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Container log files: the log-* scenarios print known output and end; before their batch is
// removed, each side's log files for the pod are read (podkeeper's --log-dir, the kubelet's
// podLogsDir, where containerd's CRI writes them) and compared as more fields of the scenario:
// the pod's directory name (its UID's shape), each file's path and line count, each stream's
// chunks (tag and text, in order), and the timestamps' shape. Streams are compared apart: how
// stdout and stderr interleave in one file depends on when each copier ran.

// logPod is a one-shot pod (restartPolicy policy) of containers that print and end.
func logPod(name, policy, extra string, containers ...string) scenario {
	return scenario{"log-" + name, "", podDoc("cf-log-"+name, policy, extra, containers...)}
}

// fill prints n copies of byte c (a printable letter) and no newline.
func fill(n int, c byte) string {
	return fmt.Sprintf("head -c %d /dev/zero | tr '\\000' %c", n, c)
}

var logScenarios = func() []scenario {
	list := []struct {
		what string
		s    scenario
	}{
		{"lines on stdout and stderr, one of them empty", logPod("lines", "Never", "", sh("c", `printf 'one\ntwo\n\nfour\n'; printf 'e1\ne2\n' >&2`))},
		{"CRLF line ends, a CR inside a line, two CRs before a LF", logPod("crlf", "Never", "", sh("c", `printf 'a\r\nb\r\n\r\nc\rd\ne\r\r\n'`))},
		{"output that ends without a newline, on both streams", logPod("no-newline", "Never", "", sh("c", `printf 'line\ntail'; printf 'etail' >&2`))},
		{"a line written in two parts a second apart", logPod("slow-line", "Never", "", sh("c", `printf 'part1'; sleep 1; printf 'part2\n'`))},
		{"lines of 40000, 16384 and 16385 bytes", logPod("long", "Never", "", sh("c", fill(40000, 'x')+"; echo; "+fill(16384, 'y')+"; echo; "+fill(16385, 'z')+"; echo"))},
		{"a line of 16384 bytes and one of 20000, each ended by CRLF", logPod("long-crlf", "Never", "", sh("c", fill(16384, 'x')+`; printf '\r\n'; `+fill(20000, 'w')+`; printf '\r\n'`))},
		{"20000 bytes without a newline on stderr, then the end", logPod("long-unterminated", "Never", "", sh("c", fill(20000, 'u')+" >&2"))},
		{"a NUL byte, bytes that are not UTF-8, a tab", logPod("binary", "Never", "", sh("c", `printf 'nul\000byte\n\377\376 not utf-8\n\ttab\n'`))},
		{"3000 lines on stdout and 1000 on stderr at once", logPod("many", "Never", "", sh("c", "seq 1 3000 & seq 1 1000 >&2; wait"))},
		{"tty: true (the terminal ends lines with CRLF)", logPod("tty", "Never", "", sh("c", `printf 'one\ntwo\n'; echo three >&2; sleep 1`)+"    tty: true\n")},
		{"no output at all", logPod("silent", "Never", "", sh("c", "true"))},
		{"an init container's log beside the app container's", logPod("init", "Never", "  initContainers:\n"+sh("i", "echo from init"), sh("c", "echo from app"))},
		{"a container that fails once and is restarted (0.log, then 1.log)", logPod("restarts", "OnFailure", "  volumes:\n  - name: d\n    emptyDir: {}\n",
			sh("c", "if [ -e /d/ran ]; then echo second; else touch /d/ran; echo first; exit 1; fi")+"    volumeMounts:\n    - name: d\n      mountPath: /d\n")},
	}
	out := make([]scenario, len(list))
	for i, l := range list {
		out[i] = l.s
		out[i].what = "container log files: " + l.what
	}
	return out
}()

func init() { scenarios = append(scenarios, logScenarios...) }

func isLogScenario(name string) bool { return strings.HasPrefix(name, "log-") }

// criTimestamp is a timestamp as a CRI log line has it: RFC 3339 with up to nine fraction digits
// (containerd 1.6's CRI writes time.RFC3339Nano, whose trailing zeros are left out; containerd 2's
// and podkeeper's always have nine).
var criTimestamp = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?(Z|[+-]\d\d:\d\d)$`)

// podLogs reads the log files of pod (namespace default) under logDir as fields: "logs.dir",
// "logs[<container>/<file>]" (its line count), "logs[...].<stream>" (the stream's chunks) and
// "logs[...].timestamps".
func podLogs(logDir, pod string) (map[string]string, error) {
	out := map[string]string{}
	dirs, _ := filepath.Glob(filepath.Join(logDir, "default_"+pod+"_*"))
	if len(dirs) != 1 {
		out["logs.dir"] = fmt.Sprintf("%d directories", len(dirs))
		return out, nil
	}
	uid := strings.TrimPrefix(filepath.Base(dirs[0]), "default_"+pod+"_")
	out["logs.dir"] = fmt.Sprintf("default_%s_<uid: %d characters>", pod, len(uid))
	err := filepath.WalkDir(dirs[0], func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dirs[0], path)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		key := "logs[" + rel + "]"
		lines, chunks, stamps := parseCRILog(data)
		out[key] = fmt.Sprintf("%d lines", lines)
		for stream, cs := range chunks {
			out[key+"."+stream] = renderChunks(cs)
		}
		if lines > 0 {
			out[key+".timestamps"] = stamps
		}
		return nil
	})
	return out, err
}

// parseCRILog splits a CRI log file into each stream's chunks ("F text" or "P text"), and says
// whether every timestamp has a CRI log line's shape and none goes back in time within its
// stream (across the streams they may: containerd's CRI stamps and writes each stream's lines
// in a goroutine of its own).
func parseCRILog(data []byte) (int, map[string][]string, string) {
	chunks := map[string][]string{}
	stamps := "RFC 3339, in order"
	prev := map[string]time.Time{} // per stream: the CRI's two copiers write their lines apart
	n := 0
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
			stamps = "last line without a newline"
		}
		n++
		f := bytes.SplitN(line, []byte{' '}, 4)
		if len(f) < 3 {
			chunks["(malformed)"] = append(chunks["(malformed)"], strconv.Quote(string(line)))
			continue
		}
		ts := string(f[0])
		t, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil || !criTimestamp.MatchString(ts) {
			stamps = "not the CRI's shape: " + ts
		} else if stream := string(f[1]); t.Before(prev[stream]) && strings.HasPrefix(stamps, "RFC") {
			stamps = "out of order: " + ts + " after " + prev[stream].Format(time.RFC3339Nano)
		}
		if err == nil {
			prev[string(f[1])] = t
		}
		text := []byte{}
		if len(f) == 4 {
			text = f[3]
		}
		chunks[string(f[1])] = append(chunks[string(f[1])], string(f[2])+" "+shortText(text))
	}
	return n, chunks, stamps
}

// shortText quotes a chunk's text; a long one as its start, its length and a checksum.
func shortText(b []byte) string {
	if len(b) <= 40 {
		return strconv.Quote(string(b))
	}
	return fmt.Sprintf("%s…(%d bytes, crc %08x)", strconv.Quote(string(b[:12])), len(b), crc32.ChecksumIEEE(b))
}

// renderChunks is a stream's chunks in order; past a dozen, their count and a checksum.
func renderChunks(cs []string) string {
	if len(cs) <= 12 {
		return strings.Join(cs, " · ")
	}
	partial := 0
	for _, c := range cs {
		if strings.HasPrefix(c, "P") {
			partial++
		}
	}
	return fmt.Sprintf("%d chunks (%d partial), first %s, last %s, crc %08x", len(cs), partial, cs[0], cs[len(cs)-1], crc32.ChecksumIEEE([]byte(strings.Join(cs, "\n"))))
}

// withLogs is the status fields m with the log fields l added.
func withLogs(m, l map[string]string) map[string]string {
	maps.Copy(m, l)
	return m
}

// sortedFields prints fields one per line, for a focused run.
func sortedFields(m map[string]string) string {
	var b strings.Builder
	for _, k := range keysOf(m, m) {
		fmt.Fprintf(&b, "  %s = %s\n", k, m[k])
	}
	return b.String()
}
