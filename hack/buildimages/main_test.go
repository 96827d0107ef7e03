package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// Each flag builds its image into the archive, under its reference; a flag that cannot
// be read is refused with what is wrong with it.
func TestRun(t *testing.T) {
	directory := t.TempDir()
	binary := filepath.Join(directory, "binary")
	if err := os.WriteFile(binary, []byte("not an executable, which the archive does not mind"), 0o600); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(directory, "images.tar")
	err := run([]string{"-o", archive, "-operator", "example.test/operator:v1", "-manager", binary, "-plugin", binary,
		"-scheduler", "example.test/kube-scheduler:v1.37.0=KubeScheduler:" + binary,
		"-scheduler", "example.test/scheduler-plugins:v0.37.0=SchedulerPlugins:" + binary,
		"-pause", "example.test/pause:3.10=" + binary,
		"-scheduler-plugins", binary})
	if err != nil {
		t.Fatal(err)
	}
	references := append([]string{"example.test/operator:v1", "example.test/kube-scheduler:v1.37.0", "example.test/scheduler-plugins:v0.37.0", "example.test/pause:3.10"},
		render.SchedulerPluginsReleaseImages()...)
	for _, reference := range references {
		tag, err := name.NewTag(reference)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tarball.ImageFromPath(archive, &tag); err != nil {
			t.Errorf("%s is not in the archive: %v", reference, err)
		}
	}

	for _, refused := range []struct {
		args []string
		want string
	}{
		{[]string{"-operator", "example.test/operator:v1"}, "-o is required"},
		{[]string{"-o", archive}, "no image to build"},
		{[]string{"-o", archive, "-operator", "example.test/operator:v1"}, "-operator needs -manager and -plugin"},
		{[]string{"-o", archive, "-scheduler", "example.test/s:v1=Other:" + binary}, `kind "Other"`},
		{[]string{"-o", archive, "-scheduler", "example.test/s:v1"}, "REFERENCE=KIND:BINARY"},
		{[]string{"-o", archive, "-pause", binary}, "REFERENCE=BINARY"},
	} {
		if err := run(refused.args); err == nil || !strings.Contains(err.Error(), refused.want) {
			t.Errorf("%v: error %v, want one saying %q", refused.args, err, refused.want)
		}
	}
}
