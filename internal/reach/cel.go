package reach

import (
	"fmt"
	"strings"
)

// Offending is a CEL expression, over the admitted object, of the values at the sink's
// path that acceptable (a CEL expression over the string variable value) rejects, joined
// by ", ": empty when every value is acceptable. Unset fields and empty strings hold no
// value. Lists of any depth are followed with map and join, so that it needs no CEL
// library newer than the admission policies themselves.
func (s Sink) Offending(acceptable string) string {
	return offending("object.spec", s.Path, acceptable, 0)
}

func offending(base string, path []Segment, acceptable string, depth int) string {
	access := base
	for i, segment := range path {
		access += ".?" + segment.Field
		if segment.List {
			element := fmt.Sprintf("x%d", depth)
			return access + ".orValue([]).map(" + element + ", " + offending(element, path[i+1:], acceptable, depth+1) +
				").filter(found, found != '').join(', ')"
		}
	}
	if len(path) > 0 {
		access += ".orValue('')"
	}
	return "[" + access + "].filter(value, value != '' && !(" + acceptable + ")).join(', ')"
}

// VariableName is a CEL identifier for the sink: offending_ and its path's fields.
func (s Sink) VariableName() string {
	fields := make([]string, 0, len(s.Path))
	for _, segment := range s.Path {
		fields = append(fields, segment.Field)
	}
	return "offending_" + strings.Join(fields, "_")
}
