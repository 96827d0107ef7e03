package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	markdownLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	codeSpan     = regexp.MustCompile("`[^`]*`")
	explicitID   = regexp.MustCompile(`<a id="([^"]+)"`)
)

// TestLinksResolve checks that every relative link of README.md and docs/ names a file of
// the checkout and, with a #fragment into a Markdown file, one of its headings.
func TestLinksResolve(t *testing.T) {
	files, err := markdownFiles()
	if err != nil {
		t.Fatal(err)
	}
	anchorsOf := map[string]map[string]bool{}
	anchors := func(file string) map[string]bool {
		if found, ok := anchorsOf[file]; ok {
			return found
		}
		found := map[string]bool{}
		text, _ := os.ReadFile(filepath.Join(repoRoot, file))
		inBlock := false
		for _, line := range strings.Split(string(text), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				inBlock = !inBlock
			}
			if heading, ok := strings.CutPrefix(line, "#"); ok && !inBlock {
				found[slug(strings.TrimLeft(heading, "#"))] = true
			}
			for _, m := range explicitID.FindAllStringSubmatch(line, -1) {
				found[m[1]] = true
			}
		}
		anchorsOf[file] = found
		return found
	}
	for _, file := range files {
		text, err := os.ReadFile(filepath.Join(repoRoot, file))
		if err != nil {
			t.Fatal(err)
		}
		inBlock := false
		for i, line := range strings.Split(string(text), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				inBlock = !inBlock
			}
			if inBlock {
				continue
			}
			for _, m := range markdownLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, fragment, _ := strings.Cut(target, "#")
				linked := file
				if path != "" {
					linked = filepath.Join(filepath.Dir(file), path)
					if _, err := os.Stat(filepath.Join(repoRoot, linked)); err != nil {
						t.Errorf("%s:%d: link %s: no such file %s", file, i+1, target, linked)
						continue
					}
				}
				if fragment != "" && strings.HasSuffix(linked, ".md") && !anchors(linked)[fragment] {
					t.Errorf("%s:%d: link %s: %s has no heading for #%s", file, i+1, target, linked, fragment)
				}
			}
		}
	}
}

// slug is GitHub's anchor of a heading: lower case, punctuation dropped, spaces as dashes.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}
