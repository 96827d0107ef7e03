package schedconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	schedulerconfigv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/usertext"
)

// maxArgsProblems bounds the problems argsProblems finds in one plugin's args.
const maxArgsProblems = 5

// argsProblems are the problems kube-scheduler's strict decoding would find in the args of
// the plugins whose args types table knows (scheduler-plugins' own, generated from their
// sources by hack/pluginpoints): a field the type lacks (with the nearest it has), a value
// of another kind. scheduler-plugins' kube-scheduler decodes the args of every pluginConfig
// entry at start, enabled or not, and refuses to start at the first such problem.
func (p *effectiveProfile) argsProblems(configs []schedulerconfigv1.PluginConfig) []string {
	var problems []string
	for _, config := range configs {
		fields, ok := p.table.args[config.Name]
		if !ok {
			continue
		}
		raw := config.Args.Raw
		if len(raw) == 0 && config.Args.Object != nil {
			encoded, err := json.Marshal(config.Args.Object)
			if err != nil {
				problems = append(problems, fmt.Sprintf("the args of plugin %s cannot be read: %v", config.Name, err))
				continue
			}
			raw = encoded
		}
		found := argsChecker{plugin: config.Name, fields: fields}
		found.check(raw)
		problems = append(problems, found.problems...)
	}
	return problems
}

// argsChecker checks one plugin's args against the fields of its args type.
type argsChecker struct {
	plugin   string
	fields   map[string]string
	problems []string
}

func (c *argsChecker) problem(format string, args ...any) {
	if len(c.problems) < maxArgsProblems {
		c.problems = append(c.problems, fmt.Sprintf(format, args...))
	}
}

func (c *argsChecker) check(raw []byte) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return
	}
	decoder := json.NewDecoder(bytes.NewReader(trimmed))
	decoder.UseNumber()
	var value any
	if err := decoder.Decode(&value); err != nil {
		c.problem("the args of plugin %s are not an object kube-scheduler can decode: %v", c.plugin, err)
		return
	}
	c.object("", value)
}

// object checks value, the object at path prefix ("" for the args themselves).
func (c *argsChecker) object(prefix string, value any) {
	mapping, ok := value.(map[string]any)
	if !ok {
		where := "the args"
		if prefix != "" {
			where = "field " + strings.TrimSuffix(prefix, ".")
		}
		c.problem("%s of plugin %s must be an object, not %s", where, c.plugin, jsonKindOf(value))
		return
	}
	for _, name := range slices.Sorted(maps.Keys(mapping)) {
		path := prefix + name
		kind, ok := c.fields[path]
		if !ok {
			hint := ""
			if nearest := usertext.Nearest(name, c.siblings(prefix)); nearest != "" {
				hint = fmt.Sprintf(" (did you mean %s?)", nearest)
			}
			c.problem("the args of plugin %s have no field %s%s: kube-scheduler's strict decoding refuses unknown fields, and field names are case-sensitive",
				c.plugin, usertext.Cut(path, 100), hint)
			continue
		}
		c.value(path, kind, mapping[name])
	}
}

// value checks a field's value against its kind.
func (c *argsChecker) value(path, kind string, value any) {
	if value == nil {
		return // null leaves a field at its default
	}
	switch kind {
	case kindAny:
	case kindMap:
		if _, ok := value.(map[string]any); !ok {
			c.problem("field %s of the args of plugin %s must be a mapping, not %s", path, c.plugin, jsonKindOf(value))
		}
	case kindObject:
		c.object(path+".", value)
	case kindList:
		items, ok := value.([]any)
		if !ok {
			c.problem("field %s of the args of plugin %s must be a list, not %s", path, c.plugin, jsonKindOf(value))
			return
		}
		if !c.hasItemFields(path) {
			return // a list of scalars
		}
		for _, item := range items {
			c.object(path+"[].", item)
		}
	default:
		if got := jsonKindOf(value); !kindAccepts(kind, value) {
			c.problem("field %s of the args of plugin %s must be %s, not %s", path, c.plugin, articled(kind), got)
		}
	}
}

// hasItemFields reports whether the items of the list at path are structs with fields.
func (c *argsChecker) hasItemFields(path string) bool {
	for field := range c.fields {
		if strings.HasPrefix(field, path+"[].") {
			return true
		}
	}
	return false
}

// siblings are the field names directly under prefix.
func (c *argsChecker) siblings(prefix string) []string {
	var names []string
	for path := range c.fields {
		if rest, ok := strings.CutPrefix(path, prefix); ok && !strings.ContainsAny(rest, ".[") {
			names = append(names, rest)
		}
	}
	return names
}

// The kinds of args fields in the generated tables (hack/pluginpoints).
const (
	kindString  = "string"
	kindInteger = "integer"
	kindNumber  = "number"
	kindBool    = "bool"
	kindObject  = "object"
	kindList    = "list"
	kindMap     = "map"
	kindAny     = "any"
)

// kindAccepts reports whether value, decoded with json.Number, is of a scalar kind.
func kindAccepts(kind string, value any) bool {
	switch kind {
	case kindString:
		_, ok := value.(string)
		return ok
	case kindBool:
		_, ok := value.(bool)
		return ok
	case kindNumber:
		_, ok := value.(json.Number)
		return ok
	case kindInteger:
		number, ok := value.(json.Number)
		if !ok {
			return false
		}
		_, err := number.Int64()
		return err == nil
	}
	return true
}

func articled(kind string) string {
	if kind == kindInteger {
		return "an integer"
	}
	return "a " + kind
}

// jsonKindOf names the kind of a decoded JSON value for a message.
func jsonKindOf(value any) string {
	switch value := value.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		if _, err := value.Int64(); err == nil {
			return "an integer"
		}
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", value)
}
