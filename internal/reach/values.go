package reach

import "reflect"

// Values are the non-empty strings spec (a SecondarySchedulerSpec, or a pointer to one)
// holds at the sink, through every element of the lists on its path: what the operator
// checks again itself before it renders (the images a cluster admin allows), so that a
// spec admitted while the admission policy's parameters were changed does not reach a pod.
func (s Sink) Values(spec any) []string {
	var values []string
	collect(reflect.ValueOf(spec), s.Path, &values)
	return values
}

func collect(value reflect.Value, path []Segment, values *[]string) {
	for value.Kind() == reflect.Pointer || value.Kind() == reflect.Interface {
		if value.IsNil() {
			return
		}
		value = value.Elem()
	}
	if len(path) == 0 {
		if value.Kind() == reflect.String && value.String() != "" {
			*values = append(*values, value.String())
		}
		return
	}
	if value.Kind() != reflect.Struct {
		return
	}
	field, found := fieldByJSONName(value, path[0].Field)
	if !found {
		return
	}
	if !path[0].List {
		collect(field, path[1:], values)
		return
	}
	if field.Kind() != reflect.Slice && field.Kind() != reflect.Array {
		return
	}
	for i := range field.Len() {
		collect(field.Index(i), path[1:], values)
	}
}

// fieldByJSONName is the field of the struct value whose JSON name is name, looking into
// inlined fields as the walk that found the sinks does.
func fieldByJSONName(value reflect.Value, name string) (reflect.Value, bool) {
	for i := range value.NumField() {
		field := value.Type().Field(i)
		if !field.IsExported() {
			continue
		}
		fieldName, inline := jsonName(field)
		if !inline {
			if fieldName == name {
				return value.Field(i), true
			}
			continue
		}
		inner := value.Field(i)
		for inner.Kind() == reflect.Pointer {
			if inner.IsNil() {
				break
			}
			inner = inner.Elem()
		}
		if inner.Kind() == reflect.Struct {
			if found, ok := fieldByJSONName(inner, name); ok {
				return found, true
			}
		}
	}
	return reflect.Value{}, false
}
