package api

import (
	"context"
	"net/http"

	corev1 "k8s.io/api/core/v1"
)

// NodeBackend is implemented by backends that describe the node. GET /node answers 503 without.
type NodeBackend interface {
	// Node is the node as a v1.Node: capacity, allocatable, conditions.
	Node() (*corev1.Node, error)
}

func (s *Server) node(w http.ResponseWriter, _ *http.Request) {
	nb, ok := s.b.(NodeBackend)
	if !ok {
		http.Error(w, "node information is not available", http.StatusServiceUnavailable)
		return
	}
	n, err := nb.Node()
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	writeJSON(w, n)
}

// Node fetches GET /node.
func (c *Client) Node(ctx context.Context) (*corev1.Node, error) {
	var n corev1.Node
	if err := c.getJSON(ctx, "/node", nil, &n); err != nil {
		return nil, err
	}
	return &n, nil
}
