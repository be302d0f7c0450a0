package crilog

import (
	"errors"
	"testing"
	"time"
)

func TestParseLine(t *testing.T) {
	want := time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)
	tests := []struct {
		line    string
		stream  string
		partial bool
		text    string
	}{
		{"2024-05-06T07:08:09.123456789Z stdout F hello world\n", Stdout, false, "hello world"},
		{"2024-05-06T07:08:09.123456789Z stderr P part", Stderr, true, "part"},
		{"2024-05-06T07:08:09.123456789Z stdout F \n", Stdout, false, ""},
		{"2024-05-06T07:08:09.123456789Z stdout F", Stdout, false, ""},
		{"2024-05-06T07:08:09.123456789Z stdout F  two  spaces ", Stdout, false, " two  spaces "},
		{"2024-05-06T07:08:09.123456789Z stdout F:x tagged", Stdout, false, "tagged"},
		{"2024-05-06T09:08:09.123456789+02:00 stdout F offset", Stdout, false, "offset"},
		{"2024-05-06T07:08:09.123456789Z stdout F cr\r\n", Stdout, false, "cr\r"},
	}
	for _, tc := range tests {
		e, err := ParseLine([]byte(tc.line))
		if err != nil {
			t.Errorf("ParseLine(%q): %v", tc.line, err)
			continue
		}
		if !e.Time.Equal(want) || e.Stream != tc.stream || e.Partial != tc.partial || string(e.Text) != tc.text {
			t.Errorf("ParseLine(%q) = %+v (text %q)", tc.line, e, e.Text)
		}
	}
}

func TestParseLineErrors(t *testing.T) {
	for _, line := range []string{
		"",
		"\n",
		"garbage",
		"2024-05-06T07:08:09Z",
		"2024-05-06T07:08:09Z stdout",
		"not-a-time stdout F text",
		"2024-05-06 stdout F text",
		"2024-05-06T07:08:09Z stdin F text",
		"2024-05-06T07:08:09Z stdout X text",
		"2024-05-06T07:08:09Z stdout  text",
		"2024-05-06T07:08:09Z  stdout F text",
	} {
		if e, err := ParseLine([]byte(line)); err == nil {
			t.Errorf("ParseLine(%q) = %+v, want error", line, e)
		} else if !errors.Is(err, ErrMalformedLine) {
			t.Errorf("ParseLine(%q) error %v does not wrap ErrMalformedLine", line, err)
		}
	}
}

func FuzzParseLine(f *testing.F) {
	f.Add([]byte("2024-05-06T07:08:09.123456789Z stdout F hello\n"))
	f.Add([]byte("2024-05-06T07:08:09Z stderr P x"))
	f.Add([]byte("2024-05-06T07:08:09+01:00 stdout F:P "))
	f.Add([]byte(" stdout F"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := ParseLine(line)
		if err != nil {
			return
		}
		if e.Stream != Stdout && e.Stream != Stderr {
			t.Fatalf("ParseLine(%q) accepted stream %q", line, e.Stream)
		}
		if len(e.Text) > len(line) {
			t.Fatalf("ParseLine(%q) text longer than input", line)
		}
	})
}
