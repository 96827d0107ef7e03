package drift

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Path is where a field is in an object, as users write it: spec.replicas,
// spec.template.spec.containers[name=kube-scheduler].image,
// metadata.labels["app.kubernetes.io/name"]. An item of a list whose items have names is
// addressed by its name, any other by its index.
type Path []Step

// Step is one step of a Path: a key of a map, or an item of a list.
type Step struct {
	// Key is the key of a map, when the step is into a map.
	Key string
	// Name is the name of a list's item, when the step is into a list of named items.
	Name string
	// Index is the index of a list's item, when the step is into another list; -1 otherwise.
	Index int
}

func (p Path) key(key string) Path { return append(slices.Clip(p), Step{Key: key, Index: -1}) }
func (p Path) named(name string) Path {
	return append(slices.Clip(p), Step{Name: name, Index: -1})
}
func (p Path) index(i int) Path { return append(slices.Clip(p), Step{Index: i}) }

// identifier is a map key written after a dot; any other is quoted in brackets.
var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// String is the path as users read it.
func (p Path) String() string {
	var out strings.Builder
	for i, step := range p {
		switch {
		case step.Name != "":
			fmt.Fprintf(&out, "[name=%s]", step.Name)
		case step.Index >= 0:
			fmt.Fprintf(&out, "[%d]", step.Index)
		case identifier.MatchString(step.Key):
			if i > 0 {
				out.WriteByte('.')
			}
			out.WriteString(step.Key)
		default:
			out.WriteString("[" + strconv.Quote(step.Key) + "]")
		}
	}
	return out.String()
}

// Change is a field where an object in the cluster no longer holds what the operator
// sets.
type Change struct {
	Path Path
	// Live is the value in the cluster, Desired the operator's; each nil when absent.
	Live, Desired any
	// Editor is the field manager that set the live value, "" when unknown (a field
	// removed has no manager).
	Editor string
}

// Changes are the fields where live no longer holds what desired sets, as Holds judges
// them: in the order of desired's fields (map keys sorted, list items in order), then the
// items live has more. It returns the first limit of them, and how many more there are.
// Holds(live, desired) is false exactly when there is at least one.
func Changes(live, desired map[string]any, limit int) (changes []Change, more int) {
	found := &changeList{limit: limit}
	found.walk(nil, live, desired)
	return found.changes, found.more
}

type changeList struct {
	limit   int
	changes []Change
	more    int
}

func (c *changeList) add(path Path, live, desired any) {
	if len(c.changes) == c.limit {
		c.more++
		return
	}
	c.changes = append(c.changes, Change{Path: path, Live: live, Desired: desired})
}

func (c *changeList) walk(path Path, live, desired any) {
	switch want := desired.(type) {
	case nil:
		return
	case map[string]any:
		have, ok := live.(map[string]any)
		if !ok {
			if !Holds(live, desired) {
				c.add(path, live, desired)
			}
			return
		}
		for _, key := range sortedKeys(want) {
			value := want[key]
			liveValue, present := have[key]
			if !present {
				if !empty(value) {
					c.add(path.key(key), nil, value)
				}
				continue
			}
			c.walk(path.key(key), liveValue, value)
		}
	case []any:
		have, ok := live.([]any)
		if !ok {
			if !Holds(live, desired) {
				c.add(path, live, desired)
			}
			return
		}
		c.walkList(path, have, want)
	default:
		if !Holds(live, desired) {
			c.add(path, live, desired)
		}
	}
}

// walkList compares a list's items by name when every item of both has one of its own,
// else by index when both have as many items; else the list is one change.
func (c *changeList) walkList(path Path, have, want []any) {
	wantNames, namedWant := itemNames(want)
	haveNames, namedHave := itemNames(have)
	switch {
	case namedWant && namedHave:
		before := len(c.changes) + c.more
		for i, item := range want {
			if j := slices.Index(haveNames, wantNames[i]); j >= 0 {
				c.walk(path.named(wantNames[i]), have[j], item)
			} else {
				c.add(path.named(wantNames[i]), nil, item)
			}
		}
		for j, item := range have {
			if !slices.Contains(wantNames, haveNames[j]) {
				c.add(path.named(haveNames[j]), item, nil)
			}
		}
		if len(c.changes)+c.more == before && !Holds(have, want) {
			c.add(path, have, want) // the same items in another order
		}
	case len(have) == len(want):
		for i := range want {
			c.walk(path.index(i), have[i], want[i])
		}
	default:
		c.add(path, have, want)
	}
}

// itemNames are the names of a list's items, when each is a map with a name of its own.
func itemNames(items []any) ([]string, bool) {
	names := make([]string, 0, len(items))
	for _, item := range items {
		fields, _ := item.(map[string]any)
		name, _ := fields["name"].(string)
		if name == "" || slices.Contains(names, name) {
			return nil, false
		}
		names = append(names, name)
	}
	return names, true
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	return keys
}

// maxValueLength bounds a value as Short writes it.
const maxValueLength = 64

// Short is value in a short form for a message: a number, a boolean or a one-line string
// as it is (a string quoted, cut at maxValueLength), a text of several lines by its
// length, a map by its size, a list of named items by their names; "(none)" for nil.
func Short(value any) string {
	switch v := value.(type) {
	case nil:
		return "(none)"
	case string:
		if strings.Contains(v, "\n") {
			return fmt.Sprintf("(a text of %d lines)", strings.Count(strings.TrimSuffix(v, "\n"), "\n")+1)
		}
		if len(v) > maxValueLength {
			return strconv.Quote(strings.ToValidUTF8(v[:maxValueLength], "")) + "…"
		}
		return strconv.Quote(v)
	case map[string]any:
		return fmt.Sprintf("(%d fields)", len(v))
	case []any:
		if names, ok := itemNames(v); ok && len(v) > 0 {
			list := strings.Join(names, " ")
			if len(list) > maxValueLength {
				list = strings.ToValidUTF8(list[:maxValueLength], "") + "…"
			}
			return "[" + list + "]"
		}
		return fmt.Sprintf("(%d items)", len(v))
	}
	if n, ok := number(value); ok {
		return strconv.FormatFloat(n, 'g', -1, 64)
	}
	return fmt.Sprint(value)
}
