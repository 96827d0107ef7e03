package v1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/resource"
)

// The bounds of every resource quantity the API accepts, checked before the quantity is
// parsed: resource.ParseQuantity scales a decimal exponent with big-number arithmetic, so
// that 1e-99999999 (11 characters) takes minutes and hundreds of megabytes to parse, while
// 1e-999 takes microseconds. No real request needs more: the exponent of a float64 has at
// most 3 digits (1e308), and 1n to 8Ei fit in a few characters. The CRD's rules on every
// field that holds quantities say the same (validation_test.go holds them to
// CheckQuantity), and CheckQuantitiesJSON applies them to text that the operator decodes.
const (
	// MaxQuantityLength is the most characters of a quantity.
	MaxQuantityLength = 32
	// MaxQuantityExponentDigits is the most characters of a quantity's decimal exponent
	// after the e or E and its sign: 2e3 and 5e-999 are within, 1e1000 is not.
	MaxQuantityExponentDigits = 3
)

// quantityExamples are quantities a message about one out of bounds suggests instead.
const quantityExamples = "100m, 1.5, 2Gi or 2e3"

// maxQuotedQuantity bounds the part of a quantity that a message quotes.
const maxQuotedQuantity = 40

// QuantityError is a quantity out of the bounds of MaxQuantityLength and
// MaxQuantityExponentDigits, found before it was parsed.
// +kubebuilder:object:generate=false
type QuantityError struct {
	// Field is where the quantity is, such as cpu or profile.targetLoadPacking.defaultRequests.cpu;
	// empty when CheckQuantity was given the quantity alone.
	Field string
	// Value is the quantity, cut to a length a message can quote.
	Value string
	// Length is the quantity's length when it is too long, 0 otherwise.
	Length int
	// ExponentDigits is the length of its exponent when that is too long, 0 otherwise.
	ExponentDigits int
}

// Error names the field, quotes the quantity (cut short) and says what is wrong with it.
func (e *QuantityError) Error() string {
	quoted := strconv.Quote(e.Value)
	if e.Field != "" {
		quoted = e.Field + " " + quoted
	}
	return quoted + " " + e.Problem()
}

// Problem says what is wrong with the quantity and what to write instead, without quoting
// it (a message about a configuration must not quote a token written in the wrong place).
func (e *QuantityError) Problem() string {
	if e.Length > 0 {
		return fmt.Sprintf("is %d characters long, more than the %d of a quantity; write one such as %s",
			e.Length, MaxQuantityLength, quantityExamples)
	}
	return fmt.Sprintf("has an exponent of %d digits, more than the %d of a quantity; write one such as %s",
		e.ExponentDigits, MaxQuantityExponentDigits, quantityExamples)
}

// CheckQuantity returns a *QuantityError when value, the text of a resource quantity as
// resource.ParseQuantity would parse it (surrounding spaces left out), is longer than
// MaxQuantityLength or has an exponent (an e or E, then an optional sign) of more than
// MaxQuantityExponentDigits characters. It reads value once and allocates only the error;
// it does not check the quantity's format, which parsing does cheaply.
func CheckQuantity(value string) error {
	if problem := quantityProblem(strings.TrimSpace(value)); problem != nil {
		return problem
	}
	return nil
}

// quantityProblem is CheckQuantity's finding about value, already trimmed.
func quantityProblem[T ~string | ~[]byte](value T) *QuantityError {
	if len(value) > MaxQuantityLength {
		quoted := string(value[:min(len(value), maxQuotedQuantity)])
		if len(value) > maxQuotedQuantity {
			quoted = strings.ToValidUTF8(quoted, "") + "..."
		}
		return &QuantityError{Value: quoted, Length: len(value)}
	}
	for i := range len(value) {
		if value[i] != 'e' && value[i] != 'E' {
			continue
		}
		exponent := value[i+1:]
		if len(exponent) > 0 && (exponent[0] == '+' || exponent[0] == '-') {
			exponent = exponent[1:]
		}
		if len(exponent) > MaxQuantityExponentDigits {
			return &QuantityError{Value: string(value), ExponentDigits: len(exponent)}
		}
	}
	return nil
}

var quantityType = reflect.TypeFor[resource.Quantity]()

// CheckQuantitiesJSON checks with CheckQuantity, before data is decoded into into (a
// pointer), every value of data that encoding/json would decode into a
// resource.Quantity, as Quantity's UnmarshalJSON would read it: at any depth of the
// structs, maps, slices and pointers of into's type, struct fields matched by their JSON
// names as encoding/json matches them (case-insensitively), and every member of an
// object, those of a repeated name included (decoding parses each). The error is a
// *QuantityError that names the field; nil when every quantity is within bounds, when
// into's type holds none (data is not read then), or when data is not JSON, which
// decoding then reports.
func CheckQuantitiesJSON(data []byte, into any) error {
	t := reflect.TypeOf(into)
	if t == nil || !holdsQuantity(t) {
		return nil
	}
	if problem := checkQuantities("", data, t); problem != nil {
		return problem
	}
	return nil
}

func checkQuantities(path string, data []byte, t reflect.Type) *QuantityError {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == quantityType {
		return checkQuantityJSON(path, data)
	}
	if !holdsQuantity(t) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		return eachMember(data, func(key string, value json.RawMessage) *QuantityError {
			for _, field := range jsonFields(t) {
				if !strings.EqualFold(field.name, key) {
					continue
				}
				if problem := checkQuantities(joinPath(path, key), value, field.typ); problem != nil {
					return problem
				}
			}
			return nil
		})
	case reflect.Map:
		return eachMember(data, func(key string, value json.RawMessage) *QuantityError {
			return checkQuantities(joinPath(path, key), value, t.Elem())
		})
	case reflect.Slice, reflect.Array:
		return eachItem(data, func(i int, value json.RawMessage) *QuantityError {
			return checkQuantities(fmt.Sprintf("%s[%d]", path, i), value, t.Elem())
		})
	}
	return nil
}

// checkQuantityJSON checks a JSON value as resource.Quantity's UnmarshalJSON reads it: a
// string's bytes between its quotes, as they are, or a number's text. The text of any
// other value is parsed too, but fails at its first character ({, [, t, f or n).
func checkQuantityJSON(path string, data []byte) *QuantityError {
	text := bytes.TrimSpace(data)
	if len(text) == 0 || text[0] != '"' && text[0] != '-' && (text[0] < '0' || text[0] > '9') {
		return nil
	}
	if len(text) >= 2 && text[0] == '"' && text[len(text)-1] == '"' {
		text = text[1 : len(text)-1]
	}
	problem := quantityProblem(bytes.TrimSpace(text))
	if problem != nil {
		problem.Field = path
	}
	return problem
}

// eachMember calls visit with each member of data, a JSON object, in order, until visit
// finds a problem; it calls it for none when data is not an object.
func eachMember(data []byte, visit func(key string, value json.RawMessage) *QuantityError) *QuantityError {
	decoder := json.NewDecoder(bytes.NewReader(data))
	if token, err := decoder.Token(); err != nil || token != json.Delim('{') {
		return nil
	}
	for decoder.More() {
		token, err := decoder.Token()
		if err != nil {
			return nil
		}
		key, _ := token.(string)
		var value json.RawMessage
		if err := decoder.Decode(&value); err != nil {
			return nil
		}
		if problem := visit(key, value); problem != nil {
			return problem
		}
	}
	return nil
}

// eachItem calls visit with each item of data, a JSON array, in order, until visit finds
// a problem; it calls it for none when data is not an array.
func eachItem(data []byte, visit func(i int, value json.RawMessage) *QuantityError) *QuantityError {
	decoder := json.NewDecoder(bytes.NewReader(data))
	if token, err := decoder.Token(); err != nil || token != json.Delim('[') {
		return nil
	}
	for i := 0; decoder.More(); i++ {
		var value json.RawMessage
		if err := decoder.Decode(&value); err != nil {
			return nil
		}
		if problem := visit(i, value); problem != nil {
			return problem
		}
	}
	return nil
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// jsonField is a field of a struct as encoding/json sees it, the fields of an embedded
// struct without a JSON name of its own being promoted.
type jsonField struct {
	name string
	typ  reflect.Type
}

// jsonFieldsCache holds jsonFields' result per struct type.
var jsonFieldsCache sync.Map

func jsonFields(t reflect.Type) []jsonField {
	if cached, ok := jsonFieldsCache.Load(t); ok {
		return cached.([]jsonField)
	}
	var fields []jsonField
	for i := range t.NumField() {
		field := t.Field(i)
		tag := field.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		embedded := field.Type
		if embedded.Kind() == reflect.Pointer {
			embedded = embedded.Elem()
		}
		if field.Anonymous && name == "" && embedded.Kind() == reflect.Struct {
			fields = append(fields, jsonFields(embedded)...)
			continue
		}
		if !field.IsExported() {
			continue
		}
		if name == "" {
			name = field.Name
		}
		fields = append(fields, jsonField{name: name, typ: field.Type})
	}
	jsonFieldsCache.Store(t, fields)
	return fields
}

// holdsQuantityCache holds holdsQuantity's result per type.
var holdsQuantityCache sync.Map

// holdsQuantity reports whether a value of type t can hold a resource.Quantity.
func holdsQuantity(t reflect.Type) bool {
	if cached, ok := holdsQuantityCache.Load(t); ok {
		return cached.(bool)
	}
	holds := reachesQuantity(t, map[reflect.Type]bool{})
	holdsQuantityCache.Store(t, holds)
	return holds
}

// reachesQuantity searches the types a value of type t holds for resource.Quantity, depth
// first; visited are the types searched already or being searched (a recursive type).
func reachesQuantity(t reflect.Type, visited map[reflect.Type]bool) bool {
	if t == quantityType {
		return true
	}
	if visited[t] {
		return false
	}
	visited[t] = true
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		return reachesQuantity(t.Elem(), visited)
	case reflect.Struct:
		return slices.ContainsFunc(jsonFields(t), func(field jsonField) bool { return reachesQuantity(field.typ, visited) })
	}
	return false
}
