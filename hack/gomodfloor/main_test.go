package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/mod/modfile"
)

// A requirement below the floor is raised, one above it kept, a missing one added, and one
// the floor does not name left alone.
func TestRaise(t *testing.T) {
	target := mustParse(t, `module example.test/old

go 1.25

require (
	example.test/lower v1.2.0
	example.test/higher v1.9.0
	example.test/untouched v0.1.0
)
`)
	floor := mustParse(t, `module example.test/new

go 1.26

require (
	example.test/lower v1.3.0-rc.1
	example.test/higher v1.8.0
	example.test/missing v0.0.0-20260101000000-abcdefabcdef // indirect
)
`)
	if err := raise(target, floor); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, requirement := range target.Require {
		got[requirement.Mod.Path] = requirement.Mod.Version
	}
	want := map[string]string{
		"example.test/lower":     "v1.3.0-rc.1",
		"example.test/higher":    "v1.9.0",
		"example.test/untouched": "v0.1.0",
		"example.test/missing":   "v0.0.0-20260101000000-abcdefabcdef",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requirements after raise (-want +got):\n%s", diff)
	}
}

func mustParse(t *testing.T, text string) *modfile.File {
	t.Helper()
	file, err := modfile.Parse("go.mod", []byte(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	return file
}
