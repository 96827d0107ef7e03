package docs

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/markdown"
)

// demoPromise marks the README's paragraph that says what docs/demo.md walks through.
const demoPromise = "[Try it on the demo](docs/demo.md) goes on from there"

// TestDemoKeepsReadmesPromise holds the README's word about the demo to the demo page, as
// the docs test runs it: every page the README's promise links to is linked from a section
// of docs/demo.md whose commands run, and every profile type of the CRD is created (or
// judged by the API server in a dry run) by those commands, written out or as a sample.
func TestDemoKeepsReadmesPromise(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	promise := paragraphWith(string(readme), demoPromise)
	if promise == "" {
		t.Fatalf("README.md has no paragraph with %q", demoPromise)
	}
	sections, err := demoSections()
	if err != nil {
		t.Fatal(err)
	}
	promised := linkTargets("README.md", promise)
	if len(promised) < 2 {
		t.Fatalf("README.md's promise of the demo links to %v: too few to be the list it was", promised)
	}
	for _, target := range promised {
		if target == demoPage {
			continue
		}
		if !sectionWithCommandsLinks(sections, target) {
			t.Errorf("README.md promises that docs/demo.md walks through %s, but no section of docs/demo.md with commands that run links to it", target)
		}
	}
	created := map[v1.ProfileType]bool{}
	for _, s := range sections {
		for _, block := range s.runnable {
			for _, object := range secondarySchedulersOf(t, block) {
				created[object.EffectiveProfile()] = true
			}
		}
	}
	types, err := profileTypes()
	if err != nil {
		t.Fatal(err)
	}
	for _, profile := range types {
		if !created[v1.ProfileType(profile)] {
			t.Errorf("README.md promises every profile on the demo, but no command of docs/demo.md that runs creates or dry-runs a %s SecondaryScheduler", profile)
		}
	}
}

// secondarySchedulersOf are the SecondarySchedulers block's commands create: those of its
// here-documents, and those of the samples it names.
func secondarySchedulersOf(t *testing.T, block markdown.Block) []v1.SecondaryScheduler {
	documents := hereDocument.FindAllStringSubmatch(block.Body, -1)
	texts := make([]string, 0, len(documents))
	for _, document := range documents {
		texts = append(texts, document[1])
	}
	for _, sample := range samplePath.FindAllString(block.Body, -1) {
		text, err := os.ReadFile(filepath.Join(repoRoot, sample))
		if err != nil {
			t.Errorf("%s names %s: %v", block.Where(), sample, err)
		}
		texts = append(texts, string(text))
	}
	var objects []v1.SecondaryScheduler
	for _, text := range texts {
		for _, document := range strings.Split(text, "\n---\n") {
			var object v1.SecondaryScheduler
			if err := yaml.Unmarshal([]byte(document), &object); err != nil {
				t.Errorf("%s: not YAML: %v", block.Where(), err)
				continue
			}
			if object.Kind == "SecondaryScheduler" {
				objects = append(objects, object)
			}
		}
	}
	return objects
}

// hereDocument matches a here-document of a command, <<'EOF' ... EOF, as the pages write them.
var hereDocument = regexp.MustCompile(`(?s)<<'EOF'[^\n]*\n(.*?)\nEOF\n`)

// samplePath matches a sample a command applies.
var samplePath = regexp.MustCompile(`config/samples/[A-Za-z0-9_.-]+\.yaml`)

// demoSection is one ## section of docs/demo.md: the link targets of its text, and its sh
// blocks that the docs test runs (those that need the scheduler-plugins kube-scheduler
// included: the README promises the load-aware profiles when it is built).
type demoSection struct {
	heading  string
	links    []string
	runnable []markdown.Block
}

// demoSections are docs/demo.md's ## sections.
func demoSections() ([]demoSection, error) {
	text, err := os.ReadFile(filepath.Join(repoRoot, demoPage))
	if err != nil {
		return nil, err
	}
	blocks, err := markdown.Read(filepath.Join(repoRoot, demoPage), demoPage)
	if err != nil {
		return nil, err
	}
	var sections []demoSection
	var starts []int
	inBlock := false
	for i, line := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inBlock = !inBlock
		}
		switch {
		case inBlock:
		case strings.HasPrefix(line, "## "):
			sections = append(sections, demoSection{heading: strings.TrimPrefix(line, "## ")})
			starts = append(starts, i+1)
		case len(sections) > 0:
			current := &sections[len(sections)-1]
			current.links = append(current.links, linkTargets(demoPage, codeSpan.ReplaceAllString(line, ""))...)
		}
	}
	for _, block := range blocks {
		if _, skipped := block.Skipped(); block.Language != "sh" || skipped {
			continue
		}
		for i := len(starts) - 1; i >= 0; i-- {
			if block.Line > starts[i] {
				sections[i].runnable = append(sections[i].runnable, block)
				break
			}
		}
	}
	return sections, nil
}

// sectionWithCommandsLinks reports whether a section with commands that run links to target.
func sectionWithCommandsLinks(sections []demoSection, target string) bool {
	for _, s := range sections {
		for _, link := range s.links {
			if link == target && len(s.runnable) > 0 {
				return true
			}
		}
	}
	return false
}

// linkTargets are the relative links of text, a part of file, as paths from the checkout's
// root, with their #fragment.
func linkTargets(file, text string) []string {
	var targets []string
	for _, m := range markdownLink.FindAllStringSubmatch(text, -1) {
		target := m[1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "#") {
			continue
		}
		linked, fragment, _ := strings.Cut(target, "#")
		linked = path.Join(path.Dir(file), linked)
		if fragment != "" {
			linked += "#" + fragment
		}
		targets = append(targets, linked)
	}
	return targets
}

// paragraphWith is the rest of the paragraph of text (lines between blank lines) from
// marker on, its lines joined by spaces so that a link broken over two lines is whole.
func paragraphWith(text, marker string) string {
	for _, paragraph := range strings.Split(text, "\n\n") {
		joined := strings.Join(strings.Fields(paragraph), " ")
		if at := strings.Index(joined, marker); at >= 0 {
			return joined[at:]
		}
	}
	return ""
}

// profileTypes are the values the CRD allows for spec.profile.type.
func profileTypes() ([]string, error) {
	text, err := os.ReadFile(filepath.Join(repoRoot, "config/crd/bases/operator.secondary-scheduler.io_secondaryschedulers.yaml"))
	if err != nil {
		return nil, err
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema struct {
						Properties struct {
							Spec struct {
								Properties struct {
									Profile struct {
										Properties struct {
											Type struct {
												Enum []string `json:"enum"`
											} `json:"type"`
										} `json:"properties"`
									} `json:"profile"`
								} `json:"properties"`
							} `json:"spec"`
						} `json:"properties"`
					} `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(text, &crd); err != nil {
		return nil, err
	}
	var types []string
	for _, version := range crd.Spec.Versions {
		types = append(types, version.Schema.OpenAPIV3Schema.Properties.Spec.Properties.Profile.Properties.Type.Enum...)
	}
	if len(types) == 0 {
		return nil, os.ErrNotExist
	}
	return types, nil
}
