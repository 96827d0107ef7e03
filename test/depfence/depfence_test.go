// Package depfence keeps the operator's binary free of what it does not need: the API
// server's libraries, which the offline renderer (cmd/kubectl-secondary_scheduler) links
// to validate as the API server does, and a count of packages.
package depfence

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// operatorPackage is the operator's main package, whose dependencies are the binary's.
const operatorPackage = "github.com/secondary-scheduler/secondary-scheduler-operator"

// packageBudget bounds the packages linked into the operator, standard library included,
// as go list -deps counts them: 884 on 2026-11-27 (Go 1.26), once render moved to the
// kubectl plugin; it was 1,139 before. A change that raises it past the budget brings a
// new library into every operator's memory (the binary's own pages were 42 of the 88 MiB
// of the memory benchmark's RSS): move it out of the operator's import graph, or raise the
// budget in the same commit and say why in its message.
const packageBudget = 900

// fenced are import path prefixes the operator must not link. They are what
// k8s.io/apiextensions-apiserver's validation (internal/crdschema) brought, and
// controller-runtime's metrics filter would bring (internal/metricsauth exists to avoid
// it): k8s.io/apiserver, CEL (cel-go, its protos at cel.dev/expr and its parser's ANTLR
// runtime), OpenTelemetry, and gRPC with what only gRPC users import (grpc-gateway, the
// API server's konnectivity client). None of them serves the operator: it talks to its
// API server over REST, and the API server validates what the operator writes.
var fenced = []string{
	"k8s.io/apiserver",
	"k8s.io/apiextensions-apiserver",
	"github.com/google/cel-go",
	"cel.dev/expr",
	"github.com/antlr4-go/antlr",
	"go.opentelemetry.io",
	"google.golang.org/grpc",
	"github.com/grpc-ecosystem",
	"sigs.k8s.io/apiserver-network-proxy",
}

// allowed are packages under a fenced prefix that bring none of the others: the
// CustomResourceDefinition types alone, whose SchemeGroupVersion controllers and
// internal/render name.
var allowed = []string{
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions",
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1",
}

// goPackage is what go list -json says of a package.
type goPackage struct {
	ImportPath string
	Imports    []string
}

// TestOperatorDependencies fails when the operator's binary links a fenced package, saying
// through which imports, or more packages than packageBudget.
func TestOperatorDependencies(t *testing.T) {
	packages := listDeps(t, operatorPackage)
	importedBy := map[string]string{}
	for _, p := range packages {
		for _, imported := range p.Imports {
			if _, seen := importedBy[imported]; !seen {
				importedBy[imported] = p.ImportPath
			}
		}
	}
	var linked []string
	for _, p := range packages {
		if isFenced(p.ImportPath) {
			linked = append(linked, p.ImportPath)
		}
	}
	if len(linked) > 0 {
		// The first few, each with how the operator reaches it, say enough to find the import.
		var shown strings.Builder
		for _, importPath := range linked[:min(len(linked), 5)] {
			shown.WriteString("\n  " + importChain(importedBy, importPath))
		}
		t.Errorf("the operator links %d fenced packages, such as:%s\nkeep them out of the operator's import graph "+
			"(in the kubectl plugin, cmd/kubectl-secondary_scheduler, if only rendering offline needs them)", len(linked), shown.String())
	}
	if len(packages) > packageBudget {
		t.Errorf("the operator links %d packages, more than its budget of %d: see packageBudget", len(packages), packageBudget)
	}
	t.Logf("the operator links %d packages (budget %d)", len(packages), packageBudget)
}

// TestFenceSeesThePlugin: the fence is not vacuous, since the kubectl plugin, which
// validates as the API server does, links fenced packages.
func TestFenceSeesThePlugin(t *testing.T) {
	for _, p := range listDeps(t, operatorPackage+"/cmd/kubectl-secondary_scheduler") {
		if isFenced(p.ImportPath) {
			return
		}
	}
	t.Error("the kubectl plugin links no fenced package: the fence's prefixes no longer match what the API server's libraries are called")
}

func isFenced(importPath string) bool {
	if slices.Contains(allowed, importPath) {
		return false
	}
	for _, prefix := range fenced {
		if importPath == prefix || strings.HasPrefix(importPath, prefix+"/") {
			return true
		}
	}
	return false
}

// importChain is how the operator reaches importPath: main, then each importer in turn.
func importChain(importedBy map[string]string, importPath string) string {
	chain := []string{importPath}
	for next, ok := importedBy[importPath]; ok && len(chain) < 50; next, ok = importedBy[next] {
		chain = append(chain, next)
		if next == operatorPackage {
			break
		}
	}
	slices.Reverse(chain)
	return strings.Join(chain, " → ")
}

// listDeps is go list -deps of pkg: every package its binary links, as the build of the
// current platform selects them.
func listDeps(t *testing.T, pkg string) []goPackage {
	t.Helper()
	output, err := exec.Command("go", "list", "-deps", "-json=ImportPath,Imports", pkg).Output()
	if err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, exitErr.Stderr)
		}
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	var packages []goPackage
	decoder := json.NewDecoder(bytes.NewReader(output))
	for {
		var p goPackage
		if err := decoder.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		packages = append(packages, p)
	}
	if len(packages) == 0 {
		t.Fatalf("go list -deps %s listed nothing", pkg)
	}
	return packages
}
