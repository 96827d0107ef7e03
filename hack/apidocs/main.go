// Command apidocs writes docs/api.md, the reference of the SecondaryScheduler API, from the
// CustomResourceDefinition that controller-gen generates from api/v1: the Go doc comments there
// are its descriptions and the kubebuilder markers its validation. Run it through `make docs`,
// after `make manifests`; never edit its output by hand. `make verify-clean` (CI) fails when the
// committed page is stale.
//
// The page lists the printer columns, then has one section per object of the schema (the
// resource, spec, spec.profile, ...), each with a table of its fields by path: type, whether
// required, default, what the API server accepts (enum, limits, pattern, format, the messages of
// x-kubernetes-validations rules) and the description. Nested objects link to their sections.
// sigs.k8s.io/yaml decodes properties into a map, which loses the order of the file, so fields are
// sorted by name (the order controller-gen writes them in), with spec before status.
package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// quantityPattern is the pattern controller-gen gives a resource.Quantity: such a value is
// documented as a quantity, without the pattern.
const quantityPattern = `^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`

// shortRule is the longest CEL rule shown beside its message; a longer one is left to the CRD.
const shortRule = 40

func main() {
	crdPath := flag.String("crd", "config/crd/bases/operator.secondary-scheduler.io_secondaryschedulers.yaml",
		"The CustomResourceDefinition to document.")
	outPath := flag.String("out", "docs/api.md", "The Markdown file to write.")
	flag.Parse()
	if err := run(*crdPath, *outPath); err != nil {
		fmt.Fprintln(os.Stderr, "apidocs:", err)
		os.Exit(1)
	}
}

// run reads the CRD at crdPath and writes its reference to outPath.
func run(crdPath, outPath string) error {
	data, err := os.ReadFile(crdPath)
	if err != nil {
		return err
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		return fmt.Errorf("decode %s: %w", crdPath, err)
	}
	// The page links to the CRD relative to where the page is.
	crdLink, err := filepath.Rel(filepath.Dir(outPath), crdPath)
	if err != nil {
		return fmt.Errorf("link %s from %s: %w", crdPath, outPath, err)
	}
	page, err := renderPage(&crd, filepath.ToSlash(crdLink))
	if err != nil {
		return fmt.Errorf("document %s: %w", crdPath, err)
	}
	return os.WriteFile(outPath, page, 0o644)
}

// renderPage returns the Markdown reference of crd, linking to the CRD's file at crdLink.
func renderPage(crd *apiextensionsv1.CustomResourceDefinition, crdLink string) ([]byte, error) {
	var versions []apiextensionsv1.CustomResourceDefinitionVersion
	for _, version := range crd.Spec.Versions {
		if version.Served {
			versions = append(versions, version)
		}
	}
	if len(versions) == 0 {
		return nil, errors.New("the CRD serves no version")
	}
	var b bytes.Buffer
	kind := crd.Spec.Names.Kind
	fmt.Fprintf(&b, "# %s API reference\n\n%s\n\n", kind, intro(crd, versions, crdLink))
	for _, version := range versions {
		if version.Schema == nil || version.Schema.OpenAPIV3Schema == nil {
			return nil, fmt.Errorf("version %s has no schema", version.Name)
		}
		level, anchorPrefix := "##", ""
		if len(versions) > 1 {
			fmt.Fprintf(&b, "## %s\n\n", crd.Spec.Group+"/"+version.Name)
			level, anchorPrefix = "###", version.Name+"-"
		}
		doc := newSchemaDoc(kind, anchorPrefix, version.Schema.OpenAPIV3Schema)
		doc.writePrinterColumns(&b, level, crd.Spec.Names.Plural, version.AdditionalPrinterColumns)
		fmt.Fprintf(&b, "%s Fields\n\n", level)
		doc.writeContents(&b)
		for _, section := range doc.sections {
			doc.writeSection(&b, level+"#", section)
		}
	}
	return append(bytes.TrimRight(b.Bytes(), "\n"), '\n'), nil
}

// intro is the page's opening paragraph: what it documents, and where it comes from.
func intro(crd *apiextensionsv1.CustomResourceDefinition, versions []apiextensionsv1.CustomResourceDefinitionVersion,
	crdLink string) string {
	apiVersions := make([]string, 0, len(versions))
	for _, version := range versions {
		apiVersions = append(apiVersions, prose.code(crd.Spec.Group+"/"+version.Name))
	}
	facts := []string{strings.Join(apiVersions, ", "), strings.ToLower(string(crd.Spec.Scope))}
	if names := crd.Spec.Names.ShortNames; len(names) > 0 {
		facts = append(facts, "short names "+prose.codeList(names, "and"))
	}
	if categories := crd.Spec.Names.Categories; len(categories) > 0 {
		facts = append(facts, "categories "+prose.codeList(categories, "and"))
	}
	return fmt.Sprintf("Every field of the %s resource (%s): its type, whether it is required, its default, "+
		"the values the API server accepts and what it means, with the columns `kubectl get` shows. "+
		"Generated by `make docs` from the CRD ([%s](%s)); do not edit: the descriptions are the Go doc comments "+
		"of api/v1 and the validation comes from its kubebuilder markers, so change those, then run "+
		"`make manifests docs`.",
		prose.code(crd.Spec.Names.Kind), strings.Join(facts, "; "), prose.code(filepath.Base(crdLink)), crdLink)
}

// writePrinterColumns writes the table of the columns `kubectl get` shows.
func (d *schemaDoc) writePrinterColumns(b *bytes.Buffer, level, plural string,
	columns []apiextensionsv1.CustomResourceColumnDefinition) {
	if len(columns) == 0 {
		return
	}
	fmt.Fprintf(b, "%s Printer columns\n\n`kubectl get %s` shows these columns, those marked wide only with `-o wide`.\n\n",
		level, plural)
	b.WriteString("| Column | Type | JSONPath | Shown | Description |\n| --- | --- | --- | --- | --- |\n")
	for _, column := range columns {
		shown := "always"
		if column.Priority > 0 {
			shown = "wide"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", tableCell.escape(column.Name), column.Type,
			tableCell.code(column.JSONPath), shown, d.columnDescription(column))
	}
	b.WriteString("\n")
}

// conditionColumn matches the JSONPath of a column that shows a field of one condition.
var conditionColumn = regexp.MustCompile(`^\.status\.conditions\[\?\(@\.type=="([A-Za-z0-9]+)"\)\]\.([A-Za-z]+)$`)

// fieldColumn matches the JSONPath of a column that shows one field.
var fieldColumn = regexp.MustCompile(`^(\.[A-Za-z0-9]+)+$`)

// columnDescription is a column's own description or, without one, the description of the field it
// shows.
func (d *schemaDoc) columnDescription(column apiextensionsv1.CustomResourceColumnDefinition) string {
	if column.Description != "" {
		return markdown(column.Description, tableCell)
	}
	if match := conditionColumn.FindStringSubmatch(column.JSONPath); match != nil {
		return fmt.Sprintf("The %s of condition %s.", tableCell.code(match[2]), tableCell.code(match[1]))
	}
	if !fieldColumn.MatchString(column.JSONPath) {
		return ""
	}
	s := d.root
	for _, name := range strings.Split(strings.TrimPrefix(column.JSONPath, "."), ".") {
		field, ok := s.Properties[name]
		if !ok {
			return ""
		}
		s = &field
	}
	return markdown(s.Description, tableCell)
}

// writeContents writes the sections as a nested list of links, each named by its path from its
// parent.
func (d *schemaDoc) writeContents(b *bytes.Buffer) {
	depth := map[string]int{}
	for _, section := range d.sections {
		name := d.title(section.path)
		if section.path != "" {
			depth[section.path] = depth[section.parent] + 1
			name = strings.TrimPrefix(section.path, section.parent+".")
		}
		fmt.Fprintf(b, "%s- [%s](#%s)\n", strings.Repeat("  ", depth[section.path]), prose.code(name),
			d.anchors[section.path])
	}
	b.WriteString("\n")
}

// objectSection is an object of the schema that has fields: one section of the page.
type objectSection struct {
	// path is where the object sits, such as spec.extenders[].tls; empty for the resource itself.
	path string
	// parent is the path of the section whose table lists the object.
	parent string
	schema *apiextensionsv1.JSONSchemaProps
}

// schemaDoc is the documentation of one version's schema: its sections, in page order, and
// their anchors.
type schemaDoc struct {
	kind     string
	root     *apiextensionsv1.JSONSchemaProps
	sections []objectSection
	anchors  map[string]string
}

// newSchemaDoc collects the sections of root depth first, fields in fieldNames order, and gives
// each an anchor unique on the page (anchorPrefix tells versions apart).
func newSchemaDoc(kind, anchorPrefix string, root *apiextensionsv1.JSONSchemaProps) *schemaDoc {
	doc := &schemaDoc{kind: kind, root: root, anchors: map[string]string{}}
	doc.collect("", "", root)
	taken := map[string]bool{}
	for _, section := range doc.sections {
		base := anchorPrefix + anchorOf(cmp.Or(section.path, kind))
		anchor := base
		for n := 2; taken[anchor]; n++ {
			anchor = fmt.Sprintf("%s-%d", base, n)
		}
		taken[anchor] = true
		doc.anchors[section.path] = anchor
	}
	return doc
}

// collect appends the sections of the object at path, and of every object under it.
func (d *schemaDoc) collect(path, parent string, s *apiextensionsv1.JSONSchemaProps) {
	switch {
	case len(s.Properties) > 0:
		d.sections = append(d.sections, objectSection{path: path, parent: parent, schema: s})
		for _, name := range fieldNames(s, path == "") {
			field := s.Properties[name]
			d.collect(joinPath(path, name), path, &field)
		}
	case s.Items != nil && s.Items.Schema != nil:
		d.collect(path+"[]", parent, s.Items.Schema)
	case s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
		d.collect(path+".*", parent, s.AdditionalProperties.Schema)
	}
}

// writeSection writes one object's heading, description, rules and table of fields.
func (d *schemaDoc) writeSection(b *bytes.Buffer, level string, section objectSection) {
	s := section.schema
	fmt.Fprintf(b, "<a id=\"%s\"></a>\n\n%s %s\n\n", d.anchors[section.path], level, prose.code(d.title(section.path)))
	if section.path != "" {
		fmt.Fprintf(b, "In [%s](#%s).\n\n", prose.code(d.title(section.parent)), d.anchors[section.parent])
	}
	if s.Description != "" {
		fmt.Fprintf(b, "%s\n\n", markdown(s.Description, prose))
	}
	if rules := ruleLines(s.XValidations, prose); len(rules) > 0 {
		b.WriteString("Validation rules of this object:\n\n")
		for _, rule := range rules {
			fmt.Fprintf(b, "- %s\n", rule)
		}
		b.WriteString("\n")
	}
	if limits := valueLimits(s, prose); len(limits) > 0 {
		fmt.Fprintf(b, "Limits of this object: %s.\n\n", strings.Join(limits, "; "))
	}
	b.WriteString("| Field | Type | Required | Default | Validation | Description |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- |\n")
	for _, name := range fieldNames(s, section.path == "") {
		field := s.Properties[name]
		path := joinPath(section.path, name)
		required := ""
		if slices.Contains(s.Required, name) {
			required = "yes"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", tableCell.code(path), d.typeText(path, &field), required,
			defaultText(field.Default), strings.Join(d.validation(path, &field), "<br>"), markdown(field.Description, tableCell))
	}
	b.WriteString("\n")
}

// title is how the page names the object at path.
func (d *schemaDoc) title(path string) string {
	return cmp.Or(path, d.kind)
}

// typeText is the type of the value at path, linking an object with fields to its section.
func (d *schemaDoc) typeText(path string, s *apiextensionsv1.JSONSchemaProps) string {
	switch {
	case s.XIntOrString && s.Pattern == quantityPattern:
		return "quantity"
	case s.XIntOrString:
		return "int-or-string"
	case len(s.Properties) > 0:
		return fmt.Sprintf("[object](#%s)", d.anchors[path])
	case s.Items != nil && s.Items.Schema != nil:
		return "array of " + d.typeText(path+"[]", s.Items.Schema)
	case s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
		return "map of " + d.typeText(path+".*", s.AdditionalProperties.Schema)
	case s.AdditionalProperties != nil && s.AdditionalProperties.Allows:
		return "map"
	case s.XEmbeddedResource:
		return "object (a Kubernetes object)"
	case s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields:
		return "object (any fields)"
	case s.Type == "":
		return "any"
	case s.Format != "":
		return fmt.Sprintf("%s (%s)", s.Type, s.Format)
	}
	return s.Type
}

// validation lists what the API server accepts at path: the value's limits, those of its
// items or map values, and the rules that sit on it when it has no section to list them.
func (d *schemaDoc) validation(path string, s *apiextensionsv1.JSONSchemaProps) []string {
	lines := valueLimits(s, tableCell)
	if _, ownSection := d.anchors[path]; !ownSection {
		for _, rule := range ruleLines(s.XValidations, tableCell) {
			lines = append(lines, "rule: "+rule)
		}
	}
	switch {
	case s.Items != nil && s.Items.Schema != nil:
		lines = append(lines, prefixEach("each item: ", d.validation(path+"[]", s.Items.Schema))...)
	case s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
		lines = append(lines, prefixEach("each value: ", d.validation(path+".*", s.AdditionalProperties.Schema))...)
	}
	return lines
}

// valueLimits lists the limits of one value beyond its type: enum, ranges, pattern, list type.
func valueLimits(s *apiextensionsv1.JSONSchemaProps, style textStyle) []string {
	var lines []string
	if len(s.Enum) > 0 {
		values := make([]string, 0, len(s.Enum))
		for _, value := range s.Enum {
			values = append(values, jsonText(value.Raw))
		}
		lines = append(lines, "one of "+style.codeList(values, "or"))
	}
	lines = appendNonEmpty(lines,
		bounds("value", s.Minimum, s.Maximum, s.ExclusiveMinimum, s.ExclusiveMaximum),
		bounds("length", floatOf(s.MinLength), floatOf(s.MaxLength), false, false),
		bounds("items", floatOf(s.MinItems), floatOf(s.MaxItems), false, false),
		bounds("entries", floatOf(s.MinProperties), floatOf(s.MaxProperties), false, false))
	if s.MultipleOf != nil {
		lines = append(lines, "multiple of "+number(*s.MultipleOf))
	}
	if isQuantity := s.XIntOrString && s.Pattern == quantityPattern; s.Pattern != "" && !isQuantity {
		lines = append(lines, "pattern "+style.code(s.Pattern))
	}
	switch {
	case s.XListType != nil && *s.XListType == "map":
		lines = append(lines, "unique by "+style.codeList(s.XListMapKeys, "and"))
	case s.UniqueItems || (s.XListType != nil && *s.XListType == "set"):
		lines = append(lines, "unique items")
	}
	return lines
}

// bounds says which values of name lie between lower and upper, either of which may be nil.
func bounds(name string, lower, upper *float64, exclusiveLower, exclusiveUpper bool) string {
	below := func(exclusive bool) string {
		if exclusive {
			return "<"
		}
		return "≤"
	}
	switch {
	case lower != nil && upper != nil:
		return fmt.Sprintf("%s %s %s %s %s", number(*lower), below(exclusiveLower), name, below(exclusiveUpper), number(*upper))
	case lower != nil:
		return fmt.Sprintf("%s %s %s", number(*lower), below(exclusiveLower), name)
	case upper != nil:
		return fmt.Sprintf("%s %s %s", name, below(exclusiveUpper), number(*upper))
	}
	return ""
}

// ruleLines says what each x-kubernetes-validations rule requires: its message, with the CEL
// rule itself when it is short or the message is computed.
func ruleLines(rules apiextensionsv1.ValidationRules, style textStyle) []string {
	lines := make([]string, 0, len(rules))
	for _, rule := range rules {
		switch {
		case rule.Message == "" && rule.MessageExpression == "":
			lines = append(lines, style.code(rule.Rule))
		case rule.Message == "":
			lines = append(lines, fmt.Sprintf("%s (message: %s)", style.code(rule.Rule), style.code(rule.MessageExpression)))
		case len(rule.Rule) <= shortRule:
			lines = append(lines, fmt.Sprintf("%s (%s)", markdown(rule.Message, style), style.code(rule.Rule)))
		default:
			lines = append(lines, markdown(rule.Message, style))
		}
	}
	return lines
}

// defaultText is a default value as code: a string as it is, anything else as JSON.
func defaultText(value *apiextensionsv1.JSON) string {
	if value == nil {
		return ""
	}
	return tableCell.code(jsonText(value.Raw))
}

// jsonText is a JSON value as a reader writes it in YAML: a non-empty string without quotes,
// anything else as compact JSON.
func jsonText(raw []byte) string {
	var text string
	if err := json.Unmarshal(raw, &text); err == nil && text != "" {
		return text
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return string(raw)
	}
	return compact.String()
}

// fieldNames are the names of the fields of s, sorted; at the top level, spec and status come last,
// in that order.
func fieldNames(s *apiextensionsv1.JSONSchemaProps, topLevel bool) []string {
	names := slices.Sorted(maps.Keys(s.Properties))
	if topLevel {
		rank := map[string]int{"spec": 1, "status": 2}
		slices.SortStableFunc(names, func(a, b string) int { return cmp.Compare(rank[a], rank[b]) })
	}
	return names
}

// joinPath is the path of field name of the object at path.
func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// nonAnchor matches what an anchor does not keep of a path.
var nonAnchor = regexp.MustCompile(`[^a-z0-9]+`)

// anchorOf is the anchor of a path: lower case, each run of other characters one hyphen, so
// that spec.extenders[].tls becomes spec-extenders-tls.
func anchorOf(path string) string {
	return strings.Trim(nonAnchor.ReplaceAllString(strings.ToLower(path), "-"), "-")
}

// textStyle is where Markdown text goes: a table cell is one line.
type textStyle int

const (
	prose textStyle = iota
	tableCell
)

// listItem matches a line of a description that starts an item of a list.
var listItem = regexp.MustCompile(`^([-*+]|[0-9]+[.)]) `)

// markdown renders a description, a Go doc comment, as Markdown: paragraphs are kept, the lines
// of a paragraph joined but for those that start a list item, and what Markdown would read as
// markup (|, <, >, *, \) is escaped outside code spans. In a table cell, line breaks are <br>.
func markdown(description string, style textStyle) string {
	lineBreak, paragraphBreak := "\n", "\n\n"
	if style == tableCell {
		lineBreak, paragraphBreak = "<br>", "<br><br>"
	}
	var paragraphs []string
	for _, paragraph := range strings.Split(strings.TrimSpace(description), "\n\n") {
		// A paragraph's lines, joined into one line per list item (and one before the first).
		var items []string
		for i, line := range strings.Split(strings.TrimSpace(paragraph), "\n") {
			line = strings.TrimSpace(line)
			if i == 0 || listItem.MatchString(line) {
				items = append(items, line)
			} else {
				items[len(items)-1] += " " + line
			}
		}
		for i, item := range items {
			items[i] = style.escape(item)
		}
		if text := strings.Join(items, lineBreak); text != "" {
			paragraphs = append(paragraphs, text)
		}
	}
	return strings.Join(paragraphs, paragraphBreak)
}

// markupEscapes escapes outside code spans what Markdown or HTML would read as markup.
var markupEscapes = strings.NewReplacer(`\`, `\\`, "|", `\|`, "<", "&lt;", ">", "&gt;", "*", `\*`, "`", "\\`")

// escape escapes text for Markdown, keeping its code spans.
func (style textStyle) escape(text string) string {
	parts := strings.Split(text, "`")
	if len(parts)%2 == 0 {
		// An unpaired backtick opens no code span: escape them all.
		return markupEscapes.Replace(text)
	}
	for i, part := range parts {
		if i%2 == 0 {
			parts[i] = markupEscapes.Replace(part)
		} else {
			parts[i] = style.code(part)
		}
	}
	return strings.Join(parts, "")
}

// code is text as a code span on one line; in a table cell, its pipes are escaped (GFM reads
// \| there even inside a code span, and nowhere else).
func (style textStyle) code(text string) string {
	text = strings.Join(strings.Fields(text), " ")
	if style == tableCell {
		text = strings.ReplaceAll(text, "|", `\|`)
	}
	if strings.Contains(text, "`") {
		return "`` " + text + " ``"
	}
	return "`" + text + "`"
}

// codeList is values as code spans, the last two joined by conjunction.
func (style textStyle) codeList(values []string, conjunction string) string {
	spans := make([]string, 0, len(values))
	for _, value := range values {
		spans = append(spans, style.code(value))
	}
	if len(spans) < 2 {
		return strings.Join(spans, "")
	}
	return strings.Join(spans[:len(spans)-1], ", ") + " " + conjunction + " " + spans[len(spans)-1]
}

// prefixEach returns lines with prefix put before each.
func prefixEach(prefix string, lines []string) []string {
	prefixed := make([]string, 0, len(lines))
	for _, line := range lines {
		prefixed = append(prefixed, prefix+line)
	}
	return prefixed
}

// appendNonEmpty appends the lines that are not empty.
func appendNonEmpty(lines []string, more ...string) []string {
	for _, line := range more {
		if line != "" {
			lines = append(lines, line)
		}
	}
	return lines
}

// floatOf is a count as a float, nil when unset.
func floatOf(count *int64) *float64 {
	if count == nil {
		return nil
	}
	value := float64(*count)
	return &value
}

// number is a bound as a reader writes it: 100, not 1e+02.
func number(value float64) string {
	return strconv.FormatFloat(value, 'f', -1, 64)
}
