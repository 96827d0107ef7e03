// Package docs runs the documentation against the demo's local cluster, so that a page
// that stops working fails the tests: the commands of docs/demo.md in page order, exactly
// as written; then, on the cluster as demo.md leaves it, the commands of every other page
// of README.md and docs/ that says so; then every whole Kubernetes object of those pages
// through the API server (server-side dry run).
//
// A page with commands says where they run, in an HTML comment of its own:
//
//	<!-- test-page: demo -->      on the demo, after demo.md's steps and before its cleanup
//	<!-- test-page: bare -->      on a cluster of their own as a reader's is before the
//	                              operator is installed (hack/demo.sh bare: no CRD, no
//	                              operator; podrunner runs the operator's pods as the
//	                              manager built from the checkout), after the demo
//	<!-- test-page: skip: WHY --> nowhere; WHY says why they cannot run here
//
// A fenced block's directive is an HTML comment on the line before it:
//
//	<!-- test: setup -->          demo.md: run first (the page's start)
//	<!-- test: cleanup -->        demo.md: run after the other pages
//	<!-- test: teardown -->       demo.md: run last, also after a failure
//	<!-- test: needs scheduler-plugins -->
//	                              run only when the scheduler-plugins kube-scheduler is built
//	<!-- test: before: CMD -->    run CMD first: what a reader's cluster has and the demo's
//	                              lacks, such as a namespace
//	<!-- test: instead: CMD -->   run CMD in the block's place: the documented substitution
//	                              of a value the reader chooses, such as node names
//	<!-- test: skip: WHY -->      never run; WHY says why it cannot be here
package docs

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Snippet is one fenced block of a Markdown file.
type Snippet struct {
	// File and Line say where it starts (the fence's line, from 1).
	File string
	Line int
	// Language is the fence's info string: sh, yaml, text, ...
	Language string
	// Directive is what the comment before the fence says after "test:", trimmed.
	Directive string
	// Body is the block's text, its indentation (a block inside a list item) removed.
	Body string
}

// Where is the snippet's place, for messages.
func (s Snippet) Where() string { return fmt.Sprintf("%s:%d", s.File, s.Line) }

// Skipped is why the snippet is never run, when its directive says so.
func (s Snippet) Skipped() (string, bool) {
	why, ok := strings.CutPrefix(s.Directive, "skip:")
	return strings.TrimSpace(why), ok
}

var (
	fence     = regexp.MustCompile("^(\\s*)```\\s*([A-Za-z0-9_-]*)\\s*$")
	directive = regexp.MustCompile(`^\s*<!--\s*test:\s*(.*?)\s*-->\s*$`)
)

var pageDirective = regexp.MustCompile(`^\s*<!--\s*test-page:\s*(.*?)\s*-->\s*$`)

// PageDirective is what the page's <!-- test-page: ... --> comment says, trimmed; empty
// when it has none.
func PageDirective(path string) (string, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(text), "\n") {
		if m := pageDirective.FindStringSubmatch(line); m != nil {
			return m[1], nil
		}
	}
	return "", nil
}

// Read is every fenced block of the Markdown file path, named file in messages.
func Read(path, file string) ([]Snippet, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var snippets []Snippet
	var open *Snippet
	var indent string
	var body []string
	lastText := "" // the last non-empty line outside a block
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for number := 1; scanner.Scan(); number++ {
		line := scanner.Text()
		if open != nil {
			if strings.TrimSpace(line) == "```" {
				open.Body = strings.Join(body, "\n") + "\n"
				snippets = append(snippets, *open)
				open, body = nil, nil
				lastText = line // a directive belongs to the block right after it
				continue
			}
			body = append(body, strings.TrimPrefix(line, indent))
			continue
		}
		if m := fence.FindStringSubmatch(line); m != nil {
			open = &Snippet{File: file, Line: number, Language: m[2]}
			indent = m[1]
			if d := directive.FindStringSubmatch(lastText); d != nil {
				open.Directive = d[1]
			}
			continue
		}
		if strings.TrimSpace(line) != "" {
			lastText = line
		}
	}
	if err := scanner.Err(); err != nil {
		return nil, err
	}
	if open != nil {
		return nil, fmt.Errorf("%s: the block opened here is never closed", open.Where())
	}
	return snippets, nil
}

// repoRoot is the checkout the pages' commands run in, as a reader runs them.
var repoRoot = func() string {
	root, err := filepath.Abs("../..")
	if err != nil {
		panic(err)
	}
	return root
}()

// markdownFiles are README.md and every page under docs/, relative to the checkout.
func markdownFiles() ([]string, error) {
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(path string, entry os.DirEntry, err error) error {
		if err != nil || entry.IsDir() || !strings.HasSuffix(path, ".md") {
			return err
		}
		relative, err := filepath.Rel(repoRoot, path)
		files = append(files, relative)
		return err
	})
	return files, err
}
