package api

import (
	"context"
	"net/http"

	"github.com/podkeeper/podkeeper/watcher"
)

// ManifestFile is one file of the manifest directory as the agent sees it: what it declares and
// its state (ok, ignored, error with the messages, conflict).
type ManifestFile = watcher.FileStatus

// ManifestLister is implemented by backends that know the manifest directory's files. A backend
// that does not implement it answers GET /manifests with an empty list.
type ManifestLister interface {
	// Manifests lists every file of the latest snapshot, sorted by path.
	Manifests() []ManifestFile
}

// manifests serves GET /manifests: a JSON array of ManifestFile.
func (s *Server) manifests(w http.ResponseWriter, _ *http.Request) {
	list := []ManifestFile{}
	if ml, ok := s.b.(ManifestLister); ok {
		if l := ml.Manifests(); l != nil {
			list = l
		}
	}
	writeJSON(w, list)
}

// Manifests lists the manifest directory's files with their state.
func (c *Client) Manifests(ctx context.Context) ([]ManifestFile, error) {
	var l []ManifestFile
	return l, c.getJSON(ctx, "/manifests", nil, &l)
}
