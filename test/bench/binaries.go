package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// operatorPackageBudget is test/depfence's packageBudget: the packages the operator may
// link, which that test enforces.
const operatorPackageBudget = 900

// builtBinary is one binary the binaries benchmark builds.
type builtBinary struct {
	figure, pkg, output string
	// budget bounds its packages; 0 for none.
	budget int
	// beforeSize and beforePackages are its figures before render moved out of the
	// operator (c9e04b4, 2026-11-27), built the same way.
	beforeSize, beforePackages string
}

// runBinaries builds the operator and the kubectl plugin as the Dockerfile does and
// reports their sizes and the packages each links: the operator's binary is mapped into
// its memory (the memory benchmark's file-backed RSS), the plugin's is not.
func runBinaries(ctx context.Context, e *env) (*section, error) {
	s := &section{
		name:  "binaries",
		title: "the operator's binary and the kubectl plugin's",
		what: "Builds the operator (.) and the kubectl plugin that renders offline (./cmd/kubectl-secondary_scheduler), " +
			"static and stripped as the Dockerfile builds them (CGO_ENABLED=0, -ldflags \"-s -w\"; without -trimpath, as the other benchmarks' operator, " +
			"which makes them a few hundred KiB larger than the image's).",
		how: "The size of each file, and the packages each links as go list -deps counts them (CGO_ENABLED=0, as built), the standard library included. " +
			"test/depfence fails when the operator's count passes its budget, or when the operator links k8s.io/apiserver, CEL, OpenTelemetry or gRPC, " +
			"which rendering offline needs and the operator does not.",
	}
	for _, binary := range []builtBinary{
		{figure: "operator (bin/manager)", pkg: ".", output: "manager", budget: operatorPackageBudget, beforeSize: "56.2 MiB", beforePackages: "1138"},
		{figure: "kubectl plugin (bin/kubectl-secondary_scheduler)", pkg: "./cmd/kubectl-secondary_scheduler", output: "kubectl-secondary_scheduler"},
	} {
		path := filepath.Join(e.binDir, binary.output)
		if err := e.goBuild(ctx, "-ldflags", "-s -w", "-o", path, binary.pkg); err != nil {
			return s, err
		}
		info, err := os.Stat(path)
		if err != nil {
			return s, err
		}
		packages, err := e.countDeps(ctx, binary.pkg)
		if err != nil {
			return s, err
		}
		size := row{figure: binary.figure + ": size", values: []float64{float64(info.Size()) / mebibyte}, unit: unitMiB}
		count := row{figure: binary.figure + ": packages linked", values: []float64{float64(packages)}, unit: unitCount}
		size.before, count.before = binary.beforeSize, binary.beforePackages
		if binary.budget > 0 {
			count.target = &target{limit: float64(binary.budget), inclusive: true}
			count.ifMissed = "A new dependency of the operator: move it out of the operator's import graph, or raise test/depfence's budget (and this one) with the reason."
		}
		s.rows = append(s.rows, size, count)
	}
	return s, nil
}

// goBuild runs go build with args in the checkout, static (CGO_ENABLED=0) as the
// Dockerfile builds.
func (e *env) goBuild(ctx context.Context, args ...string) error {
	command := exec.CommandContext(ctx, "go", append([]string{"build"}, args...)...)
	command.Dir, command.Env = e.repoRoot, append(os.Environ(), "CGO_ENABLED=0")
	if output, err := command.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %v: %w\n%s", args, err, output)
	}
	return nil
}

// countDeps is how many packages go list -deps lists for pkg, static as goBuild builds.
func (e *env) countDeps(ctx context.Context, pkg string) (int, error) {
	command := exec.CommandContext(ctx, "go", "list", "-deps", pkg)
	command.Dir, command.Env = e.repoRoot, append(os.Environ(), "CGO_ENABLED=0")
	output, err := command.Output()
	if err != nil {
		return 0, fmt.Errorf("go list -deps %s: %w", pkg, err)
	}
	return len(strings.Fields(string(output))), nil
}
