package main

import (
	"fmt"
	"go/ast"
	"reflect"
	"strconv"
	"strings"
)

// schedulerPluginsArgsPackage holds the args types of scheduler-plugins' plugins, the
// version its kube-scheduler decodes pluginConfig with.
const schedulerPluginsArgsPackage = "sigs.k8s.io/scheduler-plugins/apis/config/v1"

// The kinds of an args field, as the generated table spells them: what JSON value kube-scheduler's
// strict decoding accepts for it. internal/schedconfig's check reads the same names
// (TestArgsKindsAreKnown fails on one it does not know).
const (
	kindString  = "string"
	kindInteger = "integer"
	kindNumber  = "number"
	kindBool    = "bool"
	kindObject  = "object" // a struct: its fields are listed too
	kindList    = "list"   // its items, when structs, are listed under PATH[]
	kindMap     = "map"    // keys chosen by the user, values not checked
	kindAny     = "any"    // a type the decoding takes as it comes (runtime.RawExtension)
)

// pluginArgs maps each registered plugin whose args type scheduler-plugins declares (the
// type named PLUGIN+"Args" in apis/config/v1) to its fields: the JSON path of each, dotted,
// with [] after a list of structs, and its kind. A plugin without such a type takes no args
// kube-scheduler decodes.
func pluginArgs(l *loader, registered []registration) (map[string]map[string]string, error) {
	pkg, err := l.load(schedulerPluginsArgsPackage)
	if err != nil {
		return nil, err
	}
	args := map[string]map[string]string{}
	for _, plugin := range registered {
		spec, ok := pkg.types[plugin.name+"Args"]
		if !ok {
			continue
		}
		fields := map[string]string{}
		if err := l.argsFields(pkg, spec.file, spec.node.Type, "", fields, 0); err != nil {
			return nil, fmt.Errorf("args of %s: %w", plugin.name, err)
		}
		args[plugin.name] = fields
	}
	return args, nil
}

// maxArgsDepth bounds how deep argsFields follows types, against a cycle.
const maxArgsDepth = 12

// argsFields adds the fields of the type typ (declared in pkg's file) to fields, their
// paths after prefix.
func (l *loader) argsFields(pkg *sourcePackage, file *ast.File, typ ast.Expr, prefix string, fields map[string]string, depth int) error {
	if depth > maxArgsDepth {
		return fmt.Errorf("%s: types nested more than %d deep", l.fset.Position(typ.Pos()), maxArgsDepth)
	}
	structType, pkg, file, err := l.structOf(pkg, file, typ, depth)
	if err != nil {
		return err
	}
	if structType == nil {
		return fmt.Errorf("%s: %s is not a struct", l.fset.Position(typ.Pos()), render(typ))
	}
	for _, field := range structType.Fields.List {
		name, inline := jsonName(field)
		if name == "-" {
			continue
		}
		if inline {
			if err := l.argsFields(pkg, file, field.Type, prefix, fields, depth+1); err != nil {
				return err
			}
			continue
		}
		path := prefix + name
		kind, element, err := l.kindOf(pkg, file, field.Type, depth+1)
		if err != nil {
			return err
		}
		fields[path] = kind
		switch {
		case kind == kindObject:
			if err := l.argsFields(pkg, file, field.Type, path+".", fields, depth+1); err != nil {
				return err
			}
		case kind == kindList && element != nil:
			if elementKind, _, err := l.kindOf(pkg, file, element, depth+1); err != nil {
				return err
			} else if elementKind == kindObject {
				if err := l.argsFields(pkg, file, element, path+"[].", fields, depth+1); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// jsonName is the name encoding/json gives a struct field: its json tag's name, or, without
// one (or with a tag Go cannot read, as scheduler-plugins' PeaksArgs has), the Go field's
// name; and whether the field is inlined (an embedded struct without a name of its own).
func jsonName(field *ast.Field) (string, bool) {
	tag := ""
	if field.Tag != nil {
		if unquoted, err := strconv.Unquote(field.Tag.Value); err == nil {
			tag = reflect.StructTag(unquoted).Get("json")
		}
	}
	name, _, _ := strings.Cut(tag, ",")
	if len(field.Names) == 0 {
		// Embedded: inlined unless its tag names it.
		if name == "" {
			return "", true
		}
		return name, false
	}
	if name == "" {
		name = field.Names[0].Name
	}
	return name, false
}

// kindOf is the kind of a field of type typ; for a list, its element type too.
func (l *loader) kindOf(pkg *sourcePackage, file *ast.File, typ ast.Expr, depth int) (string, ast.Expr, error) {
	if depth > maxArgsDepth {
		return "", nil, fmt.Errorf("%s: types nested more than %d deep", l.fset.Position(typ.Pos()), maxArgsDepth)
	}
	switch typ := typ.(type) {
	case *ast.StarExpr:
		return l.kindOf(pkg, file, typ.X, depth+1)
	case *ast.ArrayType:
		return kindList, typ.Elt, nil
	case *ast.MapType:
		return kindMap, nil, nil
	case *ast.StructType:
		return kindObject, nil, nil
	case *ast.Ident:
		switch typ.Name {
		case "string":
			return kindString, nil, nil
		case "bool":
			return kindBool, nil, nil
		case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
			return kindInteger, nil, nil
		case "float32", "float64":
			return kindNumber, nil, nil
		}
	}
	other, name, err := l.qualified(pkg, file, typ)
	if err != nil {
		return "", nil, err
	}
	if other.importPath == "k8s.io/apimachinery/pkg/runtime" && name == "RawExtension" {
		return kindAny, nil, nil
	}
	if other.importPath == "k8s.io/apimachinery/pkg/api/resource" && name == "Quantity" {
		return kindAny, nil, nil // a string or a number
	}
	spec, ok := other.types[name]
	if !ok {
		return "", nil, fmt.Errorf("%s: type %s.%s is not declared", l.fset.Position(typ.Pos()), other.importPath, name)
	}
	return l.kindOf(other, spec.file, spec.node.Type, depth+1)
}

// structOf is the struct type typ names, with the package and file it is declared in; nil
// when typ is not a struct.
func (l *loader) structOf(pkg *sourcePackage, file *ast.File, typ ast.Expr, depth int) (*ast.StructType, *sourcePackage, *ast.File, error) {
	for range maxArgsDepth {
		switch t := typ.(type) {
		case *ast.StructType:
			return t, pkg, file, nil
		case *ast.StarExpr:
			typ = t.X
			continue
		case *ast.Ident, *ast.SelectorExpr:
			other, name, err := l.qualified(pkg, file, t)
			if err != nil {
				return nil, nil, nil, err
			}
			spec, ok := other.types[name]
			if !ok {
				return nil, nil, nil, fmt.Errorf("%s: type %s.%s is not declared", l.fset.Position(typ.Pos()), other.importPath, name)
			}
			pkg, file, typ = other, spec.file, spec.node.Type
			continue
		}
		return nil, nil, nil, nil
	}
	return nil, nil, nil, fmt.Errorf("%s: types nested more than %d deep", l.fset.Position(typ.Pos()), depth)
}
