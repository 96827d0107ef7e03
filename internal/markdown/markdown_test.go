package markdown

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRead(t *testing.T) {
	page := "# A page\n\n<!-- test: setup -->\n```sh\nmake demo\n```\n\nText.\n\n" +
		"- a list item:\n\n  ```yaml\n  spec:\n    nodePool: {}\n  ```\n\n" +
		"<!-- test: skip: needs the internet -->\n\n```sh\ngit clone x\n```\n```text\noutput\n```\n"
	path := filepath.Join(t.TempDir(), "page.md")
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path, "docs/page.md")
	if err != nil {
		t.Fatal(err)
	}
	want := []Block{
		{File: "docs/page.md", Line: 4, Language: "sh", Directive: "setup", Body: "make demo\n"},
		{File: "docs/page.md", Line: 12, Language: "yaml", Body: "spec:\n  nodePool: {}\n"},
		{File: "docs/page.md", Line: 19, Language: "sh", Directive: "skip: needs the internet", Body: "git clone x\n"},
		{File: "docs/page.md", Line: 22, Language: "text", Body: "output\n"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Read (-want +got):\n%s", diff)
	}
	if why, ok := got[2].Skipped(); !ok || why != "needs the internet" {
		t.Errorf("Skipped = %q, %v", why, ok)
	}
}

func TestReadRefusesAnOpenBlock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "page.md")
	if err := os.WriteFile(path, []byte("```sh\nmake demo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(path, "docs/page.md"); err == nil {
		t.Fatal("Read accepted a block that is never closed")
	}
}
