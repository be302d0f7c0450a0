package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkeeper/podkeeper/podrunner"
)

// Client talks to a running `podkeeper run` over its unix socket.
type Client struct {
	socket string
	http   *http.Client
}

// NewClient returns a client for the agent listening on socket.
func NewClient(socket string) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
	}
	return &Client{socket: socket, http: &http.Client{Transport: tr}}
}

// do GETs path and returns the response, turning transport and API errors into messages a
// person can act on.
func (c *Client) do(ctx context.Context, path string, q url.Values) (*http.Response, error) {
	u := "http://podkeeper" + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		hint := ""
		switch {
		case errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EACCES):
			hint = " (permission denied: run as root)"
		case errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED):
			hint = " (no agent listening)"
		}
		return nil, fmt.Errorf("cannot reach podkeeper at %s: is `podkeeper run` running?%s", c.socket, hint)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		var st metav1.Status
		b, _ := io.ReadAll(resp.Body)
		if json.Unmarshal(b, &st) == nil && st.Message != "" {
			return nil, &Error{Code: resp.StatusCode, Message: st.Message}
		}
		return nil, &Error{Code: resp.StatusCode, Message: string(b)}
	}
	return resp, nil
}

// Error is an error answer of the API.
type Error struct {
	Code    int
	Message string
}

func (e *Error) Error() string { return e.Message }

// IsNoLogsYet reports whether err is the agent's answer for a log of a container that has not
// run yet (podrunner.ErrNoLogsYet: "... is waiting to start ...", or no previous instance).
func IsNoLogsYet(err error) bool {
	var ae *Error
	return errors.As(err, &ae) && ae.Code == http.StatusBadRequest && podrunner.IsNoLogsYetMessage(ae.Message)
}

func (c *Client) getJSON(ctx context.Context, path string, q url.Values, v any) error {
	resp, err := c.do(ctx, path, q)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("decode %s: %w", path, err)
	}
	return nil
}

// Healthz checks that the agent answers.
func (c *Client) Healthz(ctx context.Context) error {
	resp, err := c.do(ctx, "/healthz", nil)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// Pods lists the pods.
func (c *Client) Pods(ctx context.Context) (*corev1.PodList, error) {
	var l corev1.PodList
	return &l, c.getJSON(ctx, "/pods", nil, &l)
}

// Pod gets one pod by full or manifest name ("" namespace: any).
func (c *Client) Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	if namespace == "" {
		namespace = "_"
	}
	var p corev1.Pod
	return &p, c.getJSON(ctx, "/pods/"+url.PathEscape(namespace)+"/"+url.PathEscape(name), nil, &p)
}

// Events lists events (of one pod when uid is set).
func (c *Client) Events(ctx context.Context, uid string) (*corev1.EventList, error) {
	q := url.Values{}
	if uid != "" {
		q.Set("uid", uid)
	}
	var l corev1.EventList
	return &l, c.getJSON(ctx, "/events", q, &l)
}

// LogOptions select what Logs returns.
type LogOptions struct {
	Container  string
	Previous   bool
	Follow     bool
	Timestamps bool
	Tail       int64 // -1: all
	Since      time.Duration
	SinceTime  time.Time // only lines from then on (not with Since)
	LimitBytes int64     // stop after this many bytes of output; 0: no limit
}

// Logs copies a container's output to out until it ends (or, with Follow, until ctx ends).
func (c *Client) Logs(ctx context.Context, namespace, name string, o LogOptions, out io.Writer) error {
	if namespace == "" {
		namespace = "_"
	}
	q := url.Values{}
	if o.Container != "" {
		q.Set("container", o.Container)
	}
	if o.Previous {
		q.Set("previous", "true")
	}
	if o.Follow {
		q.Set("follow", "true")
	}
	if o.Timestamps {
		q.Set("timestamps", "true")
	}
	if o.Tail >= 0 {
		q.Set("tail", fmt.Sprint(o.Tail))
	}
	if o.Since > 0 {
		q.Set("sinceSeconds", fmt.Sprint(int64(o.Since/time.Second)))
	}
	if !o.SinceTime.IsZero() {
		q.Set("sinceTime", o.SinceTime.Format(time.RFC3339))
	}
	if o.LimitBytes != 0 {
		q.Set("limitBytes", fmt.Sprint(o.LimitBytes))
	}
	resp, err := c.do(ctx, "/pods/"+url.PathEscape(namespace)+"/"+url.PathEscape(name)+"/log", q)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(out, resp.Body)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// ManifestErrors lists the manifest files the agent could not use.
func (c *Client) ManifestErrors(ctx context.Context) ([]ManifestError, error) {
	var l []ManifestError
	return l, c.getJSON(ctx, "/manifest-errors", nil, &l)
}
