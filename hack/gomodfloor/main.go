// Command gomodfloor raises the requirements of a module to at least the versions another
// go.mod requires, and never lowers one: gomodfloor -floor FLOOR_GO_MOD GO_MOD. Run
// `go mod tidy` after it; MVS then selects, for every module both use, the newer of the
// two. hack/build-control-plane.sh raises its throwaway modules to the operator's go.mod
// and the e2e suite the previous release's, so that their builds compile each shared
// package at the version the tests compile it, once, under -trimpath.
// gomodfloor -floor FLOOR_GO_MOD -list prints the floor's requirements, PATH VERSION a line:
// since Go 1.17 a go.mod requires every module that provides a package to its build.
package main

import (
	"flag"
	"fmt"
	"os"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
)

func main() {
	floor := flag.String("floor", "", "the go.mod whose requirements are the floor")
	list := flag.Bool("list", false, "print the floor's requirements instead")
	flag.Parse()
	if *floor == "" || (*list && flag.NArg() != 0) || (!*list && flag.NArg() != 1) {
		fmt.Fprintln(os.Stderr, "usage: gomodfloor -floor FLOOR_GO_MOD GO_MOD | gomodfloor -floor FLOOR_GO_MOD -list")
		os.Exit(2)
	}
	var err error
	if *list {
		err = listFile(*floor)
	} else {
		err = raiseFile(flag.Arg(0), *floor)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gomodfloor:", err)
		os.Exit(1)
	}
}

func raiseFile(path, floorPath string) error {
	target, err := parse(path)
	if err != nil {
		return err
	}
	floor, err := parse(floorPath)
	if err != nil {
		return err
	}
	if err := raise(target, floor); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	data, err := target.Format()
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

func listFile(path string) error {
	floor, err := parse(path)
	if err != nil {
		return err
	}
	for _, requirement := range floor.Require {
		fmt.Println(requirement.Mod.Path, requirement.Mod.Version)
	}
	return nil
}

func parse(path string) (*modfile.File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return modfile.Parse(path, data, nil)
}

// raise requires in target each module floor requires, at floor's version where target
// requires it at an older one or not at all.
func raise(target, floor *modfile.File) error {
	required := map[string]string{}
	for _, requirement := range target.Require {
		required[requirement.Mod.Path] = requirement.Mod.Version
	}
	for _, requirement := range floor.Require {
		path, version := requirement.Mod.Path, requirement.Mod.Version
		if current, ok := required[path]; ok && semver.Compare(current, version) >= 0 {
			continue
		}
		if err := target.AddRequire(path, version); err != nil {
			return err
		}
	}
	target.Cleanup()
	return nil
}
