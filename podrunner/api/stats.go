package api

import (
	"context"
	"net/http"

	"github.com/podkeeper/podkeeper/cgroup"
)

// StatsBackend is implemented by backends that can read usage (the agent with pod cgroups).
// GET /stats/summary answers 503 for a backend without it.
type StatsBackend interface {
	// StatsSummary reads the node's and every pod's current CPU and memory usage.
	StatsSummary() (cgroup.Summary, error)
}

func (s *Server) statsSummary(w http.ResponseWriter, _ *http.Request) {
	sb, ok := s.b.(StatsBackend)
	if !ok {
		http.Error(w, "usage statistics are not available (pod cgroups are off: --cgroups-per-qos=false)", http.StatusServiceUnavailable)
		return
	}
	sum, err := sb.StatsSummary()
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	writeJSON(w, sum)
}

// StatsSummary fetches GET /stats/summary.
func (c *Client) StatsSummary(ctx context.Context) (*cgroup.Summary, error) {
	var s cgroup.Summary
	if err := c.getJSON(ctx, "/stats/summary", nil, &s); err != nil {
		return nil, err
	}
	return &s, nil
}
