// Package readonlytest proves that a package can reach no writer: no field of its types,
// no parameter or result of its functions and methods, no variable and no expression of
// its code (calls, literals, conversions, type assertions and switch cases included) has
// a type with a method through which a value can change the cluster, and it imports
// nothing that could make a writer of its own or reach around the types. The
// read-only stages of a reconcile (gathering, the ownership check, observing) hold
// their tests to it.
package readonlytest

import (
	"go/types"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// writingMethods are the methods through which a value can change the cluster:
// controller-runtime's writers (its status and subresource writers are reached through
// the results of Status and SubResource), client-go's clients, REST verbs and Event
// recorders. A method counts only when declared in writerPackages: an in-memory set's
// Delete writes nothing.
var writingMethods = []string{
	"Create", "Update", "Patch", "Delete", "DeleteAllOf", "DeleteCollection", "Apply",
	"Post", "Put", "Event", "Eventf", "AnnotatedEventf",
}

// writerPackages declare the clients that talk to the API server.
var writerPackages = []string{"sigs.k8s.io/controller-runtime/pkg/client", "k8s.io/client-go/"}

// isWriting reports whether method writes: a writing name, declared by a client package.
func isWriting(method *types.Func) bool {
	if !slices.Contains(writingMethods, method.Name()) || method.Pkg() == nil {
		return false
	}
	for _, prefix := range writerPackages {
		if strings.HasPrefix(method.Pkg().Path(), prefix) {
			return true
		}
	}
	return false
}

// forbiddenImports would let the package make a client of its own, reach around the
// types (reflect, unsafe) or talk to the network itself.
var forbiddenImports = []string{
	"k8s.io/client-go/kubernetes", "k8s.io/client-go/rest", "k8s.io/client-go/dynamic", "k8s.io/client-go/tools/record",
	"k8s.io/client-go/tools/events", "sigs.k8s.io/controller-runtime", "sigs.k8s.io/controller-runtime/pkg/client/config",
	"sigs.k8s.io/controller-runtime/pkg/manager", "net/http", "net", "os/exec", "reflect", "unsafe",
}

// AssertCannotWrite fails t unless the package of pattern (an import path, or "." for
// the package under test) can reach no writer.
func AssertCannotWrite(t *testing.T, pattern string) {
	t.Helper()
	pkg := loadPackage(t, pattern)
	for path := range pkg.Imports {
		if slices.Contains(forbiddenImports, path) {
			t.Errorf("package %s imports %s, which could make a writer of its own or reach around the types", pkg.PkgPath, path)
		}
	}
	check := func(where string, typ types.Type) {
		if path := writerPath(typ, map[types.Type]bool{}); path != "" {
			t.Errorf("%s: %s reaches a writer: %s", where, typ, path)
		}
	}
	scope := pkg.Types.Scope()
	checked := 0
	for _, name := range scope.Names() {
		object := scope.Lookup(name)
		switch object := object.(type) {
		case *types.TypeName:
			check("type "+name, object.Type().Underlying())
			if named, ok := object.Type().(*types.Named); ok {
				for i := range named.NumMethods() {
					method := named.Method(i)
					if slices.Contains(writingMethods, method.Name()) {
						t.Errorf("type %s has a method named as a writer's, %s", name, method.Name())
					}
					check("method "+name+"."+method.Name(), method.Type())
					checked++
				}
			}
		case *types.Func, *types.Var:
			check(name, object.Type())
		}
		checked++
	}
	// Every expression of the code, whatever its kind: a call, a composite literal, a
	// conversion, a type assertion or the type of a switch case, a local variable.
	reported := map[string]bool{}
	for expression, value := range pkg.TypesInfo.Types {
		where := "expression at " + pkg.Fset.Position(expression.Pos()).String()
		if path := writerPath(value.Type, map[types.Type]bool{}); path != "" && !reported[where] {
			reported[where] = true
			t.Errorf("%s: %s reaches a writer: %s", where, value.Type, path)
		}
	}
	for identifier, object := range pkg.TypesInfo.Defs {
		if variable, ok := object.(*types.Var); ok {
			check("variable "+identifier.Name+" at "+pkg.Fset.Position(identifier.Pos()).String(), variable.Type())
		}
	}
	if checked < minDeclarations {
		t.Fatalf("checked only %d declarations: is the package loaded?", checked)
	}
}

// AssertDeclarationsCannotWrite fails t unless each of names, a type or a function of the
// package of pattern, can reach no writer: a type through its fields and methods, a
// function through its parameters and results. Where AssertCannotWrite proves a whole
// stage package, this proves the part of a larger package that makes and holds read
// stages: what they are made from, and what holds them.
func AssertDeclarationsCannotWrite(t *testing.T, pattern string, names ...string) {
	t.Helper()
	scope := loadPackage(t, pattern).Types.Scope()
	for _, name := range names {
		switch object := scope.Lookup(name).(type) {
		case *types.TypeName:
			if path := writerPath(object.Type(), map[types.Type]bool{}); path != "" {
				t.Errorf("type %s reaches a writer: %s", name, path)
			}
		case *types.Func:
			if path := writerPath(object.Type(), map[types.Type]bool{}); path != "" {
				t.Errorf("func %s reaches a writer: %s", name, path)
			}
		default:
			t.Errorf("%s is no type or function of %s", name, pattern)
		}
	}
}

// WritingFields are the fields of the struct type typeName, of the package of pattern,
// that reach a writer, each with the way it does (as writerPath tells it).
func WritingFields(t *testing.T, pattern, typeName string) map[string]string {
	t.Helper()
	object, ok := loadPackage(t, pattern).Types.Scope().Lookup(typeName).(*types.TypeName)
	if !ok {
		t.Fatalf("%s is no type of %s", typeName, pattern)
	}
	fields, ok := object.Type().Underlying().(*types.Struct)
	if !ok {
		t.Fatalf("%s is no struct", typeName)
	}
	writing := map[string]string{}
	for i := range fields.NumFields() {
		if path := writerPath(fields.Field(i).Type(), map[types.Type]bool{}); path != "" {
			writing[fields.Field(i).Name()] = path
		}
	}
	return writing
}

// loadPackage loads the package of pattern, type-checked from its source: its code is
// read, and the export data of a compiled package would leave out its unexported
// declarations.
func loadPackage(t *testing.T, pattern string) *packages.Package {
	t.Helper()
	loaded, err := packages.Load(&packages.Config{Mode: packages.NeedName | packages.NeedImports | packages.NeedTypes |
		packages.NeedSyntax | packages.NeedTypesInfo}, pattern)
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded) != 1 || len(loaded[0].Errors) > 0 {
		t.Fatalf("load the package: %v", loaded)
	}
	return loaded[0]
}

// writerPath is how typ reaches a writing method ("field.Method"), empty when it cannot:
// through its method set, the fields of a struct, the elements of pointers, slices,
// arrays, maps and channels, and the parameters and results of functions.
func writerPath(typ types.Type, seen map[types.Type]bool) string {
	if typ == nil || seen[typ] {
		return ""
	}
	seen[typ] = true
	for _, candidate := range []types.Type{typ, types.NewPointer(typ)} {
		methods := types.NewMethodSet(candidate)
		for i := range methods.Len() {
			if method, ok := methods.At(i).Obj().(*types.Func); ok && isWriting(method) {
				return method.Pkg().Name() + "." + method.Name()
			}
		}
	}
	switch typ := typ.(type) {
	case *types.Named:
		if path := writerPath(typ.Underlying(), seen); path != "" {
			return path
		}
		for i := range typ.NumMethods() {
			if path := writerPath(typ.Method(i).Type(), seen); path != "" {
				return typ.Method(i).Name() + "()." + path
			}
		}
	case *types.Struct:
		for i := range typ.NumFields() {
			if path := writerPath(typ.Field(i).Type(), seen); path != "" {
				return typ.Field(i).Name() + "." + path
			}
		}
	case *types.Pointer:
		return writerPath(typ.Elem(), seen)
	case *types.Slice:
		return writerPath(typ.Elem(), seen)
	case *types.Array:
		return writerPath(typ.Elem(), seen)
	case *types.Map:
		if path := writerPath(typ.Key(), seen); path != "" {
			return path
		}
		return writerPath(typ.Elem(), seen)
	case *types.Chan:
		return writerPath(typ.Elem(), seen)
	case *types.Signature:
		for _, tuple := range []*types.Tuple{typ.Params(), typ.Results()} {
			for i := range tuple.Len() {
				if path := writerPath(tuple.At(i).Type(), seen); path != "" {
					return "(" + strconv.Itoa(i) + ")." + path
				}
			}
		}
	case *types.Interface:
		for i := range typ.NumMethods() {
			if path := writerPath(typ.Method(i).Type(), seen); path != "" {
				return typ.Method(i).Name() + "()." + path
			}
		}
	}
	return ""
}

// minDeclarations is fewer declarations than any stage package has: fewer checked means
// the package was not loaded as it should have been.
const minDeclarations = 3

// CheckWriterPath keeps the proof honest: the walk must find the writers of
// controller-runtime and client-go wherever they hide, and pass their readers.
func CheckWriterPath(t *testing.T) {
	t.Helper()
	loaded, err := packages.Load(&packages.Config{Mode: packages.NeedName | packages.NeedTypes | packages.NeedImports},
		"sigs.k8s.io/controller-runtime/pkg/client", "k8s.io/client-go/discovery", "k8s.io/apimachinery/pkg/api/meta")
	if err != nil {
		t.Fatal(err)
	}
	lookup := func(pkgPath, name string) types.Type {
		for _, pkg := range loaded {
			if pkg.PkgPath == pkgPath {
				return pkg.Types.Scope().Lookup(name).Type()
			}
		}
		t.Fatalf("%s.%s not loaded", pkgPath, name)
		return nil
	}
	client := lookup("sigs.k8s.io/controller-runtime/pkg/client", "Client")
	reader := lookup("sigs.k8s.io/controller-runtime/pkg/client", "Reader")
	for name, typ := range map[string]types.Type{
		"client.Client":                   client,
		"client.Writer":                   lookup("sigs.k8s.io/controller-runtime/pkg/client", "Writer"),
		"a struct holding a client":       types.NewStruct([]*types.Var{types.NewField(0, nil, "c", client, false)}, nil),
		"a map of clients":                types.NewMap(types.Typ[types.String], client),
		"a func returning a client":       types.NewSignatureType(nil, nil, nil, nil, types.NewTuple(types.NewVar(0, nil, "", client)), false),
		"discovery.DiscoveryClient":       lookup("k8s.io/client-go/discovery", "DiscoveryClient"),
		"a pointer to a discovery client": types.NewPointer(lookup("k8s.io/client-go/discovery", "DiscoveryClient")),
	} {
		if writerPath(typ, map[types.Type]bool{}) == "" {
			t.Errorf("%s reaches no writer, says writerPath", name)
		}
	}
	for name, typ := range map[string]types.Type{
		"client.Reader":                    reader,
		"discovery.ServerVersionInterface": lookup("k8s.io/client-go/discovery", "ServerVersionInterface"),
		"meta.RESTMapper":                  lookup("k8s.io/apimachinery/pkg/api/meta", "RESTMapper"),
	} {
		if path := writerPath(typ, map[types.Type]bool{}); path != "" {
			t.Errorf("%s is read-only, but writerPath says %s", name, path)
		}
	}
}
