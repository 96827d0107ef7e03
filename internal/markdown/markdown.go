// Package markdown reads the project's Markdown pages as the tests that check the docs
// need them: the pages of README.md and docs/, each page's fenced blocks with the
// directive of the HTML comment before each (<!-- test: ... -->), and a page's own
// directive (<!-- test-page: ... -->). What the directives mean is test/docs' business.
package markdown

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Block is one fenced block of a Markdown file.
type Block struct {
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

// Where is the block's place, for messages.
func (s Block) Where() string { return fmt.Sprintf("%s:%d", s.File, s.Line) }

// Skipped is why the block is never run, when its directive says so.
func (s Block) Skipped() (string, bool) {
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

// Read is every fenced block of the Markdown file path, named file in messages, with the
// directive of the <!-- test: ... --> comment right before it.
func Read(path, file string) ([]Block, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var blocks []Block
	var open *Block
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
				blocks = append(blocks, *open)
				open, body = nil, nil
				lastText = line // a directive belongs to the block right after it
				continue
			}
			body = append(body, strings.TrimPrefix(line, indent))
			continue
		}
		if m := fence.FindStringSubmatch(line); m != nil {
			open = &Block{File: file, Line: number, Language: m[2]}
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
	return blocks, nil
}

// Pages are README.md and every page under docs/ of the checkout root, as paths relative
// to it.
func Pages(root string) ([]string, error) {
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, entry os.DirEntry, err error) error {
		if err != nil || entry.IsDir() || !strings.HasSuffix(path, ".md") {
			return err
		}
		relative, err := filepath.Rel(root, path)
		files = append(files, relative)
		return err
	})
	return files, err
}
