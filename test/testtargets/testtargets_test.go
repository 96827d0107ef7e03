// Package testtargets checks that the Makefile's test targets run every test of the module,
// each once: make test-unit the packages hack/unit-packages.sh derives from go list, make
// test-integration those it leaves out (their tests start envtest), and the targets that pass
// -tags (test-e2e, test-docs) the tests behind that build tag.
package testtargets

import (
	"bufio"
	"go/build/constraint"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// root is the repository's root, relative to this package.
const root = "../.."

// run runs name with args in the repository's root and returns its output's lines.
func run(t *testing.T, name string, args ...string) []string {
	t.Helper()
	command := exec.Command(name, args...)
	command.Dir = root
	command.Stderr = os.Stderr
	out, err := command.Output()
	if err != nil {
		t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return strings.Fields(string(out))
}

// suite is the go test (or ginkgo) command of one Makefile target.
type suite struct {
	target   string
	tag      string   // the value of its -tags, empty without
	patterns []string // its package patterns (./...)
}

// makefileSuites reads the go test and ginkgo commands in the recipes of the Makefile's
// test-* targets.
func makefileSuites(t *testing.T) []suite {
	t.Helper()
	file, err := os.Open(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = file.Close() }()
	var suites []suite
	target := ""
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		line := scanner.Text()
		if !strings.HasPrefix(line, "\t") {
			if name, _, ok := strings.Cut(line, ":"); ok && !strings.ContainsAny(name, " =\t") {
				target = name
			}
			continue
		}
		if !strings.HasPrefix(target, "test-") {
			continue
		}
		// go test, or ginkgo's command (the e2e suite's parallel processes), which takes the
		// same packages and tags.
		_, command, ok := strings.Cut(line, "go test ")
		if !ok {
			if _, command, ok = strings.Cut(line, "$(GINKGO) "); !ok {
				continue
			}
		}
		found := suite{target: target}
		fields := strings.Fields(command)
		for i, field := range fields {
			switch {
			case (field == "-tags" || field == "--tags") && i+1 < len(fields):
				found.tag = fields[i+1]
			case strings.HasPrefix(field, "./"):
				found.patterns = append(found.patterns, field)
			}
		}
		suites = append(suites, found)
	}
	if err := scanner.Err(); err != nil {
		t.Fatal(err)
	}
	return suites
}

// testFileTags maps each directory (relative to the root, slash-separated) with test files
// to the build constraints of those files: "" for a file without one.
func testFileTags(t *testing.T) map[string][]string {
	t.Helper()
	tags := map[string][]string{}
	err := filepath.WalkDir(root, func(name string, entry fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		base := entry.Name()
		if entry.IsDir() {
			// What go list ./... skips too; bin holds built tools, not sources.
			if name != root && (base == "testdata" || base == "bin" || strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(base, "_test.go") {
			return nil
		}
		expression, err := buildConstraint(name)
		if err != nil {
			return err
		}
		dir, err := filepath.Rel(root, filepath.Dir(name))
		if err != nil {
			return err
		}
		tags[filepath.ToSlash(dir)] = append(tags[filepath.ToSlash(dir)], expression)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tags
}

// buildConstraint is the //go:build expression of the Go file name, "" without one.
func buildConstraint(name string) (string, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "package ") {
			break
		}
		if constraint.IsGoBuild(line) {
			return line, nil
		}
	}
	return "", nil
}

// builds reports whether a file with the build constraint expression builds with tag set.
func builds(t *testing.T, expression, tag string) bool {
	t.Helper()
	if expression == "" {
		return true
	}
	parsed, err := constraint.Parse(expression)
	if err != nil {
		t.Fatalf("%s: %v", expression, err)
	}
	return parsed.Eval(func(name string) bool {
		return name == tag || name == runtime.GOOS || name == runtime.GOARCH || name == "unix" && runtime.GOOS != "windows"
	})
}

func TestEveryTestRunsOnce(t *testing.T) {
	module := run(t, "go", "list", "-m")[0]
	unit := run(t, filepath.Join("hack", "unit-packages.sh"))
	if len(unit) < 10 {
		t.Fatalf("hack/unit-packages.sh lists only %d packages: %v", len(unit), unit)
	}
	runBy := map[string][]string{} // "package tag" to the targets that run its tests of that tag
	for _, pkg := range unit {
		runBy[pkg+" "] = append(runBy[pkg+" "], "test-unit")
	}
	suites := makefileSuites(t)
	for _, suite := range suites {
		if len(suite.patterns) == 0 {
			continue
		}
		args := append([]string{"list"}, suite.patterns...)
		if suite.tag != "" {
			args = append([]string{"list", "-tags", suite.tag}, suite.patterns...)
		}
		for _, pkg := range run(t, "go", args...) {
			runBy[pkg+" "+suite.tag] = append(runBy[pkg+" "+suite.tag], suite.target)
		}
	}
	if !slices.ContainsFunc(suites, func(s suite) bool { return s.target == "test-integration" && len(s.patterns) > 0 }) {
		t.Fatalf("found no go test with packages in the Makefile's test-integration: %+v", suites)
	}

	var tags []string // of the targets that pass -tags
	for _, suite := range suites {
		if suite.tag != "" && !slices.Contains(tags, suite.tag) {
			tags = append(tags, suite.tag)
		}
	}
	for dir, expressions := range testFileTags(t) {
		pkg := path.Join(module, dir)
		for _, expression := range slices.Compact(slices.Sorted(slices.Values(expressions))) {
			if builds(t, expression, "") {
				switch targets := runBy[pkg+" "]; len(targets) {
				case 0:
					t.Errorf("%s has tests, but neither make test-unit nor make test-integration runs them: list it in "+
						"test-integration when its tests start envtest (else hack/unit-packages.sh should have found it)", dir)
				case 1:
				default:
					t.Errorf("%s's tests run in more than one of test-unit and test-integration: %v", dir, targets)
				}
				continue
			}
			// Tests behind a build tag (e2e, docs): a target that passes the tag runs them.
			ran := slices.ContainsFunc(tags, func(tag string) bool {
				return builds(t, expression, tag) && len(runBy[pkg+" "+tag]) > 0
			})
			if !ran {
				t.Errorf("%s has tests behind %q, which no target of the Makefile runs with its -tags", dir, expression)
			}
		}
	}
}
