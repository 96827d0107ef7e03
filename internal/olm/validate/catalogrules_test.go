package validate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/distribution/reference"
	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/manifests"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/olm/bundle"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/olm/catalog"
)

// catalogFile is the generated catalog, relative to this package.
var catalogFile = filepath.Join("..", "..", "..", filepath.FromSlash(catalog.File))

// readCatalog returns the real catalog's objects, in order.
func readCatalog(t *testing.T) []map[string]any {
	t.Helper()
	documents, err := manifests.Documents(catalogFile)
	if err != nil {
		t.Fatalf("read the catalog (make catalog writes it): %v", err)
	}
	objects := make([]map[string]any, 0, len(documents))
	for _, document := range documents {
		var object map[string]any
		if err := yaml.Unmarshal(document, &object); err != nil {
			t.Fatal(err)
		}
		objects = append(objects, object)
	}
	return objects
}

// loadCatalog writes objects as one catalog file in memory and loads it.
func loadCatalog(t *testing.T, objects []map[string]any) *Catalog {
	t.Helper()
	var text strings.Builder
	for _, object := range objects {
		data, err := yaml.Marshal(object)
		if err != nil {
			t.Fatal(err)
		}
		text.WriteString("---\n")
		text.Write(data)
	}
	c, err := LoadCatalog(fstest.MapFS{bundle.PackageName + "/catalog.yaml": {Data: []byte(text.String())}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCatalog runs every catalog rule on the generated catalog: errors fail, warnings are
// listed.
func TestCatalog(t *testing.T) {
	c := loadCatalog(t, readCatalog(t))
	if len(c.Packages) != 1 || len(c.Channels) != 1 || len(c.Bundles) != 1 {
		t.Errorf("want one package, channel and bundle; got %d, %d, %d", len(c.Packages), len(c.Channels), len(c.Bundles))
	}
	for _, f := range CheckCatalog(c, CatalogRules) {
		if f.Level == Error {
			t.Error(f)
		} else {
			t.Log(f)
		}
	}
}

// TestCatalogMatchesBundle: the catalog says of the bundle what the bundle says of
// itself.
func TestCatalogMatchesBundle(t *testing.T) {
	b := load(t, readBundle(t))
	if b.CSV == nil {
		t.Fatal("the bundle has no CSV")
	}
	c := loadCatalog(t, readCatalog(t))
	if len(c.Bundles) != 1 || len(c.Channels) != 1 || len(c.Packages) != 1 {
		t.Fatalf("want one package, channel and bundle; got %d, %d, %d", len(c.Packages), len(c.Channels), len(c.Bundles))
	}
	got := c.Bundles[0]

	var wantGVKs []catalog.GVKProperty
	for _, crd := range b.objectsOfKind("CustomResourceDefinition") {
		var spec struct {
			Spec struct {
				Group    string `json:"group"`
				Names    struct{ Kind string }
				Versions []struct {
					Name   string `json:"name"`
					Served bool   `json:"served"`
				} `json:"versions"`
			} `json:"spec"`
		}
		data, err := json.Marshal(crd.Object)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &spec); err != nil {
			t.Fatal(err)
		}
		for _, v := range spec.Spec.Versions {
			if v.Served {
				wantGVKs = append(wantGVKs, catalog.GVKProperty{Group: spec.Spec.Group, Kind: spec.Spec.Names.Kind, Version: v.Name})
			}
		}
	}
	var gotGVKs []catalog.GVKProperty
	for _, p := range got.Properties {
		if p.Type == catalog.PropertyGVK {
			var gvk catalog.GVKProperty
			if err := json.Unmarshal(p.Value, &gvk); err != nil {
				t.Fatal(err)
			}
			gotGVKs = append(gotGVKs, gvk)
		}
	}
	if len(wantGVKs) == 0 {
		t.Fatal("the bundle serves no CRD version")
	}
	sortGVKs := cmpSortGVKs()
	if diff := cmp.Diff(wantGVKs, gotGVKs, sortGVKs); diff != "" {
		t.Errorf("olm.gvk properties differ from the CRDs' served versions (-bundle +catalog):\n%s", diff)
	}

	version, _, err := bundleVersion(got)
	if err != nil {
		t.Fatal(err)
	}
	if version.String() != b.CSV.Spec.Version {
		t.Errorf("olm.package version %s, the CSV's spec.version is %s", version, b.CSV.Spec.Version)
	}
	if got.Name != b.CSV.Name || got.Package != bundle.PackageName {
		t.Errorf("bundle %s of package %s, want %s of %s", got.Name, got.Package, b.CSV.Name, bundle.PackageName)
	}
	channel := c.Channels[0]
	want := catalog.ChannelEntry{Name: b.CSV.Name, Replaces: b.CSV.Spec.Replaces, Skips: b.CSV.Spec.Skips, SkipRange: b.CSV.Annotations["olm.skipRange"]}
	if diff := cmp.Diff([]catalog.ChannelEntry{want}, channel.Entries); diff != "" {
		t.Errorf("channel entries differ from the CSV (-CSV +catalog):\n%s", diff)
	}
	if channel.Name != b.Annotations[annotationPrefix+"channel.default.v1"] || c.Packages[0].DefaultChannel != channel.Name {
		t.Errorf("channel %s, default %s; the bundle's default channel is %s", channel.Name, c.Packages[0].DefaultChannel, b.Annotations[annotationPrefix+"channel.default.v1"])
	}
	image, err := reference.ParseNormalizedNamed(got.Image)
	if err != nil {
		t.Fatal(err)
	}
	if tagged, ok := image.(reference.Tagged); !ok || tagged.Tag() != "v"+b.CSV.Spec.Version {
		t.Errorf("bundle image %s is not tagged v%s", got.Image, b.CSV.Spec.Version)
	}
}

func cmpSortGVKs() cmp.Option {
	return cmp.Transformer("sorted", func(in []catalog.GVKProperty) []catalog.GVKProperty {
		out := slices.Clone(in)
		slices.SortFunc(out, func(a, b catalog.GVKProperty) int {
			return strings.Compare(a.Group+a.Kind+a.Version, b.Group+b.Kind+b.Version)
		})
		return out
	})
}

// objectOf returns the first object of schema.
func objectOf(objects []map[string]any, schema string) map[string]any {
	for _, o := range objects {
		if o["schema"] == schema {
			return o
		}
	}
	return nil
}

func entries(objects []map[string]any) []any {
	return objectOf(objects, catalog.SchemaChannel)["entries"].([]any)
}

// realEntry is the channel entry of our bundle.
func realEntry(objects []map[string]any) map[string]any { return entries(objects)[0].(map[string]any) }

// deepCopy copies an object through YAML.
func deepCopy(t *testing.T, object map[string]any) map[string]any {
	t.Helper()
	data, err := yaml.Marshal(object)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := yaml.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// olmPackage returns the value of a bundle's olm.package property.
func olmPackage(bundleObject map[string]any) map[string]any {
	for _, p := range bundleObject["properties"].([]any) {
		if p.(map[string]any)["type"] == catalog.PropertyPackage {
			return p.(map[string]any)["value"].(map[string]any)
		}
	}
	return nil
}

// addBundle appends a copy of the real bundle at version, and its channel entry with
// replaces (empty: none), so that the catalog stays consistent but for what a test
// changes.
func addBundle(t *testing.T, objects []map[string]any, version, replaces string) []map[string]any {
	t.Helper()
	b := deepCopy(t, objectOf(objects, catalog.SchemaBundle))
	b["name"] = bundle.CSVName(version)
	b["image"] = strings.Replace(b["image"].(string), ":v", ":old-v", 1) + version
	olmPackage(b)["version"] = version
	entry := map[string]any{"name": bundle.CSVName(version)}
	if replaces != "" {
		entry["replaces"] = bundle.CSVName(replaces)
	}
	channel := objectOf(objects, catalog.SchemaChannel)
	channel["entries"] = append(entries(objects), entry)
	return append(objects, b)
}

func withDeprecations(entries ...map[string]any) func(*testing.T, []map[string]any) []map[string]any {
	return func(_ *testing.T, objects []map[string]any) []map[string]any {
		list := make([]any, 0, len(entries))
		for _, e := range entries {
			list = append(list, e)
		}
		return append(objects, map[string]any{"schema": catalog.SchemaDeprecations, "package": bundle.PackageName, "entries": list})
	}
}

func deprecate(schema, name, message string) map[string]any {
	return map[string]any{"reference": map[string]any{"schema": schema, "name": name}, "message": message}
}

// catalogMutation changes a copy of the real catalog's objects so that one rule must fire.
type catalogMutation struct {
	rule   string
	name   string
	mutate func(t *testing.T, objects []map[string]any) []map[string]any
}

func edit(schema string, change func(object map[string]any)) func(*testing.T, []map[string]any) []map[string]any {
	return func(_ *testing.T, objects []map[string]any) []map[string]any {
		change(objectOf(objects, schema))
		return objects
	}
}

func duplicate(schema string) func(*testing.T, []map[string]any) []map[string]any {
	return func(t *testing.T, objects []map[string]any) []map[string]any {
		return append(objects, deepCopy(t, objectOf(objects, schema)))
	}
}

var catalogMutations = []catalogMutation{
	{"fbc/schema", "an object without schema", func(_ *testing.T, objects []map[string]any) []map[string]any {
		return append(objects, map[string]any{"name": "orphan"})
	}},
	{"fbc/package-name", "not a DNS-1123 label", edit(catalog.SchemaPackage, func(p map[string]any) { p["name"] = "Secondary.Scheduler" })},
	{"fbc/package-unique", "the package twice", duplicate(catalog.SchemaPackage)},
	{"fbc/package-default-channel", "no default channel", edit(catalog.SchemaPackage, func(p map[string]any) { delete(p, "defaultChannel") })},
	{"fbc/package-default-channel", "a default channel that does not exist", edit(catalog.SchemaPackage, func(p map[string]any) { p["defaultChannel"] = "fast" })},
	{"fbc/package-channels", "no channel", func(_ *testing.T, objects []map[string]any) []map[string]any {
		return slices.DeleteFunc(objects, func(o map[string]any) bool { return o["schema"] == catalog.SchemaChannel })
	}},
	{"fbc/channel-package", "an unknown package", func(t *testing.T, objects []map[string]any) []map[string]any {
		channel := deepCopy(t, objectOf(objects, catalog.SchemaChannel))
		channel["package"] = "other-operator"
		return append(objects, channel)
	}},
	{"fbc/channel-unique", "the channel twice", duplicate(catalog.SchemaChannel)},
	{"fbc/channel-entries", "no entries", edit(catalog.SchemaChannel, func(ch map[string]any) { ch["entries"] = []any{} })},
	{"fbc/channel-entries", "a duplicate entry", func(_ *testing.T, objects []map[string]any) []map[string]any {
		channel := objectOf(objects, catalog.SchemaChannel)
		channel["entries"] = append(entries(objects), map[string]any{"name": realEntry(objects)["name"]})
		return objects
	}},
	{"fbc/channel-entry-bundles", "an entry without a bundle", edit(catalog.SchemaChannel, func(ch map[string]any) {
		ch["entries"] = append(ch["entries"].([]any), map[string]any{"name": bundle.CSVName("0.0.1"), "replaces": bundle.CSVName("0.0.0")})
		ch["entries"].([]any)[0].(map[string]any)["replaces"] = bundle.CSVName("0.0.1")
	})},
	{"fbc/channel-head", "two heads", func(t *testing.T, objects []map[string]any) []map[string]any {
		return addBundle(t, objects, "0.0.1", "")
	}},
	{"fbc/channel-head", "no head: the only entry skips itself", func(_ *testing.T, objects []map[string]any) []map[string]any {
		realEntry(objects)["skips"] = []any{realEntry(objects)["name"]}
		return objects
	}},
	{"fbc/channel-cycle", "a cycle below the head", func(t *testing.T, objects []map[string]any) []map[string]any {
		// head -> 0.0.2 -> 0.0.1 -> 0.0.2
		objects = addBundle(t, objects, "0.0.2", "0.0.1")
		objects = addBundle(t, objects, "0.0.1", "0.0.2")
		realEntry(objects)["replaces"] = bundle.CSVName("0.0.2")
		return objects
	}},
	{"fbc/channel-stranded", "a loop no head reaches", func(t *testing.T, objects []map[string]any) []map[string]any {
		// head (replaces nothing); 0.0.2 and 0.0.1 replace each other, so neither is a head.
		objects = addBundle(t, objects, "0.0.2", "0.0.1")
		return addBundle(t, objects, "0.0.1", "0.0.2")
	}},
	{"fbc/bundle-package", "an unknown package", func(t *testing.T, objects []map[string]any) []map[string]any {
		b := deepCopy(t, objectOf(objects, catalog.SchemaBundle))
		b["package"] = "other-operator"
		olmPackage(b)["packageName"] = "other-operator"
		return append(objects, b)
	}},
	{"fbc/bundle-unique", "the bundle twice", duplicate(catalog.SchemaBundle)},
	{"fbc/bundle-package-property", "no olm.package property", edit(catalog.SchemaBundle, func(b map[string]any) {
		b["properties"] = slices.DeleteFunc(b["properties"].([]any), func(p any) bool { return p.(map[string]any)["type"] == catalog.PropertyPackage })
	})},
	{"fbc/bundle-package-property", "two olm.package properties", edit(catalog.SchemaBundle, func(b map[string]any) {
		b["properties"] = append(b["properties"].([]any), map[string]any{"type": catalog.PropertyPackage, "value": map[string]any{"packageName": bundle.PackageName, "version": "0.1.0"}})
	})},
	{"fbc/bundle-package-property", "an olm.package property of another package", edit(catalog.SchemaBundle, func(b map[string]any) {
		olmPackage(b)["packageName"] = "other-operator"
	})},
	{"fbc/bundle-version", "not semver", edit(catalog.SchemaBundle, func(b map[string]any) { olmPackage(b)["version"] = "v0.1" })},
	{"fbc/bundle-version", "build metadata and a release", edit(catalog.SchemaBundle, func(b map[string]any) {
		olmPackage(b)["version"] = "0.1.0+build.7"
		olmPackage(b)["release"] = "2"
	})},
	{"fbc/bundle-in-channel", "in no channel", func(t *testing.T, objects []map[string]any) []map[string]any {
		b := deepCopy(t, objectOf(objects, catalog.SchemaBundle))
		b["name"] = bundle.CSVName("0.0.1")
		olmPackage(b)["version"] = "0.0.1"
		return append(objects, b)
	}},
	{"fbc/bundle-image", "no image", edit(catalog.SchemaBundle, func(b map[string]any) { delete(b, "image") })},
	{"fbc/bundle-image", "not a pull spec", edit(catalog.SchemaBundle, func(b map[string]any) { b["image"] = "Example.com/Op Bundle:v0.1.0" })},
	{"fbc/bundle-skip-range", "not a range", func(_ *testing.T, objects []map[string]any) []map[string]any {
		realEntry(objects)["skipRange"] = "below one"
		return objects
	}},
	{"fbc/bundle-skips", "an empty skips entry", func(_ *testing.T, objects []map[string]any) []map[string]any {
		realEntry(objects)["skips"] = []any{""}
		return objects
	}},
	{"fbc/bundle-versions-unique", "two bundles of the real version", func(t *testing.T, objects []map[string]any) []map[string]any {
		version := olmPackage(objectOf(objects, catalog.SchemaBundle))["version"].(string)
		objects = addBundle(t, objects, "0.0.1", "")
		realEntry(objects)["replaces"] = bundle.CSVName("0.0.1")
		// Build metadata does not make a version different.
		olmPackage(objects[len(objects)-1])["version"] = version + "+rebuild"
		return objects
	}},
	{"fbc/deprecations-unique", "two olm.deprecations", func(t *testing.T, objects []map[string]any) []map[string]any {
		objects = withDeprecations(deprecate(catalog.SchemaChannel, "stable", "use fast"))(t, objects)
		return withDeprecations(deprecate(catalog.SchemaPackage, "", "gone"))(t, objects)
	}},
	{"fbc/deprecations-references", "an unknown bundle", withDeprecations(deprecate(catalog.SchemaBundle, bundle.CSVName("9.9.9"), "broken"))},
	{"fbc/deprecations-references", "an unknown channel", withDeprecations(deprecate(catalog.SchemaChannel, "candidate", "closed"))},
	{"fbc/deprecations-references", "an unknown package", func(t *testing.T, objects []map[string]any) []map[string]any {
		objects = withDeprecations(deprecate(catalog.SchemaPackage, "", "gone"))(t, objects)
		objects[len(objects)-1]["package"] = "other-operator"
		return objects
	}},
	{"fbc/deprecations-messages", "no message", withDeprecations(deprecate(catalog.SchemaChannel, bundle.Channel, ""))},
}

// TestCatalogRulesRejectMutations: for each rule, a copy of the real catalog changed so
// that the rule must fire; the real catalog must not fire it.
func TestCatalogRulesRejectMutations(t *testing.T) {
	original := CheckCatalog(loadCatalog(t, readCatalog(t)), CatalogRules)
	for _, m := range catalogMutations {
		t.Run(m.rule+"/"+m.name, func(t *testing.T) {
			if slices.ContainsFunc(original, func(f Finding) bool { return f.Rule == m.rule }) {
				t.Fatalf("the real catalog already fires %s", m.rule)
			}
			findings := CheckCatalog(loadCatalog(t, m.mutate(t, readCatalog(t))), CatalogRules)
			if !slices.ContainsFunc(findings, func(f Finding) bool { return f.Rule == m.rule && f.Level == Error }) {
				t.Errorf("rule %s did not fire; findings: %v", m.rule, findings)
			}
		})
	}
}

// TestEveryCatalogRuleHasANegativeTest keeps a new catalog rule from going untested.
func TestEveryCatalogRuleHasANegativeTest(t *testing.T) {
	for _, rule := range CatalogRules {
		if !slices.ContainsFunc(catalogMutations, func(m catalogMutation) bool { return m.rule == rule.Name }) {
			t.Errorf("rule %s has no mutation that makes it fire", rule.Name)
		}
	}
}

// TestLoadCatalogReadsADirectory: opm reads every YAML and JSON file of the catalog
// directory and ignores other files.
func TestLoadCatalogReadsADirectory(t *testing.T) {
	data, err := os.ReadFile(catalogFile)
	if err != nil {
		t.Fatal(err)
	}
	c, err := LoadCatalog(fstest.MapFS{
		"a/catalog.yaml":   {Data: data},
		"b/extra.json":     {Data: []byte(`{"schema":"olm.package","name":"other","defaultChannel":"x"}`)},
		"b/README.md":      {Data: []byte("schema: olm.package\nname: ignored\n")},
		"c/not-yaml.yml":   {Data: []byte("schema: [unclosed\n")},
		"d/unknown.yaml":   {Data: []byte("schema: example.com.custom\nname: kept-out\n")},
		"e/nothing.yaml":   {Data: []byte("\n")},
		"f/schemaless.yml": {Data: []byte("name: no-schema\n")},
	})
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(c.Packages))
	for _, p := range c.Packages {
		names = append(names, p.Name)
	}
	if diff := cmp.Diff([]string{bundle.PackageName, "other"}, names); diff != "" {
		t.Errorf("packages (-want +got):\n%s", diff)
	}
	if len(c.LoadErrors) != 1 || !strings.HasPrefix(c.LoadErrors[0], "c/not-yaml.yml") {
		t.Errorf("load errors %v, want one for c/not-yaml.yml", c.LoadErrors)
	}
	if diff := cmp.Diff([]string{"f/schemaless.yml#0"}, c.Schemaless); diff != "" {
		t.Errorf("schemaless objects (-want +got):\n%s", diff)
	}
}
