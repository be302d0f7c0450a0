// Package atomicfile writes a file so that a reader, or a crash, sees the old content or the new,
// never a part.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write puts data at path (mode 0600): it creates the parent directory (0700) when missing,
// writes a temporary file beside path, syncs it and renames it over path.
func Write(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
