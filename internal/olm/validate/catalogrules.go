package validate

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/blang/semver/v4"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/imageref"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/manifests"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/olm/catalog"
)

// CatalogRule is one check of a file-based catalog, named after the rules of opm validate.
type CatalogRule = RuleOf[*Catalog]

// Catalog is a loaded file-based catalog: its objects by schema.
type Catalog struct {
	Packages     []catalog.Package
	Channels     []catalog.Channel
	Bundles      []catalog.Bundle
	Deprecations []catalog.Deprecations
	// Schemaless names the objects without a schema, as file#index.
	Schemaless []string
	// LoadErrors are documents that could not be read as objects of their schema.
	LoadErrors []string
}

// LoadCatalog reads every .yaml, .yml and .json file under fsys, as opm does a catalog
// directory. Objects of schemas opm does not interpret are kept out, as opm keeps them
// opaque.
func LoadCatalog(fsys fs.FS) (*Catalog, error) {
	c := &Catalog{}
	err := fs.WalkDir(fsys, ".", func(p string, entry fs.DirEntry, err error) error {
		if err != nil || entry.IsDir() || !slices.Contains([]string{".yaml", ".yml", ".json"}, path.Ext(p)) {
			return err
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		documents, err := manifests.Split(data)
		if err != nil {
			c.LoadErrors = append(c.LoadErrors, p+": "+err.Error())
			return nil
		}
		for i, document := range documents {
			c.add(fmt.Sprintf("%s#%d", p, i), document)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Catalog) add(where string, document []byte) {
	var meta struct {
		Schema string `json:"schema"`
	}
	if err := yaml.Unmarshal(document, &meta); err != nil {
		c.LoadErrors = append(c.LoadErrors, fmt.Sprintf("%s: not an object: %v", where, err))
		return
	}
	var err error
	switch meta.Schema {
	case "":
		c.Schemaless = append(c.Schemaless, where)
	case catalog.SchemaPackage:
		c.Packages, err = appendDecoded(c.Packages, document)
	case catalog.SchemaChannel:
		c.Channels, err = appendDecoded(c.Channels, document)
	case catalog.SchemaBundle:
		c.Bundles, err = appendDecoded(c.Bundles, document)
	case catalog.SchemaDeprecations:
		c.Deprecations, err = appendDecoded(c.Deprecations, document)
	}
	if err != nil {
		c.LoadErrors = append(c.LoadErrors, fmt.Sprintf("%s: %s: %v", where, meta.Schema, err))
	}
}

func appendDecoded[T any](list []T, document []byte) ([]T, error) {
	var object T
	if err := yaml.Unmarshal(document, &object); err != nil {
		return list, err
	}
	return append(list, object), nil
}

// CheckCatalog runs rules on c and returns their findings, errors first.
func CheckCatalog(c *Catalog, rules []CatalogRule) []Finding {
	return check(c, c.LoadErrors, rules)
}

// CatalogRules are the rules of opm validate, from the checklist's "File-based catalog"
// section.
var CatalogRules = []CatalogRule{
	{"fbc/schema", checkSchemas},
	{"fbc/package-name", checkPackageNames},
	{"fbc/package-unique", checkPackagesUnique},
	{"fbc/package-default-channel", checkDefaultChannels},
	{"fbc/package-channels", checkPackageHasChannel},
	{"fbc/channel-package", checkChannelPackages},
	{"fbc/channel-unique", checkChannelsUnique},
	{"fbc/channel-entries", checkChannelEntries},
	{"fbc/channel-entry-bundles", checkEntriesHaveBundles},
	{"fbc/channel-head", checkChannelHeads},
	{"fbc/channel-cycle", checkReplacesCycles},
	{"fbc/channel-stranded", checkStrandedBundles},
	{"fbc/bundle-package", checkBundlePackages},
	{"fbc/bundle-unique", checkBundlesUnique},
	{"fbc/bundle-package-property", checkPackageProperty},
	{"fbc/bundle-version", checkBundleVersions},
	{"fbc/bundle-in-channel", checkBundlesInChannels},
	{"fbc/bundle-image", checkBundleImages},
	{"fbc/bundle-skip-range", checkSkipRanges},
	{"fbc/bundle-skips", checkSkips},
	{"fbc/bundle-versions-unique", checkVersionsUnique},
	{"fbc/deprecations-unique", checkDeprecationsUnique},
	{"fbc/deprecations-references", checkDeprecationReferences},
	{"fbc/deprecations-messages", checkDeprecationMessages},
}

func checkSchemas(c *Catalog) []Finding {
	out := make([]Finding, 0, len(c.Schemaless))
	for _, where := range c.Schemaless {
		out = append(out, errorf("%s: object has no schema", where))
	}
	return out
}

func checkPackageNames(c *Catalog) []Finding {
	var out []Finding
	for _, p := range c.Packages {
		if problems := validation.IsDNS1123Label(p.Name); len(problems) > 0 {
			out = append(out, errorf("package name %q is not a DNS-1123 label: %s", p.Name, strings.Join(problems, "; ")))
		}
	}
	return out
}

func checkPackagesUnique(c *Catalog) []Finding {
	return duplicates(c.Packages, func(p catalog.Package) string { return p.Name }, "package")
}

func checkDefaultChannels(c *Catalog) []Finding {
	var out []Finding
	for _, p := range c.Packages {
		switch {
		case p.DefaultChannel == "":
			out = append(out, errorf("package %q has no default channel", p.Name))
		case !slices.ContainsFunc(c.Channels, func(ch catalog.Channel) bool { return ch.Package == p.Name && ch.Name == p.DefaultChannel }):
			out = append(out, errorf("package %q: default channel %q not found", p.Name, p.DefaultChannel))
		}
	}
	return out
}

func checkPackageHasChannel(c *Catalog) []Finding {
	var out []Finding
	for _, p := range c.Packages {
		if !slices.ContainsFunc(c.Channels, func(ch catalog.Channel) bool { return ch.Package == p.Name }) {
			out = append(out, errorf("package %q has no channel", p.Name))
		}
	}
	return out
}

func (c *Catalog) hasPackage(name string) bool {
	return slices.ContainsFunc(c.Packages, func(p catalog.Package) bool { return p.Name == name })
}

func checkChannelPackages(c *Catalog) []Finding {
	var out []Finding
	for _, ch := range c.Channels {
		if !c.hasPackage(ch.Package) {
			out = append(out, errorf("channel %q names unknown package %q", ch.Name, ch.Package))
		}
	}
	return out
}

func checkChannelsUnique(c *Catalog) []Finding {
	return duplicates(c.Channels, func(ch catalog.Channel) string { return ch.Package + "/" + ch.Name }, "channel")
}

func checkChannelEntries(c *Catalog) []Finding {
	var out []Finding
	for _, ch := range c.Channels {
		if len(ch.Entries) == 0 {
			out = append(out, errorf("channel %q of package %q has no entries", ch.Name, ch.Package))
		}
		for _, f := range duplicates(ch.Entries, func(e catalog.ChannelEntry) string { return e.Name }, "entry") {
			f.Message = fmt.Sprintf("channel %q of package %q: %s", ch.Name, ch.Package, f.Message)
			out = append(out, f)
		}
	}
	return out
}

// checkEntriesHaveBundles: opm turns each channel entry into a bundle of the model and
// refuses an entry that no olm.bundle of the package fills.
func checkEntriesHaveBundles(c *Catalog) []Finding {
	var out []Finding
	for _, ch := range c.Channels {
		for _, e := range ch.Entries {
			if !slices.ContainsFunc(c.Bundles, func(b catalog.Bundle) bool { return b.Package == ch.Package && b.Name == e.Name }) {
				out = append(out, errorf("channel %q of package %q: entry %q has no olm.bundle", ch.Name, ch.Package, e.Name))
			}
		}
	}
	return out
}

// channelHeads are the entries nothing in the channel replaces or skips.
func channelHeads(ch catalog.Channel) []catalog.ChannelEntry {
	incoming := map[string]bool{}
	for _, e := range ch.Entries {
		if e.Replaces != "" {
			incoming[e.Replaces] = true
		}
		for _, skip := range e.Skips {
			incoming[skip] = true
		}
	}
	var heads []catalog.ChannelEntry
	for _, e := range ch.Entries {
		if !incoming[e.Name] {
			heads = append(heads, e)
		}
	}
	return heads
}

func checkChannelHeads(c *Catalog) []Finding {
	var out []Finding
	for _, ch := range c.Channels {
		if len(ch.Entries) == 0 {
			continue
		}
		heads := channelHeads(ch)
		if len(heads) != 1 {
			names := make([]string, 0, len(heads))
			for _, h := range heads {
				names = append(names, h.Name)
			}
			out = append(out, errorf("channel %q of package %q has %d heads, want exactly one: %v", ch.Name, ch.Package, len(heads), names))
		}
	}
	return out
}

// replacesChain walks replaces from the channel's only head, as opm does: the names
// reached, in order, and the name at which the walk came back to one already reached
// ("" when it did not). ok is false when the channel has no single head.
func replacesChain(ch catalog.Channel) (chain []string, cycleAt string, ok bool) {
	heads := channelHeads(ch)
	if len(heads) != 1 {
		return nil, "", false
	}
	byName := map[string]catalog.ChannelEntry{}
	for _, e := range ch.Entries {
		byName[e.Name] = e
	}
	chain = []string{heads[0].Name}
	for current, found := heads[0], true; found && current.Replaces != ""; current, found = byName[current.Replaces] {
		if slices.Contains(chain, current.Replaces) {
			return chain, current.Replaces, true
		}
		chain = append(chain, current.Replaces)
	}
	return chain, "", true
}

func checkReplacesCycles(c *Catalog) []Finding {
	var out []Finding
	for _, ch := range c.Channels {
		if chain, cycleAt, ok := replacesChain(ch); ok && cycleAt != "" {
			out = append(out, errorf("channel %q of package %q: cycle in replaces: %s -> %s", ch.Name, ch.Package, strings.Join(chain, " -> "), cycleAt))
		}
	}
	return out
}

func checkStrandedBundles(c *Catalog) []Finding {
	var out []Finding
	for _, ch := range c.Channels {
		chain, _, ok := replacesChain(ch)
		if !ok {
			continue
		}
		skipped := map[string]bool{}
		for _, e := range ch.Entries {
			for _, skip := range e.Skips {
				skipped[skip] = true
			}
		}
		var stranded []string
		for _, e := range ch.Entries {
			if !slices.Contains(chain, e.Name) && !skipped[e.Name] {
				stranded = append(stranded, e.Name)
			}
		}
		if len(stranded) > 0 {
			slices.Sort(stranded)
			out = append(out, errorf("channel %q of package %q: stranded bundles, not reachable from the head by replaces nor skipped: %v", ch.Name, ch.Package, stranded))
		}
	}
	return out
}

func checkBundlePackages(c *Catalog) []Finding {
	var out []Finding
	for _, b := range c.Bundles {
		if !c.hasPackage(b.Package) {
			out = append(out, errorf("bundle %q names unknown package %q", b.Name, b.Package))
		}
	}
	return out
}

func checkBundlesUnique(c *Catalog) []Finding {
	return duplicates(c.Bundles, func(b catalog.Bundle) string { return b.Package + "/" + b.Name }, "bundle")
}

// packageProperties decodes a bundle's olm.package properties.
func packageProperties(b catalog.Bundle) ([]catalog.PackageProperty, error) {
	var out []catalog.PackageProperty
	for _, p := range b.Properties {
		if p.Type != catalog.PropertyPackage {
			continue
		}
		var value catalog.PackageProperty
		if err := json.Unmarshal(p.Value, &value); err != nil {
			return nil, fmt.Errorf("bundle %q: olm.package property: %w", b.Name, err)
		}
		out = append(out, value)
	}
	return out, nil
}

func checkPackageProperty(c *Catalog) []Finding {
	var out []Finding
	for _, b := range c.Bundles {
		properties, err := packageProperties(b)
		switch {
		case err != nil:
			out = append(out, errorf("%v", err))
		case len(properties) != 1:
			out = append(out, errorf("bundle %q has %d olm.package properties, want exactly one", b.Name, len(properties)))
		case properties[0].PackageName != b.Package:
			out = append(out, errorf("bundle %q of package %q has olm.package property of package %q", b.Name, b.Package, properties[0].PackageName))
		}
	}
	return out
}

// bundleVersion is a bundle's version and release, when it has one olm.package property
// that parses.
func bundleVersion(b catalog.Bundle) (semver.Version, string, error) {
	properties, err := packageProperties(b)
	if err != nil || len(properties) != 1 {
		return semver.Version{}, "", fmt.Errorf("no single olm.package property")
	}
	version, err := semver.Parse(properties[0].Version)
	return version, properties[0].Release, err
}

func checkBundleVersions(c *Catalog) []Finding {
	var out []Finding
	for _, b := range c.Bundles {
		properties, err := packageProperties(b)
		if err != nil || len(properties) != 1 {
			continue // fbc/bundle-package-property reports it
		}
		version, release, err := bundleVersion(b)
		switch {
		case err != nil:
			out = append(out, errorf("bundle %q: version %q: %v", b.Name, properties[0].Version, err))
		case release != "" && len(version.Build) > 0:
			out = append(out, errorf("bundle %q: version %q has build metadata and a release %q; use one or the other", b.Name, properties[0].Version, release))
		}
	}
	return out
}

func checkBundlesInChannels(c *Catalog) []Finding {
	var out []Finding
	for _, b := range c.Bundles {
		if !slices.ContainsFunc(c.Channels, func(ch catalog.Channel) bool {
			return ch.Package == b.Package && slices.ContainsFunc(ch.Entries, func(e catalog.ChannelEntry) bool { return e.Name == b.Name })
		}) {
			out = append(out, errorf("bundle %q of package %q is in no channel", b.Name, b.Package))
		}
	}
	return out
}

func checkBundleImages(c *Catalog) []Finding {
	var out []Finding
	for _, b := range c.Bundles {
		if b.Image == "" {
			// opm accepts no image only when the bundle's objects are inlined as properties.
			if !slices.ContainsFunc(b.Properties, func(p catalog.Property) bool { return p.Type == "olm.bundle.object" }) {
				out = append(out, errorf("bundle %q has no image", b.Name))
			}
			continue
		}
		if err := imageref.Validate(b.Image); err != nil {
			out = append(out, errorf("bundle %q: %v", b.Name, err))
		}
	}
	return out
}

func checkSkipRanges(c *Catalog) []Finding {
	var out []Finding
	for _, ch := range c.Channels {
		for _, e := range ch.Entries {
			if e.SkipRange == "" {
				continue
			}
			if _, err := semver.ParseRange(e.SkipRange); err != nil {
				out = append(out, errorf("channel %q, entry %q: skipRange %q: %v", ch.Name, e.Name, e.SkipRange, err))
			}
		}
	}
	return out
}

func checkSkips(c *Catalog) []Finding {
	var out []Finding
	for _, ch := range c.Channels {
		for _, e := range ch.Entries {
			for i, skip := range e.Skips {
				if skip == "" {
					out = append(out, errorf("channel %q, entry %q: skips[%d] is empty", ch.Name, e.Name, i))
				}
			}
		}
	}
	return out
}

func checkVersionsUnique(c *Catalog) []Finding {
	var out []Finding
	for i, a := range c.Bundles {
		versionA, releaseA, err := bundleVersion(a)
		if err != nil {
			continue
		}
		for _, b := range c.Bundles[i+1:] {
			versionB, releaseB, err := bundleVersion(b)
			// Compare ignores build metadata, as semver precedence does.
			if err == nil && a.Package == b.Package && a.Name != b.Name && versionA.Compare(versionB) == 0 && releaseA == releaseB {
				out = append(out, errorf("package %q: bundles %q and %q have the same version %s", a.Package, a.Name, b.Name, versionA))
			}
		}
	}
	return out
}

func checkDeprecationsUnique(c *Catalog) []Finding {
	return duplicates(c.Deprecations, func(d catalog.Deprecations) string { return d.Package }, "olm.deprecations of package")
}

func checkDeprecationReferences(c *Catalog) []Finding {
	var out []Finding
	for _, d := range c.Deprecations {
		if !c.hasPackage(d.Package) {
			out = append(out, errorf("olm.deprecations names unknown package %q", d.Package))
			continue
		}
		for i, e := range d.Entries {
			ref := e.Reference
			var found bool
			switch ref.Schema {
			case catalog.SchemaPackage:
				found = ref.Name == ""
			case catalog.SchemaChannel:
				found = slices.ContainsFunc(c.Channels, func(ch catalog.Channel) bool { return ch.Package == d.Package && ch.Name == ref.Name })
			case catalog.SchemaBundle:
				found = slices.ContainsFunc(c.Bundles, func(b catalog.Bundle) bool { return b.Package == d.Package && b.Name == ref.Name })
			}
			if !found {
				out = append(out, errorf("olm.deprecations of package %q, entry %d: no %s %q in the package", d.Package, i, ref.Schema, ref.Name))
			}
		}
	}
	return out
}

func checkDeprecationMessages(c *Catalog) []Finding {
	var out []Finding
	for _, d := range c.Deprecations {
		for i, e := range d.Entries {
			if strings.TrimSpace(e.Message) == "" {
				out = append(out, errorf("olm.deprecations of package %q, entry %d (%s %q) has no message", d.Package, i, e.Reference.Schema, e.Reference.Name))
			}
		}
	}
	return out
}

// duplicates reports each key that more than one item has.
func duplicates[T any](items []T, key func(T) string, what string) []Finding {
	var out []Finding
	seen := map[string]int{}
	for _, item := range items {
		k := key(item)
		seen[k]++
		if seen[k] == 2 {
			out = append(out, errorf("%s %q appears more than once", what, k))
		}
	}
	return out
}
