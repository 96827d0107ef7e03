// Package reach finds, from the API's Go types, every place in a SecondaryScheduler's
// spec that brings something into its scheduler's pod or into what the operator reads:
// a container image, or the name of a Secret or ConfigMap. The admission policy checks
// what it finds (internal/render builds its validations from Sinks), so a field added to
// the API later is checked without editing the policy: an image is any string field named
// image or ending in Image, a reference any field of a reference type, or a string tagged
// reach:"configmap" or reach:"secret". A field that would bring in a reference the policy
// cannot check makes Sinks fail, and with it the operator's start and every test.
//
// What each kind of place needs:
//   - an image: to be among the images a cluster admin allows;
//   - a reference outside any list (schedulerConfig, metrics.tokenSecretRef): the
//     author's own get on the object, asked of the API server's authorizer;
//   - a reference under a type that names a consent label (ConsentedReferences): the
//     object's label, which the operator checks before it reads or mounts it, since the
//     API server allows two authorization checks per CEL expression and a list could
//     hold many;
//   - a reference inside a container's env, envFrom or volumes: nothing, it is refused,
//     since the kubelet would hand the object to code of the author's choice.
package reach

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// Kind is what a place holds.
type Kind string

const (
	// Image is a container image reference.
	Image Kind = "image"
	// Secret is the name of a Secret in the SecondaryScheduler's namespace.
	Secret Kind = "Secret"
	// ConfigMap is the name of a ConfigMap in the SecondaryScheduler's namespace.
	ConfigMap Kind = "ConfigMap"
)

// Check is how a place is checked.
type Check string

const (
	// AllowedImage is the check of an image: among those a cluster admin allows.
	AllowedImage Check = "AllowedImage"
	// AuthorMayGet is the check of a reference: the author must be allowed to get it.
	AuthorMayGet Check = "AuthorMayGet"
	// ConsentLabel is the check of a consented reference: the object must carry a label
	// naming the SecondaryScheduler, which
	// the operator checks before reading or mounting it.
	ConsentLabel Check = "ConsentLabel"
	// Refused is the check of a place where no value is accepted.
	Refused Check = "Refused"
)

// Segment is one step of a path from spec: a field, and whether it is a list whose
// elements the rest of the path is about.
type Segment struct {
	Field string
	List  bool
}

// Sink is a place in the spec that holds an image or a reference.
type Sink struct {
	// Path leads from spec to the string.
	Path  []Segment
	Kind  Kind
	Check Check
	// ConsentLabel is the label the object must carry, for Check ConsentLabel.
	ConsentLabel string
}

// String is the path as users read it: spec.extenders[].container.image.
func (s Sink) String() string {
	var path strings.Builder
	path.WriteString("spec")
	for _, segment := range s.Path {
		path.WriteString("." + segment.Field)
		if segment.List {
			path.WriteString("[]")
		}
	}
	return path.String()
}

// Depth is how many lists the path goes through.
func (s Sink) Depth() int {
	depth := 0
	for _, segment := range s.Path {
		if segment.List {
			depth++
		}
	}
	return depth
}

// ConsentedReferences is implemented by an API type whose references are consented to by
// a label on the object referenced, rather than by the author's authority.
type ConsentedReferences interface {
	// ReferencesConsentLabel is the label key; its value is the SecondaryScheduler's name.
	ReferencesConsentLabel() string
}

// TagKey is the struct tag that says what a plain string field names: reach:"configmap"
// or reach:"secret".
const TagKey = "reach"

var (
	sinksOnce sync.Once
	sinks     []Sink
	sinksErr  error
)

// Sinks are the places of v1.SecondarySchedulerSpec, in field order. It fails when a
// place could not be checked (see the package comment).
func Sinks() ([]Sink, error) {
	sinksOnce.Do(func() { sinks, sinksErr = Of(reflect.TypeFor[v1.SecondarySchedulerSpec]()) })
	return sinks, sinksErr
}

// Of finds the places of a spec type.
func Of(spec reflect.Type) ([]Sink, error) {
	w := &walker{}
	w.walk(spec, nil, "", nil)
	if len(w.problems) > 0 {
		return nil, fmt.Errorf("places of the spec the admission policy cannot check: %s", strings.Join(w.problems, "; "))
	}
	return w.sinks, nil
}

type walker struct {
	sinks    []Sink
	problems []string
}

var (
	envVarType        = reflect.TypeFor[corev1.EnvVar]()
	envFromSourceType = reflect.TypeFor[corev1.EnvFromSource]()
	volumeType        = reflect.TypeFor[corev1.Volume]()
	localRefType      = reflect.TypeFor[corev1.LocalObjectReference]()
	consentedType     = reflect.TypeFor[ConsentedReferences]()
)

// podSources are the core types through which the kubelet hands a Secret or ConfigMap to
// a container, and where in them the object's name is.
var podSources = map[reflect.Type][]struct {
	path []Segment
	kind Kind
}{
	envVarType: {
		{[]Segment{{Field: "valueFrom"}, {Field: "secretKeyRef"}, {Field: "name"}}, Secret},
		{[]Segment{{Field: "valueFrom"}, {Field: "configMapKeyRef"}, {Field: "name"}}, ConfigMap},
	},
	envFromSourceType: {
		{[]Segment{{Field: "secretRef"}, {Field: "name"}}, Secret},
		{[]Segment{{Field: "configMapRef"}, {Field: "name"}}, ConfigMap},
	},
	volumeType: {
		{[]Segment{{Field: "secret"}, {Field: "secretName"}}, Secret},
		{[]Segment{{Field: "configMap"}, {Field: "name"}}, ConfigMap},
		{[]Segment{{Field: "projected"}, {Field: "sources", List: true}, {Field: "secret"}, {Field: "name"}}, Secret},
		{[]Segment{{Field: "projected"}, {Field: "sources", List: true}, {Field: "configMap"}, {Field: "name"}}, ConfigMap},
	},
}

// typedReferences are the reference types of api/v1 and the field holding the name.
var typedReferences = map[reflect.Type]Kind{
	reflect.TypeFor[v1.ConfigMapKeyReference]():    ConfigMap,
	reflect.TypeFor[v1.SecretKeyReference]():       Secret,
	reflect.TypeFor[corev1.SecretKeySelector]():    Secret,
	reflect.TypeFor[corev1.ConfigMapKeySelector](): ConfigMap,
}

func (w *walker) add(path []Segment, kind Kind, consent string) {
	sink := Sink{Path: slices.Clone(path), Kind: kind}
	switch {
	case kind == Image:
		sink.Check = AllowedImage
	case consent != "":
		sink.Check, sink.ConsentLabel = ConsentLabel, consent
	case sink.Depth() == 0:
		sink.Check = AuthorMayGet
	default:
		w.problems = append(w.problems, fmt.Sprintf("%s names a %s inside a list: the API server allows two authorization checks per expression, "+
			"so give its type a consent label (ConsentedReferences) or refuse it", sink, kind))
		return
	}
	w.sinks = append(w.sinks, sink)
}

func (w *walker) refuse(path []Segment, kind Kind) {
	w.sinks = append(w.sinks, Sink{Path: slices.Clone(path), Kind: kind, Check: Refused})
}

// walk visits t, reached by path; consent is the consent label of an enclosing type.
func (w *walker) walk(t reflect.Type, path []Segment, consent string, seen []reflect.Type) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if slices.Contains(seen, t) {
		return // a recursive type holds nothing its first visit did not find
	}
	seen = append(seen, t)
	if t.Implements(consentedType) || reflect.PointerTo(t).Implements(consentedType) {
		consent = reflect.Zero(t).Interface().(ConsentedReferences).ReferencesConsentLabel()
	}
	if sources, ok := podSources[t]; ok {
		for _, source := range sources {
			w.refuse(append(slices.Clone(path), source.path...), source.kind)
		}
		return
	}
	if kind, ok := typedReferences[t]; ok {
		w.add(append(slices.Clone(path), Segment{Field: "name"}), kind, consent)
		return
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if len(path) == 0 {
			return
		}
		last := len(path) - 1
		listed := append(slices.Clone(path[:last]), Segment{Field: path[last].Field, List: true})
		w.walk(t.Elem(), listed, consent, seen)
	case reflect.Map:
		// Map values are reached by key, which no CEL path here can follow: a map of
		// anything that holds a place is a problem, found by walking its value type.
		before := len(w.sinks)
		w.walk(t.Elem(), append(slices.Clone(path), Segment{Field: "*"}), consent, seen)
		if len(w.sinks) > before {
			w.problems = append(w.problems, fmt.Sprintf("%s is a map whose values hold images or references", Sink{Path: path}))
			w.sinks = w.sinks[:before]
		}
	case reflect.Struct:
		w.walkStruct(t, path, consent, seen)
	}
}

func (w *walker) walkStruct(t reflect.Type, path []Segment, consent string, seen []reflect.Type) {
	for i := range t.NumField() {
		field := t.Field(i)
		if !field.IsExported() {
			continue
		}
		name, inline := jsonName(field)
		if name == "-" {
			continue
		}
		fieldPath := path
		if !inline {
			fieldPath = append(slices.Clone(path), Segment{Field: name})
		}
		fieldType := field.Type
		for fieldType.Kind() == reflect.Pointer {
			fieldType = fieldType.Elem()
		}
		if fieldType == localRefType && !inline {
			kind, ok := referenceKindByName(name)
			if !ok {
				w.problems = append(w.problems, fmt.Sprintf("%s is a LocalObjectReference whose name says neither Secret nor ConfigMap", Sink{Path: fieldPath}))
				continue
			}
			w.add(append(fieldPath, Segment{Field: "name"}), kind, consent)
			continue
		}
		if fieldType.Kind() == reflect.String {
			switch tag := field.Tag.Get(TagKey); {
			case tag == "configmap":
				w.add(fieldPath, ConfigMap, consent)
			case tag == "secret":
				w.add(fieldPath, Secret, consent)
			case name == "image" || strings.HasSuffix(name, "Image"):
				w.add(fieldPath, Image, consent)
			}
			continue
		}
		w.walk(field.Type, fieldPath, consent, seen)
	}
}

// referenceKindByName reads what a LocalObjectReference field names from its name:
// tokenSecretRef, clientCertificateSecretRef, configMapRef.
func referenceKindByName(name string) (Kind, bool) {
	lower := strings.ToLower(name)
	switch {
	case strings.Contains(lower, "secret"):
		return Secret, true
	case strings.Contains(lower, "configmap"):
		return ConfigMap, true
	}
	return "", false
}

// jsonName is a field's JSON name, and whether it is inlined.
func jsonName(field reflect.StructField) (string, bool) {
	tag, _, _ := strings.Cut(field.Tag.Get("json"), ",")
	if field.Anonymous && tag == "" {
		return field.Name, true
	}
	if strings.Contains(field.Tag.Get("json"), ",inline") {
		return field.Name, true
	}
	if tag == "" {
		return field.Name, false
	}
	return tag, false
}
