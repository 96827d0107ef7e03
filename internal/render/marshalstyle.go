package render

import (
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// sigs.k8s.io/yaml.Marshal writes YAML with go.yaml.in/yaml/v2, and yaml.Parse gives each
// node of that text the style it was written in; kyaml writes the node in that style again
// when it serializes the configuration or the pod template, which are hashed. valueNode
// builds the nodes without the text, so the functions here decide what go.yaml.in/yaml/v2
// decides: the style of each string, and the order of each mapping's keys. They handle
// the strings valueNode builds nodes for: printable ASCII, line feeds and tabs
// (isMarshallableDirectly); valueNode leaves any other string to the text.

// isMarshallableDirectly reports whether valueNode builds the node of the string s
// itself. Other characters change on the way through JSON and YAML 1.1 (invalid UTF-8,
// next line, control characters), or make go.yaml.in/yaml/v2 refuse the JSON text.
func isMarshallableDirectly(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < ' ' || c > '~') && c != '\n' && c != '\t' {
			return false
		}
	}
	return true
}

// marshalledStyle is the style that sigs.k8s.io/yaml.Marshal writes the string s in, so
// the style yaml.Parse gives its node. go.yaml.in/yaml/v2 asks for a literal block when s
// has a line feed, for plain text when YAML 1.1 reads s back as a string, else for double
// quotes; its emitter then falls back from plain text to single quotes, and from single
// quotes or a literal block to double quotes, where s cannot be written so. A mapping key
// takes the same style: the emitter treats a key apart only when it is empty (YAML 1.1
// reads that as null, so it is quoted anyway) or has a line feed (then it is no simple
// key, and is written like a value). s must be isMarshallableDirectly.
func marshalledStyle(s string) yaml.Style {
	scalar := analyzeASCIIScalar(s)
	switch {
	case strings.Contains(s, "\n"):
		if scalar.blockAllowed {
			return yaml.LiteralStyle
		}
	case yaml11PlainTag(s) == strTag && !isYAML11Base60Float(s): // "" is null
		if scalar.blockPlainAllowed {
			return 0
		}
		if scalar.singleQuotedAllowed {
			return yaml.SingleQuotedStyle
		}
	}
	return yaml.DoubleQuotedStyle
}

// asciiScalarAnalysis is what go.yaml.in/yaml/v2's emitter finds out about a scalar in
// block context before choosing its style (yaml_emitter_analyze_scalar).
type asciiScalarAnalysis struct {
	blockPlainAllowed   bool
	singleQuotedAllowed bool
	blockAllowed        bool
}

// analyzeASCIIScalar is go.yaml.in/yaml/v2's yaml_emitter_analyze_scalar for the strings
// of isMarshallableDirectly, in block context: only the line feed breaks a line there, and
// only the tab is not printable.
func analyzeASCIIScalar(s string) asciiScalarAnalysis {
	if s == "" {
		return asciiScalarAnalysis{blockPlainAllowed: true, singleQuotedAllowed: true}
	}
	spaces := analyzeASCIISpaces(s)
	special := strings.Contains(s, "\t")
	notPlain := spaces.leadingSpace || spaces.leadingBreak || spaces.trailingSpace || spaces.trailingBreak ||
		spaces.breakSpace || spaces.spaceBreak || special || spaces.lineBreaks || hasASCIIBlockIndicator(s)
	notSingleQuoted := spaces.breakSpace || spaces.spaceBreak || special
	notBlock := spaces.trailingSpace || spaces.spaceBreak || special
	return asciiScalarAnalysis{blockPlainAllowed: !notPlain, singleQuotedAllowed: !notSingleQuoted, blockAllowed: !notBlock}
}

// asciiSpaces is where a scalar has spaces and line feeds, as yaml_emitter_analyze_scalar
// finds them: a space before a line feed (spaceBreak) or after one (breakSpace) changes
// when the text is read back.
type asciiSpaces struct {
	lineBreaks, leadingSpace, leadingBreak, trailingSpace, trailingBreak, breakSpace, spaceBreak bool
}

// analyzeASCIISpaces finds the spaces and line feeds of s.
func analyzeASCIISpaces(s string) asciiSpaces {
	var found asciiSpaces
	previousSpace, previousBreak := false, false
	for i := 0; i < len(s); i++ {
		last := i == len(s)-1
		switch s[i] {
		case ' ':
			found.leadingSpace = found.leadingSpace || i == 0
			found.trailingSpace = last
			found.breakSpace = found.breakSpace || previousBreak
			previousSpace, previousBreak = true, false
		case '\n':
			found.lineBreaks = true
			found.leadingBreak = found.leadingBreak || i == 0
			found.trailingBreak = last
			found.spaceBreak = found.spaceBreak || previousSpace
			previousSpace, previousBreak = false, true
		default:
			previousSpace, previousBreak = false, false
		}
	}
	return found
}

// hasASCIIBlockIndicator reports whether s has an indicator that keeps it from being
// written plain in block context: a document marker or an indicator character at its
// start, "- ", "? " or ": " there, ": " or " #" anywhere.
func hasASCIIBlockIndicator(s string) bool {
	if strings.HasPrefix(s, "---") || strings.HasPrefix(s, "...") || strings.IndexByte("#,[]{}&*!|>'\"%@`", s[0]) >= 0 {
		return true
	}
	for i := 0; i < len(s); i++ {
		followedByWhitespace := i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\t'
		precededByWhitespace := i == 0 || s[i-1] == ' ' || s[i-1] == '\t' || s[i-1] == '\n'
		switch {
		case i == 0 && (s[i] == '?' || s[i] == '-') && followedByWhitespace:
			return true
		case s[i] == ':' && followedByWhitespace:
			return true
		case i > 0 && s[i] == '#' && precededByWhitespace:
			return true
		}
	}
	return false
}

// compareMarshalledKeys orders mapping keys as sigs.k8s.io/yaml.Marshal writes them:
// go.yaml.in/yaml/v2 sorts them in its own "natural" order, in which a run of digits
// compares by its number and anything else comes before a letter. It returns -1, 0 or
// +1, for slices.SortFunc; the keys must be isMarshallableDirectly.
func compareMarshalledKeys(a, b string) int {
	switch {
	case marshalledKeyLess(a, b):
		return -1
	case marshalledKeyLess(b, a):
		return 1
	default:
		return 0
	}
}

// marshalledKeyLess is go.yaml.in/yaml/v2's keyList.Less for two ASCII strings.
func marshalledKeyLess(a, b string) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] == b[i] {
			continue
		}
		aLetter, bLetter := isASCIILetter(a[i]), isASCIILetter(b[i])
		if aLetter && bLetter {
			return a[i] < b[i]
		}
		if aLetter || bLetter {
			return bLetter
		}
		var aNumber, bNumber int64
		if a[i] == '0' || b[i] == '0' {
			// A zero inside a number counts for more than a leading one.
			for j := i - 1; j >= 0 && isASCIIDigit(a[j]); j-- {
				if a[j] != '0' {
					aNumber, bNumber = 1, 1
					break
				}
			}
		}
		aEnd, bEnd := i, i
		for ; aEnd < len(a) && isASCIIDigit(a[aEnd]); aEnd++ {
			aNumber = aNumber*10 + int64(a[aEnd]-'0')
		}
		for ; bEnd < len(b) && isASCIIDigit(b[bEnd]); bEnd++ {
			bNumber = bNumber*10 + int64(b[bEnd]-'0')
		}
		if aNumber != bNumber {
			return aNumber < bNumber
		}
		if aEnd != bEnd {
			return aEnd < bEnd
		}
		return a[i] < b[i]
	}
	return len(a) < len(b)
}

// isASCIILetter reports whether c is an ASCII letter.
func isASCIILetter(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// isASCIIDigit reports whether c is an ASCII digit.
func isASCIIDigit(c byte) bool {
	return c >= '0' && c <= '9'
}
