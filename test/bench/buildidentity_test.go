package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestBuildIdentity builds a program in a git checkout of its own, as a baseline operator
// is built, and checks that the report names its revision, then -dirty once the checkout
// has changed; and a file without a stamped revision by its hash.
func TestBuildIdentity(t *testing.T) {
	dir := t.TempDir()
	run := func(name string, args ...string) string {
		t.Helper()
		command := exec.Command(name, args...)
		command.Dir = dir
		command.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-buildvcs=true", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		output, err := command.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, output)
		}
		return strings.TrimSpace(string(output))
	}
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/baseline\n\ngo 1.22\n")
	write("main.go", "package main\n\nfunc main() {}\n")
	run("git", "init", "-q")
	run("git", "add", ".")
	run("git", "commit", "-q", "-m", "baseline")
	revision := run("git", "rev-parse", "--short=7", "HEAD")
	binary := filepath.Join(dir, "manager")
	run("go", "build", "-o", binary, ".")
	if got, want := buildIdentity(binary), "the operator at "+revision; got != want {
		t.Errorf("buildIdentity of a clean build = %q, want %q", got, want)
	}
	write("main.go", "package main\n\nfunc main() { println() }\n")
	run("go", "build", "-o", binary, ".")
	if got, want := buildIdentity(binary), "the operator at "+revision+"-dirty"; got != want {
		t.Errorf("buildIdentity of a build of a changed checkout = %q, want %q", got, want)
	}
	unstamped := filepath.Join(dir, "unstamped")
	write("unstamped", "not a Go binary")
	if got := buildIdentity(unstamped); !regexp.MustCompile(`^an operator build of no stamped revision, SHA-256 [0-9a-f]{12}…$`).MatchString(got) {
		t.Errorf("buildIdentity of an unstamped file = %q", got)
	}
}
