package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/podkeeper/podkeeper/watcher"
)

type listingBackend struct {
	fakeBackend
	files []ManifestFile
}

func (b *listingBackend) Manifests() []ManifestFile { return b.files }

func TestManifestsEndpoint(t *testing.T) {
	files := []ManifestFile{
		{Path: "/m/a.yaml", State: watcher.StateOK, Declared: []string{"Pod default/a-n1"}},
		{Path: "/m/b.yaml", State: watcher.StateError, KeptLastGood: true, Messages: []string{"doc 0: kind: kind is required"}},
		{Path: "/m/c.yaml", State: watcher.StateConflict, Messages: []string{"conflict: pod default/a-n1 is already defined in /m/a.yaml, which wins"}},
		{Path: "/m/.d.yaml", State: watcher.StateIgnored, Messages: []string{"dotfile"}},
	}
	c := serveSocket(t, &listingBackend{files: files})
	got, err := c.Manifests(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, files) {
		t.Fatalf("GET /manifests = %+v\nwant %+v", got, files)
	}

	// A backend that knows no files answers an empty JSON list, not null.
	srv := httptest.NewServer(NewServer(&fakeBackend{}, testLogger()))
	defer srv.Close()
	code, b := get(t, srv, "/manifests")
	if code != http.StatusOK || string(b) != "[]\n" {
		t.Fatalf("empty backend: %d %q", code, b)
	}
}
