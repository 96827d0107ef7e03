// Package usertext bounds text that comes from users or from other systems (a config's
// fields, a ConfigMap's keys, an endpoint's address, a selector's labels) before it is
// quoted in a condition, an Event or an error: such text may be huge or hostile, and a
// status update carrying it must stay small enough for the API server to accept.
package usertext

import "strings"

// Cut is text cut to at most limit bytes, on a UTF-8 boundary, marked "..." when cut.
func Cut(text string, limit int) string {
	if len(text) <= limit {
		return text
	}
	return strings.ToValidUTF8(text[:limit], "") + "..."
}
