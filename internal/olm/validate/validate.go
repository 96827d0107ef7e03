// Package validate checks a registry+v1 bundle with the rules that OLM's own tools enforce
// (operator-sdk bundle validate, with the operatorframework optional suite), which are not
// available as Go modules here. Each rule is a function of the loaded bundle returning
// findings; an error fails, a warning is reported.
package validate

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/manifests"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/olm/csv"
)

// Level is how serious a finding is.
type Level string

// The levels: an Error fails validation, a Warning is listed.
const (
	Error   Level = "E"
	Warning Level = "W"
)

// Finding is one rule's complaint about the bundle.
type Finding struct {
	Level   Level
	Rule    string
	Message string
}

func (f Finding) String() string { return fmt.Sprintf("%s %s: %s", f.Level, f.Rule, f.Message) }

// RuleOf is one named check of a T, a bundle or a catalog, named as in the checklist of
// OLM's rules.
type RuleOf[T any] struct {
	Name  string
	Check func(T) []Finding
}

// Rule is one check of a bundle.
type Rule = RuleOf[*Bundle]

// Object is one manifest of the bundle.
type Object struct {
	File string
	*unstructured.Unstructured
}

// Bundle is a loaded bundle: its files, annotations, objects and decoded CSV.
type Bundle struct {
	// Files holds every file's content by path, relative to the bundle's root.
	Files       map[string][]byte
	Annotations map[string]string
	Objects     []Object
	// CSV is the decoded ClusterServiceVersion; nil when the bundle has none or it does not
	// decode (see LoadErrors).
	CSV *csv.ClusterServiceVersion
	// LoadErrors are files that could not be read as YAML objects.
	LoadErrors []string
}

// Load reads a bundle from fsys, whose root holds manifests/ and metadata/.
func Load(fsys fs.FS) (*Bundle, error) {
	b := &Bundle{Files: map[string][]byte{}}
	err := fs.WalkDir(fsys, ".", func(p string, entry fs.DirEntry, err error) error {
		if err != nil || entry.IsDir() {
			return err
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		b.Files[p] = data
		return nil
	})
	if err != nil {
		return nil, err
	}
	if data, ok := b.Files["metadata/annotations.yaml"]; ok {
		var annotations struct {
			Annotations map[string]string `json:"annotations"`
		}
		if err := yaml.UnmarshalStrict(data, &annotations); err != nil {
			b.LoadErrors = append(b.LoadErrors, "metadata/annotations.yaml: "+err.Error())
		}
		b.Annotations = annotations.Annotations
	}
	for _, p := range slices.Sorted(maps.Keys(b.Files)) {
		if !strings.HasPrefix(p, "manifests/") {
			continue
		}
		documents, err := manifests.Split(b.Files[p])
		if err != nil {
			b.LoadErrors = append(b.LoadErrors, p+": "+err.Error())
			continue
		}
		for _, document := range documents {
			object := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(document, &object.Object); err != nil || object.Object == nil {
				b.LoadErrors = append(b.LoadErrors, fmt.Sprintf("%s: not a YAML object: %v", p, err))
				continue
			}
			b.Objects = append(b.Objects, Object{File: p, Unstructured: object})
			if object.GetKind() == csv.Kind {
				if b.CSV != nil {
					b.LoadErrors = append(b.LoadErrors, p+": a second ClusterServiceVersion")
					continue
				}
				var decoded csv.ClusterServiceVersion
				if err := yaml.UnmarshalStrict(document, &decoded); err != nil {
					b.LoadErrors = append(b.LoadErrors, p+": "+err.Error())
					continue
				}
				b.CSV = &decoded
			}
		}
	}
	return b, nil
}

// Validate runs rules on b and returns their findings, errors first.
func Validate(b *Bundle, rules []Rule) []Finding {
	return check(b, b.LoadErrors, rules)
}

// check runs rules on subject, after the errors found loading it, and returns their
// findings, errors first.
func check[T any](subject T, loadErrors []string, rules []RuleOf[T]) []Finding {
	var findings []Finding
	for _, message := range loadErrors {
		findings = append(findings, Finding{Error, "load", message})
	}
	for _, rule := range rules {
		for _, f := range rule.Check(subject) {
			f.Rule = rule.Name
			findings = append(findings, f)
		}
	}
	slices.SortStableFunc(findings, func(a, b Finding) int { return strings.Compare(string(a.Level), string(b.Level)) })
	return findings
}

// objectsOfKind are the bundle's objects of kind.
func (b *Bundle) objectsOfKind(kind string) []Object {
	var out []Object
	for _, o := range b.Objects {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// gzipSize is the size of the bundle's files, gzip-compressed in a stable order.
func (b *Bundle) gzipSize() (int, error) {
	var buf bytes.Buffer
	writer := gzip.NewWriter(&buf)
	for _, p := range slices.Sorted(maps.Keys(b.Files)) {
		if _, err := writer.Write(b.Files[p]); err != nil {
			return 0, err
		}
	}
	if err := writer.Close(); err != nil {
		return 0, err
	}
	return buf.Len(), nil
}

// almExamples decodes the CSV's alm-examples annotation.
func (b *Bundle) almExamples() ([]map[string]any, bool, error) {
	if b.CSV == nil {
		return nil, false, nil
	}
	raw, ok := b.CSV.Annotations["alm-examples"]
	if !ok {
		return nil, false, nil
	}
	// apimachinery's JSON keeps integers int64, as the API server decodes them.
	var examples []map[string]any
	if err := utiljson.Unmarshal([]byte(raw), &examples); err != nil {
		return nil, true, err
	}
	return examples, true, nil
}

func errorf(format string, args ...any) Finding {
	return Finding{Level: Error, Message: fmt.Sprintf(format, args...)}
}

func warnf(format string, args ...any) Finding {
	return Finding{Level: Warning, Message: fmt.Sprintf(format, args...)}
}
