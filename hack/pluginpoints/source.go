package main

import (
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// loader reads Go packages by import path from the source trees given (go/parser only: the
// trees are not type-checked, which would need every module they require).
type loader struct {
	// roots maps a module path to the directory of its source.
	roots map[string]string
	// requires maps the modules a source tree requires to their versions: a package of one
	// of them is read from the module cache (downloaded if missing).
	requires map[string]string
	fset     *token.FileSet
	pkgs     map[string]*sourcePackage
}

// sourcePackage is the declarations of one package that the generator resolves names in.
type sourcePackage struct {
	importPath string
	name       string
	consts     map[string]declared[ast.Expr]
	funcs      map[string]declared[*ast.FuncDecl]
	types      map[string]declared[*ast.TypeSpec]
	// methods are the methods declared on each type; pointer says the receiver is *T.
	methods map[string][]method
	// methodDecls are the methods' declarations by Type.Method.
	methodDecls map[string]declared[*ast.FuncDecl]
	// assertions are `var _ I = &T{}` and `var _ I = (*T)(nil)` declarations.
	assertions []declared[*ast.ValueSpec]
}

type method struct {
	name    string
	pointer bool
}

// declared is a declaration and the file it is in, whose imports qualify its names.
type declared[T any] struct {
	node T
	file *ast.File
}

func newLoader(roots map[string]string) *loader {
	return &loader{roots: roots, fset: token.NewFileSet(), pkgs: map[string]*sourcePackage{}}
}

// dir is the directory of importPath, or "" when no root holds it.
func (l *loader) dir(importPath string) string {
	best := ""
	for module := range l.roots {
		if (importPath == module || strings.HasPrefix(importPath, module+"/")) && len(module) > len(best) {
			best = module
		}
	}
	if best == "" {
		return l.requiredDir(importPath)
	}
	return filepath.Join(l.roots[best], filepath.FromSlash(strings.TrimPrefix(importPath, best)))
}

// requiredDir is the directory of importPath in a module of requires, "" when none holds it.
func (l *loader) requiredDir(importPath string) string {
	best := ""
	for module := range l.requires {
		if (importPath == module || strings.HasPrefix(importPath, module+"/")) && len(module) > len(best) {
			best = module
		}
	}
	if best == "" {
		return ""
	}
	dir, err := moduleDir(best, l.requires[best])
	if err != nil {
		return ""
	}
	l.roots[best] = dir
	return l.dir(importPath)
}

// load parses the package at importPath: its non-test files that build for the default
// platform.
func (l *loader) load(importPath string) (*sourcePackage, error) {
	if pkg, ok := l.pkgs[importPath]; ok {
		return pkg, nil
	}
	dir := l.dir(importPath)
	if dir == "" {
		return nil, fmt.Errorf("package %s is in none of the source trees given", importPath)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read package %s: %w", importPath, err)
	}
	pkg := &sourcePackage{
		importPath: importPath,
		consts:     map[string]declared[ast.Expr]{},
		funcs:      map[string]declared[*ast.FuncDecl]{},
		types:      map[string]declared[*ast.TypeSpec]{},
		methods:    map[string][]method{},

		methodDecls: map[string]declared[*ast.FuncDecl]{},
	}
	for _, entry := range entries {
		name := entry.Name()
		if entry.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		if match, err := build.Default.MatchFile(dir, name); err != nil || !match {
			continue
		}
		file, err := parser.ParseFile(l.fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", name, err)
		}
		pkg.name = file.Name.Name
		pkg.add(file)
	}
	if pkg.name == "" {
		return nil, fmt.Errorf("package %s (%s) has no Go files", importPath, dir)
	}
	l.pkgs[importPath] = pkg
	return pkg, nil
}

func (p *sourcePackage) add(file *ast.File) {
	for _, decl := range file.Decls {
		switch decl := decl.(type) {
		case *ast.FuncDecl:
			if decl.Recv == nil {
				p.funcs[decl.Name.Name] = declared[*ast.FuncDecl]{decl, file}
				continue
			}
			receiver, pointer := receiverType(decl.Recv.List[0].Type)
			p.methods[receiver] = append(p.methods[receiver], method{decl.Name.Name, pointer})
			p.methodDecls[receiver+"."+decl.Name.Name] = declared[*ast.FuncDecl]{decl, file}
		case *ast.GenDecl:
			for _, spec := range decl.Specs {
				switch spec := spec.(type) {
				case *ast.TypeSpec:
					p.types[spec.Name.Name] = declared[*ast.TypeSpec]{spec, file}
				case *ast.ValueSpec:
					p.addValues(decl.Tok, spec, file)
				}
			}
		}
	}
}

func (p *sourcePackage) addValues(tok token.Token, spec *ast.ValueSpec, file *ast.File) {
	if tok == token.VAR && len(spec.Names) == 1 && spec.Names[0].Name == "_" && spec.Type != nil {
		p.assertions = append(p.assertions, declared[*ast.ValueSpec]{spec, file})
	}
	if tok != token.CONST {
		return
	}
	for i, name := range spec.Names {
		if i < len(spec.Values) {
			p.consts[name.Name] = declared[ast.Expr]{spec.Values[i], file}
		}
	}
}

// receiverType is the name of a method's receiver type and whether it is a pointer.
func receiverType(expr ast.Expr) (string, bool) {
	pointer := false
	if star, ok := expr.(*ast.StarExpr); ok {
		expr, pointer = star.X, true
	}
	switch expr := expr.(type) {
	case *ast.Ident:
		return expr.Name, pointer
	case *ast.IndexExpr:
		name, _ := receiverType(expr.X)
		return name, pointer
	}
	return "", pointer
}

// imports maps the names file uses for its imports to their import paths. An import
// without a name is known by its package's name, read from its source when a root holds
// it.
func (l *loader) imports(file *ast.File) (map[string]string, error) {
	names := map[string]string{}
	for _, spec := range file.Imports {
		importPath, err := strconv.Unquote(spec.Path.Value)
		if err != nil {
			return nil, err
		}
		if spec.Name != nil {
			names[spec.Name.Name] = importPath
			continue
		}
		name := path.Base(importPath)
		if l.dir(importPath) != "" {
			if pkg, err := l.load(importPath); err == nil {
				name = pkg.name
			}
		}
		names[name] = importPath
	}
	return names, nil
}

// qualified resolves a name used in file of pkg, an identifier or package.Identifier, to
// the package that declares it and its name there.
func (l *loader) qualified(pkg *sourcePackage, file *ast.File, expr ast.Expr) (*sourcePackage, string, error) {
	switch expr := expr.(type) {
	case *ast.Ident:
		return pkg, expr.Name, nil
	case *ast.SelectorExpr:
		qualifier, ok := expr.X.(*ast.Ident)
		if !ok {
			return nil, "", fmt.Errorf("%s: %s is not a qualified name", l.fset.Position(expr.Pos()), render(expr))
		}
		imports, err := l.imports(file)
		if err != nil {
			return nil, "", err
		}
		importPath, ok := imports[qualifier.Name]
		if !ok {
			return nil, "", fmt.Errorf("%s: %s is not an imported package", l.fset.Position(expr.Pos()), qualifier.Name)
		}
		other, err := l.load(importPath)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", l.fset.Position(expr.Pos()), err)
		}
		return other, expr.Sel.Name, nil
	}
	return nil, "", fmt.Errorf("%s: %s is not a name", l.fset.Position(expr.Pos()), render(expr))
}

// stringConst evaluates a string constant expression: a literal, a constant (of this or
// another package) or a concatenation of them.
func (l *loader) stringConst(pkg *sourcePackage, file *ast.File, expr ast.Expr) (string, error) {
	switch expr := expr.(type) {
	case *ast.BasicLit:
		if expr.Kind == token.STRING {
			return strconv.Unquote(expr.Value)
		}
	case *ast.ParenExpr:
		return l.stringConst(pkg, file, expr.X)
	case *ast.BinaryExpr:
		if expr.Op == token.ADD {
			left, err := l.stringConst(pkg, file, expr.X)
			if err != nil {
				return "", err
			}
			right, err := l.stringConst(pkg, file, expr.Y)
			return left + right, err
		}
	case *ast.Ident, *ast.SelectorExpr:
		declaring, name, err := l.qualified(pkg, file, expr)
		if err != nil {
			return "", err
		}
		value, ok := declaring.consts[name]
		if !ok {
			return "", fmt.Errorf("%s: no constant %s in package %s", l.fset.Position(expr.Pos()), name, declaring.importPath)
		}
		return l.stringConst(declaring, value.file, value.node)
	}
	return "", fmt.Errorf("%s: %s is not a string constant", l.fset.Position(expr.Pos()), render(expr))
}

// typeRef is a named type and whether a value of it is held by pointer.
type typeRef struct {
	pkg     *sourcePackage
	name    string
	pointer bool
}

func (t typeRef) String() string {
	star := ""
	if t.pointer {
		star = "*"
	}
	return star + t.pkg.importPath + "." + t.name
}

// factoryType is the type of the plugin a factory expression of a registry makes: a
// function (pkg.New), or runtime.FactoryAdapter(fts, pkg.New).
func (l *loader) factoryType(pkg *sourcePackage, file *ast.File, expr ast.Expr) (typeRef, error) {
	if call, ok := expr.(*ast.CallExpr); ok {
		_, callee, err := l.qualified(pkg, file, call.Fun)
		if err != nil || callee != "FactoryAdapter" || len(call.Args) != 2 {
			return typeRef{}, fmt.Errorf("%s: factory %s is neither a function nor FactoryAdapter(features, function)",
				l.fset.Position(expr.Pos()), render(expr))
		}
		expr = call.Args[1]
	}
	declaring, name, err := l.qualified(pkg, file, expr)
	if err != nil {
		return typeRef{}, err
	}
	fn, ok := declaring.funcs[name]
	if !ok {
		return typeRef{}, fmt.Errorf("%s: no function %s in package %s", l.fset.Position(expr.Pos()), name, declaring.importPath)
	}
	return l.funcResultType(declaring, fn, 0)
}

// funcResultType is the concrete type of fn's first result: its declared type when that is
// a struct type, otherwise the one type that every non-nil return statement yields.
func (l *loader) funcResultType(pkg *sourcePackage, fn declared[*ast.FuncDecl], depth int) (typeRef, error) {
	where := l.fset.Position(fn.node.Pos())
	if depth > 5 {
		return typeRef{}, fmt.Errorf("%s: %s: too many calls deep to find the plugin's type", where, fn.node.Name.Name)
	}
	results := fn.node.Type.Results
	if results == nil || len(results.List) == 0 {
		return typeRef{}, fmt.Errorf("%s: %s returns nothing", where, fn.node.Name.Name)
	}
	if ref, err := l.typeOf(pkg, fn.file, results.List[0].Type); err == nil && ref.isStruct() {
		return ref, nil
	}
	var found []typeRef
	var failure error
	ast.Inspect(fn.node.Body, func(node ast.Node) bool {
		switch node := node.(type) {
		case *ast.FuncLit:
			return false
		case *ast.ReturnStmt:
			if len(node.Results) == 0 || isNil(node.Results[0]) {
				return true
			}
			ref, err := l.valueType(pkg, fn, node.Results[0], depth)
			if err != nil {
				failure = err
				return false
			}
			found = append(found, ref)
		}
		return true
	})
	if failure != nil {
		return typeRef{}, failure
	}
	found = slices.CompactFunc(found, func(a, b typeRef) bool { return a.String() == b.String() })
	if len(found) != 1 {
		return typeRef{}, fmt.Errorf("%s: %s returns %d different types (%v), not one plugin type", where, fn.node.Name.Name, len(found), found)
	}
	return found[0], nil
}

// valueType is the type of a returned value: &T{...}, T{...}, new(T), a call of a function
// of the source trees, or a variable of fn assigned one of those.
func (l *loader) valueType(pkg *sourcePackage, fn declared[*ast.FuncDecl], expr ast.Expr, depth int) (typeRef, error) {
	switch expr := expr.(type) {
	case *ast.UnaryExpr:
		if lit, ok := expr.X.(*ast.CompositeLit); ok && expr.Op == token.AND {
			ref, err := l.typeOf(pkg, fn.file, lit.Type)
			ref.pointer = true
			return ref, err
		}
		if _, ok := expr.X.(*ast.Ident); ok && expr.Op == token.AND {
			ref, err := l.valueType(pkg, fn, expr.X, depth)
			if err == nil && ref.pointer {
				return typeRef{}, fmt.Errorf("%s: %s is a pointer to a pointer", l.fset.Position(expr.Pos()), render(expr))
			}
			ref.pointer = true
			return ref, err
		}
	case *ast.CompositeLit:
		return l.typeOf(pkg, fn.file, expr.Type)
	case *ast.CallExpr:
		if ident, ok := expr.Fun.(*ast.Ident); ok && ident.Name == "new" && len(expr.Args) == 1 {
			ref, err := l.typeOf(pkg, fn.file, expr.Args[0])
			ref.pointer = true
			return ref, err
		}
		declaring, name, err := l.qualified(pkg, fn.file, expr.Fun)
		if err != nil {
			return typeRef{}, err
		}
		callee, ok := declaring.funcs[name]
		if !ok {
			return typeRef{}, fmt.Errorf("%s: no function %s in package %s", l.fset.Position(expr.Pos()), name, declaring.importPath)
		}
		return l.funcResultType(declaring, callee, depth+1)
	case *ast.Ident:
		if assigned := assignedTo(fn.node.Body, expr.Name); assigned != nil {
			return l.valueType(pkg, fn, assigned, depth)
		}
	}
	return typeRef{}, fmt.Errorf("%s: cannot tell the type of %s, which %s returns", l.fset.Position(expr.Pos()), render(expr), fn.node.Name.Name)
}

// assignedTo is the first value assigned to the variable name in body (name := value,
// name = value, var name = value), or nil.
func assignedTo(body *ast.BlockStmt, name string) ast.Expr {
	var value ast.Expr
	ast.Inspect(body, func(node ast.Node) bool {
		if value != nil {
			return false
		}
		switch node := node.(type) {
		case *ast.FuncLit:
			return false
		case *ast.AssignStmt:
			for i, lhs := range node.Lhs {
				if ident, ok := lhs.(*ast.Ident); ok && ident.Name == name && len(node.Rhs) == len(node.Lhs) {
					value = node.Rhs[i]
				}
			}
		case *ast.ValueSpec:
			for i, ident := range node.Names {
				if ident.Name == name && i < len(node.Values) {
					value = node.Values[i]
				}
			}
		}
		return true
	})
	return value
}

func isNil(expr ast.Expr) bool {
	ident, ok := expr.(*ast.Ident)
	return ok && ident.Name == "nil"
}

// typeOf resolves a type expression, T, *T or pkg.T, to its declaration.
func (l *loader) typeOf(pkg *sourcePackage, file *ast.File, expr ast.Expr) (typeRef, error) {
	pointer := false
	if star, ok := expr.(*ast.StarExpr); ok {
		expr, pointer = star.X, true
	}
	declaring, name, err := l.qualified(pkg, file, expr)
	if err != nil {
		return typeRef{}, err
	}
	if _, ok := declaring.types[name]; !ok {
		return typeRef{}, fmt.Errorf("%s: no type %s in package %s", l.fset.Position(expr.Pos()), name, declaring.importPath)
	}
	return typeRef{pkg: declaring, name: name, pointer: pointer}, nil
}

func (t typeRef) isStruct() bool {
	_, ok := t.pkg.types[t.name].node.Type.(*ast.StructType)
	return ok
}

// methodSet is the names of the methods of t: those declared on it (with a pointer
// receiver only when t is held by pointer) and those promoted from its embedded fields,
// structs and interfaces, of any package of the source trees. A type whose embedded field
// cannot be resolved is an error: a method it promotes would be missed.
func (l *loader) methodSet(t typeRef, depth int) (map[string]bool, error) {
	if depth > 10 {
		return nil, fmt.Errorf("%s: embedding too deep", t)
	}
	set := map[string]bool{}
	spec := t.pkg.types[t.name]
	switch typ := spec.node.Type.(type) {
	case *ast.InterfaceType:
		return l.interfaceMethods(t.pkg, spec.file, typ, depth)
	case *ast.StructType:
		for _, m := range t.pkg.methods[t.name] {
			if t.pointer || !m.pointer {
				set[m.name] = true
			}
		}
		for _, field := range typ.Fields.List {
			if len(field.Names) > 0 {
				continue
			}
			if std, err := l.standardLibrary(spec.file, field.Type); err != nil || std {
				// A type of Go's standard library (a sync.Mutex) cannot have a method of
				// the scheduler framework's interfaces, which it does not know.
				if err != nil {
					return nil, err
				}
				continue
			}
			embedded, err := l.typeOf(t.pkg, spec.file, field.Type)
			if err != nil {
				return nil, fmt.Errorf("%s embeds a field the generator cannot resolve: %w", t, err)
			}
			// A struct held by pointer reaches the pointer methods of what it embeds by value.
			embedded.pointer = embedded.pointer || t.pointer
			promoted, err := l.methodSet(embedded, depth+1)
			if err != nil {
				return nil, err
			}
			for name := range promoted {
				set[name] = true
			}
		}
		return set, nil
	case *ast.Ident, *ast.SelectorExpr:
		// A defined type of another named type has that type's fields, not its methods;
		// of an interface, its methods.
		underlying, err := l.typeOf(t.pkg, spec.file, typ)
		if err != nil {
			return nil, err
		}
		if _, ok := underlying.pkg.types[underlying.name].node.Type.(*ast.InterfaceType); ok {
			return l.methodSet(underlying, depth+1)
		}
		for _, m := range t.pkg.methods[t.name] {
			if t.pointer || !m.pointer {
				set[m.name] = true
			}
		}
		return set, nil
	}
	return nil, fmt.Errorf("%s: a %s, neither a struct nor an interface", t, reflect.TypeOf(spec.node.Type))
}

// standardLibrary reports whether a type expression names a type of Go's standard library,
// whose import path has no dot in its first element.
func (l *loader) standardLibrary(file *ast.File, expr ast.Expr) (bool, error) {
	if star, ok := expr.(*ast.StarExpr); ok {
		expr = star.X
	}
	selector, ok := expr.(*ast.SelectorExpr)
	if !ok {
		return false, nil
	}
	qualifier, ok := selector.X.(*ast.Ident)
	if !ok {
		return false, nil
	}
	imports, err := l.imports(file)
	if err != nil {
		return false, err
	}
	importPath, ok := imports[qualifier.Name]
	return ok && !strings.Contains(strings.Split(importPath, "/")[0], "."), nil
}

// interfaceMethods is the method names of an interface, those of the interfaces it
// embeds included.
func (l *loader) interfaceMethods(pkg *sourcePackage, file *ast.File, typ *ast.InterfaceType, depth int) (map[string]bool, error) {
	set := map[string]bool{}
	for _, field := range typ.Methods.List {
		for _, name := range field.Names {
			set[name.Name] = true
		}
		if len(field.Names) > 0 {
			continue
		}
		embedded, err := l.typeOf(pkg, file, field.Type)
		if err != nil {
			return nil, err
		}
		promoted, err := l.methodSet(embedded, depth+1)
		if err != nil {
			return nil, err
		}
		for name := range promoted {
			set[name] = true
		}
	}
	return set, nil
}

// render prints an expression for a message.
func render(expr ast.Expr) string {
	switch expr := expr.(type) {
	case *ast.Ident:
		return expr.Name
	case *ast.SelectorExpr:
		return render(expr.X) + "." + expr.Sel.Name
	case *ast.StarExpr:
		return "*" + render(expr.X)
	case *ast.UnaryExpr:
		return expr.Op.String() + render(expr.X)
	case *ast.CallExpr:
		return render(expr.Fun) + "(...)"
	case *ast.CompositeLit:
		return render(expr.Type) + "{...}"
	}
	return fmt.Sprintf("a %T", expr)
}
