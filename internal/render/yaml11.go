package render

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// YAML 1.1, as go.yaml.in/yaml/v2 implements it, decides two things about the text
// rendering writes: how sigs.k8s.io/yaml quotes a string it marshals (valueNode), and
// whether kyaml's field setter quotes a string it sets (setField). Both used to parse text
// to find out; the functions here answer the same question from the string itself.

// Tags of YAML nodes, as go.yaml.in/yaml/v2 and v3 name them: kyaml's, and the two it
// does not name.
const (
	nullTag      = yaml.NodeTagNull
	boolTag      = yaml.NodeTagBool
	strTag       = yaml.NodeTagString
	intTag       = yaml.NodeTagInt
	floatTag     = yaml.NodeTagFloat
	mapTag       = yaml.NodeTagMap
	seqTag       = yaml.NodeTagSeq
	timestampTag = "!!timestamp"
	mergeTag     = "!!merge"
)

// yaml11Keywords are the plain scalars that YAML 1.1 reads as something else than a
// string by their spelling alone (go.yaml.in/yaml/v2's resolve table; its "<<" entry is
// never reached, '<' not being among the characters it looks up).
var yaml11Keywords = func() map[string]string {
	keywords := map[string]string{}
	for tag, spellings := range map[string][]string{
		boolTag: {"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON",
			"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"},
		nullTag:  {"~", "null", "Null", "NULL"},
		floatTag: {".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF"},
	} {
		for _, spelling := range spellings {
			keywords[spelling] = tag
		}
	}
	return keywords
}()

// yaml11Float is the spelling of a float that go.yaml.in/yaml/v2 accepts after a digit
// or sign.
var yaml11Float = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)

// yaml11PlainTag is the tag go.yaml.in/yaml/v2 resolves the plain (unquoted) scalar s to.
// It follows that package's resolve step by step, so that a string is quoted exactly
// when that package would quote it.
func yaml11PlainTag(s string) string {
	if s == "" {
		return nullTag
	}
	if tag, ok := yaml11Keywords[s]; ok {
		return tag
	}
	switch first := s[0]; {
	case first == '.':
		if _, err := strconv.ParseFloat(s, 64); err == nil {
			return floatTag
		}
	case first == '+' || first == '-' || first >= '0' && first <= '9':
		if looksLikeYAML11Timestamp(s) {
			return timestampTag
		}
		plain := strings.ReplaceAll(s, "_", "")
		// Names, UIDs and versions skip strconv, which allocates its errors.
		if isGoIntegerLiteral(plain) {
			if _, err := strconv.ParseInt(plain, 0, 64); err == nil {
				return intTag
			}
			if _, err := strconv.ParseUint(plain, 0, 64); err == nil {
				return intTag
			}
		}
		if yaml11Float.MatchString(plain) {
			if _, err := strconv.ParseFloat(plain, 64); err == nil {
				return floatTag
			}
		}
		if digits, ok := strings.CutPrefix(plain, "0b"); ok {
			if _, err := strconv.ParseInt(digits, 2, 64); err == nil {
				return intTag
			}
			if _, err := strconv.ParseUint(digits, 2, 64); err == nil {
				return intTag
			}
		} else if digits, ok := strings.CutPrefix(plain, "-0b"); ok {
			if _, err := strconv.ParseInt("-"+digits, 2, 64); err == nil {
				return intTag
			}
		}
	}
	return strTag
}

// isGoIntegerLiteral reports whether strconv may parse text, without underscores, as an
// integer with base 0: a sign, then letters and digits only (a base prefix, hexadecimal
// digits).
func isGoIntegerLiteral(text string) bool {
	digits := strings.TrimPrefix(strings.TrimPrefix(text, "-"), "+")
	if digits == "" {
		return false
	}
	for i := 0; i < len(digits); i++ {
		if !isASCIIAlphanumeric(digits[i]) {
			return false
		}
	}
	return true
}

// yaml11TimestampLayouts are the timestamp spellings go.yaml.in/yaml/v2 recognises.
var yaml11TimestampLayouts = []string{
	"2006-1-2T15:4:5.999999999Z07:00",
	"2006-1-2t15:4:5.999999999Z07:00",
	"2006-1-2 15:4:5.999999999",
	"2006-1-2",
}

// looksLikeYAML11Timestamp reports whether go.yaml.in/yaml/v2 reads s as a timestamp.
func looksLikeYAML11Timestamp(s string) bool {
	// Every layout starts with a four-digit year and a dash: most strings stop here.
	if len(s) < 5 || s[4] != '-' {
		return false
	}
	for _, digit := range s[:4] {
		if digit < '0' || digit > '9' {
			return false
		}
	}
	for _, layout := range yaml11TimestampLayouts {
		if _, err := time.Parse(layout, s); err == nil {
			return true
		}
	}
	return false
}

// yaml11Base60Float matches the base 60 floats of YAML 1.1 (1:20:30.5), which
// go.yaml.in/yaml/v2 does not read but quotes, for the parsers that do.
var yaml11Base60Float = regexp.MustCompile(`^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`)

// isYAML11Base60Float reports whether go.yaml.in/yaml/v2 quotes s as a base 60 float.
func isYAML11Base60Float(s string) bool {
	if s == "" || !strings.Contains(s, ":") {
		return false
	}
	if first := s[0]; first != '+' && first != '-' && !isASCIIDigit(first) {
		return false
	}
	return yaml11Base60Float.MatchString(s)
}

// quotedByFieldSetter reports whether kyaml's field setter would double-quote the
// string value s (yaml.IsValueNonString: a YAML 1.1 parser reads s as something else
// than a string). kyaml answers by parsing s; a string made of the characters of names,
// paths and image references can only be one plain scalar, whose type the YAML 1.1
// resolution gives without parsing. Any other string is left to kyaml.
func quotedByFieldSetter(s string) bool {
	if s == "" {
		return false
	}
	if !isSinglePlainYAML11Scalar(s) { // no line feeds, which kyaml never quotes either
		return yaml.IsValueNonString(s)
	}
	switch yaml11PlainTag(s) {
	case strTag, timestampTag:
		// go.yaml.in/yaml/v2 decodes a timestamp into a string all the same.
		return false
	default:
		return true
	}
}

// isSinglePlainYAML11Scalar reports whether s, parsed as a YAML document, certainly is
// one plain scalar of the text s: it starts with a letter, digit or '/', so with no
// indicator nor document marker, and holds no space, quote, comment, flow indicator, nor a
// ':' that could start a value.
func isSinglePlainYAML11Scalar(s string) bool {
	if !isASCIIAlphanumeric(s[0]) && s[0] != '/' {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case isASCIIAlphanumeric(c), c == '.', c == '-', c == '_', c == '/', c == '+', c == '=':
		case c == ':' && i+1 < len(s):
		default:
			return false
		}
	}
	return true
}

// isASCIIAlphanumeric reports whether c is an ASCII letter or digit.
func isASCIIAlphanumeric(c byte) bool {
	return isASCIILetter(c) || isASCIIDigit(c)
}
