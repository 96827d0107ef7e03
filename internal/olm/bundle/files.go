package bundle

import (
	"os"
	"path/filepath"
	"testing/fstest"
)

// ReadFiles reads the files under dir (a generated bundle) into an in-memory file system,
// keyed by slash-separated paths relative to dir, for checks that mutate a copy of it.
func ReadFiles(dir string) (fstest.MapFS, error) {
	files := fstest.MapFS{}
	err := filepath.WalkDir(dir, func(path string, entry os.DirEntry, err error) error {
		if err != nil || entry.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		relative, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(relative)] = &fstest.MapFile{Data: data}
		return nil
	})
	return files, err
}
