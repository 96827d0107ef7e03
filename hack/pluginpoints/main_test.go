package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// generatedDir is where the committed tables are, from this package's directory.
const generatedDir = "../../internal/schedconfig"

// TestTablesInStepWithSources regenerates the tables from the sources and compares them with
// the committed files, so that a new Kubernetes or scheduler-plugins pin, or a change of the
// generator, cannot leave a stale table behind. The in-tree tables are always checked: their
// sources come from the Go module proxy (go mod download). scheduler-plugins' own plugins
// need a checkout of its pinned commit, which the proxy does not serve: they are checked
// when SCHEDULER_PLUGINS_SRC names one.
func TestTablesInStepWithSources(t *testing.T) {
	pins, err := readPins("../build-scheduler-plugins.sh")
	if err != nil {
		t.Fatal(err)
	}
	tables := []struct {
		file     string
		generate func() ([]byte, error)
	}{
		{kubernetesFile, func() ([]byte, error) { return kubernetesTable("", "", "") }},
		{schedulerPluginsCoreFile, func() ([]byte, error) { return schedulerPluginsCoreTable(pins) }},
	}
	if src := os.Getenv("SCHEDULER_PLUGINS_SRC"); src != "" {
		tables = append(tables, struct {
			file     string
			generate func() ([]byte, error)
		}{schedulerPluginsFile, func() ([]byte, error) { return schedulerPluginsTable(pins, src) }})
	} else {
		t.Logf("NOT CHECKED: %s (scheduler-plugins' own plugins): SCHEDULER_PLUGINS_SRC is not set, and the Go module proxy does not serve "+
			"sigs.k8s.io/scheduler-plugins; set it to a checkout of %s to check it", schedulerPluginsFile, pins.commit)
	}
	for _, table := range tables {
		t.Run(table.file, func(t *testing.T) {
			want, err := table.generate()
			if err != nil {
				t.Fatalf("generate: %v", err)
			}
			got, err := os.ReadFile(filepath.Join(generatedDir, table.file))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("%s is stale; run make plugin-points (-regenerated +committed):\n%s", table.file, diff)
			}
		})
	}
}
