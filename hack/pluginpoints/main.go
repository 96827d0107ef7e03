// Command pluginpoints writes internal/schedconfig/zz_generated_pluginpoints_*.go: for each
// kube-scheduler the operator knows the plugins of, every plugin it registers and the
// extension points (the fields of a profile's plugins) that plugin implements, read from
// the sources the scheduler is built from. kube-scheduler refuses to start with a plugin
// enabled at a point it does not implement ("plugin ... does not extend ... plugin"), so
// internal/schedconfig checks configurations against these tables before rollout.
//
// Everything is derived from the sources, never listed by hand:
//   - the extension points, from getExtensionPoints of the framework runtime
//     (pkg/scheduler/framework/runtime/framework.go): each pairs a field of the config's
//     Plugins (its JSON name read from k8s.io/kube-scheduler/config/v1) with the interface
//     its plugins must implement, whose methods (those of embedded interfaces included) are
//     read from the framework's interface source;
//   - the plugins, from the registry: NewInTreeRegistry's map (pkg/scheduler/framework/
//     plugins/registry.go) for the in-tree ones, the app.WithPlugin calls of
//     scheduler-plugins' cmd/scheduler/main.go for its own; names are resolved through their
//     constants, and each factory to the type it returns;
//   - the methods of a plugin's type, with those promoted from the structs and interfaces
//     it embeds; a plugin implements a point when it has every method of the point's
//     interface (by name: the sources are parsed, not type-checked);
//   - profiles' default plugins, from getDefaultPlugins (pkg/scheduler/apis/config/v1),
//     those enabled whatever the feature gates.
//   - for scheduler-plugins' own plugins, the fields of each one's args type (PLUGIN+"Args"
//     in its apis/config/v1, which its kube-scheduler decodes strictly): their JSON paths,
//     through inlined and nested structs, and their kinds (args.go).
//
// A registered name, factory or embedded field it cannot resolve is an error, never a guess;
// so is a plugin whose `var _ Interface = &Type{}` assertion names an extension point the
// derived methods miss.
//
// Sources: KUBERNETES_SRC (k8s.io/kubernetes at KUBERNETES_VERSION, default v1.37.0) and
// KUBE_SCHEDULER_SRC (its k8s.io/kube-scheduler staging module) default to the Go module
// cache, downloaded with `go mod download` when missing. scheduler-plugins' pins (its commit
// and the k8s.io/kubernetes it is built against) are read from hack/build-scheduler-plugins.sh;
// its in-tree plugins come from the module cache too, its own from SCHEDULER_PLUGINS_SRC, a
// checkout of the pinned commit. Without SCHEDULER_PLUGINS_SRC the file of its own plugins is
// left as it is. Run through `make plugin-points`.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

const defaultKubernetesVersion = "v1.37.0"

// Files the generator writes, in internal/schedconfig.
const (
	kubernetesFile           = "zz_generated_pluginpoints_kubernetes.go"
	schedulerPluginsCoreFile = "zz_generated_pluginpoints_schedulerplugins_core.go"
	schedulerPluginsFile     = "zz_generated_pluginpoints_schedulerplugins.go"
)

func main() {
	out := flag.String("out", "internal/schedconfig", "directory of the generated files")
	buildScript := flag.String("build-script", "hack/build-scheduler-plugins.sh", "the script that pins scheduler-plugins' sources")
	flag.Parse()
	if err := run(*out, *buildScript); err != nil {
		fmt.Fprintln(os.Stderr, "pluginpoints:", err)
		os.Exit(1)
	}
}

func run(out, buildScript string) error {
	files := map[string][]byte{}
	kubernetes, err := kubernetesTable(os.Getenv("KUBERNETES_VERSION"), os.Getenv("KUBERNETES_SRC"), os.Getenv("KUBE_SCHEDULER_SRC"))
	if err != nil {
		return err
	}
	files[kubernetesFile] = kubernetes
	pins, err := readPins(buildScript)
	if err != nil {
		return err
	}
	core, err := schedulerPluginsCoreTable(pins)
	if err != nil {
		return err
	}
	files[schedulerPluginsCoreFile] = core
	if src := os.Getenv("SCHEDULER_PLUGINS_SRC"); src != "" {
		own, err := schedulerPluginsTable(pins, src)
		if err != nil {
			return err
		}
		files[schedulerPluginsFile] = own
	} else {
		fmt.Fprintf(os.Stderr, "pluginpoints: SCHEDULER_PLUGINS_SRC is not set: %s (scheduler-plugins' own plugins) is left as it is\n", schedulerPluginsFile)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(out, name), content, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// pins are scheduler-plugins' sources as hack/build-scheduler-plugins.sh builds them.
type pins struct {
	commit            string
	kubernetesVersion string
}

// readPins reads SCHEDULER_PLUGINS_COMMIT and KUBERNETES_VERSION from the build script, the
// one place they are pinned.
func readPins(buildScript string) (pins, error) {
	text, err := os.ReadFile(buildScript)
	if err != nil {
		return pins{}, fmt.Errorf("read scheduler-plugins' pins: %w", err)
	}
	value := func(name string) (string, error) {
		match := regexp.MustCompile(`(?m)^` + name + `=([0-9A-Za-z.\-]+)$`).FindSubmatch(text)
		if match == nil {
			return "", fmt.Errorf("%s sets no %s", buildScript, name)
		}
		return string(match[1]), nil
	}
	var p pins
	if p.commit, err = value("SCHEDULER_PLUGINS_COMMIT"); err != nil {
		return pins{}, err
	}
	if p.kubernetesVersion, err = value("KUBERNETES_VERSION"); err != nil {
		return pins{}, err
	}
	return p, nil
}

// kubernetesSources locates k8s.io/kubernetes at version and its k8s.io/kube-scheduler,
// downloading them into the module cache when no directory is given.
func kubernetesSources(version, kubernetesDir, kubeSchedulerDir string) (string, string, error) {
	var err error
	if kubernetesDir == "" {
		if kubernetesDir, err = moduleDir("k8s.io/kubernetes", version); err != nil {
			return "", "", err
		}
	}
	if kubeSchedulerDir == "" {
		staging := filepath.Join(kubernetesDir, "staging", "src", "k8s.io", "kube-scheduler")
		if _, statErr := os.Stat(staging); statErr == nil {
			kubeSchedulerDir = staging
		} else if kubeSchedulerDir, err = moduleDir("k8s.io/kube-scheduler", stagingVersion(version)); err != nil {
			return "", "", err
		}
	}
	return kubernetesDir, kubeSchedulerDir, nil
}

// stagingVersion is the version of the staging modules released with Kubernetes version:
// v0.N.P for v1.N.P.
func stagingVersion(version string) string { return "v0." + strings.TrimPrefix(version, "v1.") }

// moduleDir is the directory of module@version in the module cache, downloaded if missing.
func moduleDir(module, version string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", module+"@"+version)
	// Outside any module, so that no go.mod or go.sum is touched.
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GO111MODULE=on")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	output, err := cmd.Output()
	var result struct{ Dir, Error string }
	if jsonErr := json.Unmarshal(output, &result); jsonErr == nil && result.Error != "" {
		return "", fmt.Errorf("download %s@%s: %s", module, version, result.Error)
	}
	if err != nil {
		return "", fmt.Errorf("download %s@%s: %w: %s", module, version, err, stderr.String())
	}
	if result.Dir == "" {
		return "", fmt.Errorf("download %s@%s: no directory in %q", module, version, output)
	}
	return result.Dir, nil
}

func kubernetesTable(version, kubernetesDir, kubeSchedulerDir string) ([]byte, error) {
	if version == "" {
		version = defaultKubernetesVersion
	}
	kubernetesDir, kubeSchedulerDir, err := kubernetesSources(version, kubernetesDir, kubeSchedulerDir)
	if err != nil {
		return nil, err
	}
	l := newLoader(map[string]string{"k8s.io/kubernetes": kubernetesDir, "k8s.io/kube-scheduler": kubeSchedulerDir})
	table, err := inTreeTable(l)
	if err != nil {
		return nil, fmt.Errorf("k8s.io/kubernetes %s: %w", version, err)
	}
	table.variable = "kubernetesPluginPoints"
	table.source = "k8s.io/kubernetes " + version
	table.doc = fmt.Sprintf("kubernetesPluginPoints are the plugins of Kubernetes' own kube-scheduler, %s, and the extension points each implements.", version)
	return table.format()
}

func schedulerPluginsCoreTable(p pins) ([]byte, error) {
	kubernetesDir, kubeSchedulerDir, err := kubernetesSources(p.kubernetesVersion, "", "")
	if err != nil {
		return nil, err
	}
	l := newLoader(map[string]string{"k8s.io/kubernetes": kubernetesDir, "k8s.io/kube-scheduler": kubeSchedulerDir})
	table, err := inTreeTable(l)
	if err != nil {
		return nil, fmt.Errorf("k8s.io/kubernetes %s: %w", p.kubernetesVersion, err)
	}
	table.variable = "schedulerPluginsCorePluginPoints"
	table.source = "k8s.io/kubernetes " + p.kubernetesVersion
	table.doc = fmt.Sprintf("schedulerPluginsCorePluginPoints are the in-tree plugins of scheduler-plugins' kube-scheduler as "+
		"hack/build-scheduler-plugins.sh builds it (scheduler-plugins %s on k8s.io/kubernetes %s), and the extension points each implements.",
		shortCommit(p.commit), p.kubernetesVersion)
	return table.format()
}

func schedulerPluginsTable(p pins, src string) ([]byte, error) {
	if head, err := gitHead(src); err == nil && head != p.commit {
		return nil, fmt.Errorf("SCHEDULER_PLUGINS_SRC %s is at %s, not at the pinned %s", src, head, p.commit)
	}
	kubernetesDir, kubeSchedulerDir, err := kubernetesSources(p.kubernetesVersion, "", "")
	if err != nil {
		return nil, err
	}
	l := newLoader(map[string]string{
		"k8s.io/kubernetes": kubernetesDir, "k8s.io/kube-scheduler": kubeSchedulerDir, "sigs.k8s.io/scheduler-plugins": src,
	})
	if l.requires, err = requiredModules(filepath.Join(src, "go.mod")); err != nil {
		return nil, err
	}
	points, err := extensionPoints(l)
	if err != nil {
		return nil, err
	}
	registered, err := outOfTreeRegistry(l)
	if err != nil {
		return nil, fmt.Errorf("scheduler-plugins %s: %w", p.commit, err)
	}
	table := table{points: points}
	if table.plugins, err = implemented(l, registered, points); err != nil {
		return nil, fmt.Errorf("scheduler-plugins %s: %w", p.commit, err)
	}
	if table.args, err = pluginArgs(l, registered); err != nil {
		return nil, fmt.Errorf("scheduler-plugins %s: %w", p.commit, err)
	}
	table.variable = "schedulerPluginsPluginPoints"
	table.source = "sigs.k8s.io/scheduler-plugins " + p.commit
	table.doc = fmt.Sprintf("schedulerPluginsPluginPoints are the plugins scheduler-plugins' kube-scheduler registers beside the in-tree "+
		"ones (scheduler-plugins %s, on k8s.io/kubernetes %s), the extension points each implements, and the fields of the args of those "+
		"that declare an args type.", shortCommit(p.commit), p.kubernetesVersion)
	return table.format()
}

// requiredModules reads the versions a go.mod requires, with its replacements by another
// version of the same module applied. The k8s.io/kubernetes and staging modules it names are
// read from the sources given instead (roots win). A line parser: golang.org/x/mod/modfile
// would be a new direct dependency of the operator's module for a generator's few lines.
func requiredModules(goMod string) (map[string]string, error) {
	text, err := os.ReadFile(goMod)
	if err != nil {
		return nil, fmt.Errorf("read scheduler-plugins' go.mod: %w", err)
	}
	requires := map[string]string{}
	requireLine := regexp.MustCompile(`^(?:require\s+)?([^\s()]+)\s+(v[^\s]+)(?:\s*//.*)?$`)
	replaceLine := regexp.MustCompile(`^(?:replace\s+)?([^\s()]+)(?:\s+v[^\s]+)?\s+=>\s+([^\s]+)\s+(v[^\s]+)$`)
	block := ""
	for _, line := range strings.Split(string(text), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == ")":
			block = ""
			continue
		case strings.HasSuffix(line, "("):
			block = strings.TrimSpace(strings.TrimSuffix(line, "("))
			continue
		}
		if match := replaceLine.FindStringSubmatch(line); match != nil && (block == "replace" || strings.HasPrefix(line, "replace ")) {
			if match[1] == match[2] {
				requires[match[1]] = match[3]
			}
			continue
		}
		if match := requireLine.FindStringSubmatch(line); match != nil && (block == "require" || strings.HasPrefix(line, "require ")) {
			if _, replaced := requires[match[1]]; !replaced {
				requires[match[1]] = match[2]
			}
		}
	}
	if len(requires) == 0 {
		return nil, fmt.Errorf("%s requires no modules", goMod)
	}
	return requires, nil
}

func shortCommit(commit string) string { return commit[:min(len(commit), 7)] }

// gitHead is the commit checked out at dir, when dir is a git work tree.
func gitHead(dir string) (string, error) {
	output, err := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
	return strings.TrimSpace(string(output)), err
}

// table is one generated file's table.
type table struct {
	variable, source, doc string
	points                []extensionPoint
	defaultMultiPoint     []string
	// plugins maps each plugin's name to the JSON names of the points it implements.
	plugins map[string][]string
	// args maps each plugin that declares an args type to its fields (pluginArgs); nil
	// for the in-tree tables, whose args kube-scheduler's own validation knows.
	args map[string]map[string]string
}

func inTreeTable(l *loader) (table, error) {
	points, err := extensionPoints(l)
	if err != nil {
		return table{}, err
	}
	registered, err := inTreeRegistry(l)
	if err != nil {
		return table{}, err
	}
	t := table{points: points}
	if t.plugins, err = implemented(l, registered, points); err != nil {
		return table{}, err
	}
	if t.defaultMultiPoint, err = defaultMultiPoint(l); err != nil {
		return table{}, err
	}
	for _, name := range t.defaultMultiPoint {
		if _, ok := t.plugins[name]; !ok {
			return table{}, fmt.Errorf("default plugin %s is not registered", name)
		}
	}
	return t, nil
}

// extensionPoint is a field of a profile's plugins and the interface its plugins implement.
type extensionPoint struct {
	field, json, iface string
	methods            map[string]bool
}

const (
	runtimePackage  = "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	configV1Package = "k8s.io/kube-scheduler/config/v1"
)

// extensionPoints reads getExtensionPoints of the framework runtime: a list of
// {&plugins.Field, &f.fieldPlugins}, the second a slice of the point's interface.
func extensionPoints(l *loader) ([]extensionPoint, error) {
	runtime, err := l.load(runtimePackage)
	if err != nil {
		return nil, err
	}
	fn, ok := runtime.methodDecls["frameworkImpl.getExtensionPoints"]
	if !ok {
		return nil, errors.New("no frameworkImpl.getExtensionPoints in " + runtimePackage)
	}
	impl, ok := runtime.types["frameworkImpl"].node.Type.(*ast.StructType)
	if !ok {
		return nil, errors.New("no struct frameworkImpl in " + runtimePackage)
	}
	configV1, err := l.load(configV1Package)
	if err != nil {
		return nil, err
	}
	pluginsStruct, ok := configV1.types["Plugins"].node.Type.(*ast.StructType)
	if !ok {
		return nil, errors.New("no struct Plugins in " + configV1Package)
	}
	var points []extensionPoint
	var failure error
	ast.Inspect(fn.node.Body, func(node ast.Node) bool {
		lit, ok := node.(*ast.CompositeLit)
		if !ok || len(lit.Elts) != 2 || failure != nil {
			return failure == nil
		}
		configField, okConfig := addressedField(lit.Elts[0])
		sliceField, okSlice := addressedField(lit.Elts[1])
		if !okConfig || !okSlice {
			return true
		}
		point, err := l.extensionPoint(runtime, fn.file, impl, pluginsStruct, configField, sliceField)
		if err != nil {
			failure = err
			return false
		}
		points = append(points, point)
		return false
	})
	if failure != nil {
		return nil, failure
	}
	if len(points) == 0 {
		return nil, errors.New("getExtensionPoints lists no extension points")
	}
	// In the order of the config's fields, the order a user reads them in.
	order := fieldOrder(pluginsStruct)
	slices.SortStableFunc(points, func(a, b extensionPoint) int { return order[a.field] - order[b.field] })
	return points, nil
}

func (l *loader) extensionPoint(runtime *sourcePackage, file *ast.File, impl, pluginsStruct *ast.StructType, configField, sliceField string) (extensionPoint, error) {
	point := extensionPoint{field: configField}
	jsonName, ok := structTag(pluginsStruct, configField, "json")
	if !ok {
		return point, fmt.Errorf("extension point %s is no field of %s.Plugins", configField, configV1Package)
	}
	point.json = strings.Split(jsonName, ",")[0]
	sliceType, ok := fieldType(impl, sliceField)
	array, isArray := sliceType.(*ast.ArrayType)
	if !ok || !isArray {
		return point, fmt.Errorf("frameworkImpl.%s is not a slice of plugins", sliceField)
	}
	iface, err := l.typeOf(runtime, file, array.Elt)
	if err != nil {
		return point, err
	}
	point.iface = iface.name
	if point.methods, err = l.methodSet(iface, 0); err != nil {
		return point, err
	}
	return point, nil
}

// addressedField is Field of &x.Field.
func addressedField(expr ast.Expr) (string, bool) {
	unary, ok := expr.(*ast.UnaryExpr)
	if !ok {
		return "", false
	}
	selector, ok := unary.X.(*ast.SelectorExpr)
	if !ok {
		return "", false
	}
	return selector.Sel.Name, true
}

func fieldOrder(s *ast.StructType) map[string]int {
	order := map[string]int{}
	for _, field := range s.Fields.List {
		for _, ident := range field.Names {
			order[ident.Name] = len(order)
		}
	}
	return order
}

func fieldType(s *ast.StructType, name string) (ast.Expr, bool) {
	for _, field := range s.Fields.List {
		for _, ident := range field.Names {
			if ident.Name == name {
				return field.Type, true
			}
		}
	}
	return nil, false
}

func structTag(s *ast.StructType, name, key string) (string, bool) {
	for _, field := range s.Fields.List {
		for _, ident := range field.Names {
			if ident.Name == name && field.Tag != nil {
				tag, err := strconv.Unquote(field.Tag.Value)
				if err != nil {
					return "", false
				}
				return reflect.StructTag(tag).Lookup(key)
			}
		}
	}
	return "", false
}

// registration is a plugin name and its factory, in the file that registers it.
type registration struct {
	name    string
	factory ast.Expr
	pkg     *sourcePackage
	file    *ast.File
}

const pluginsPackage = "k8s.io/kubernetes/pkg/scheduler/framework/plugins"

// inTreeRegistry reads NewInTreeRegistry's map of names to factories.
func inTreeRegistry(l *loader) ([]registration, error) {
	pkg, err := l.load(pluginsPackage)
	if err != nil {
		return nil, err
	}
	fn, ok := pkg.funcs["NewInTreeRegistry"]
	if !ok {
		return nil, errors.New("no NewInTreeRegistry in " + pluginsPackage)
	}
	var registered []registration
	var failure error
	ast.Inspect(fn.node.Body, func(node ast.Node) bool {
		lit, ok := node.(*ast.CompositeLit)
		if !ok || failure != nil {
			return failure == nil
		}
		if _, name, err := l.qualified(pkg, fn.file, lit.Type); err != nil || name != "Registry" {
			return true
		}
		for _, element := range lit.Elts {
			kv, ok := element.(*ast.KeyValueExpr)
			if !ok {
				failure = fmt.Errorf("%s: a registry entry that is not name: factory", l.fset.Position(element.Pos()))
				return false
			}
			name, err := l.stringConst(pkg, fn.file, kv.Key)
			if err != nil {
				failure = fmt.Errorf("registry key %s: %w", render(kv.Key), err)
				return false
			}
			registered = append(registered, registration{name, kv.Value, pkg, fn.file})
		}
		return false
	})
	if failure != nil {
		return nil, failure
	}
	if len(registered) == 0 {
		return nil, errors.New("NewInTreeRegistry registers no plugins")
	}
	return registered, nil
}

const schedulerPluginsMain = "sigs.k8s.io/scheduler-plugins/cmd/scheduler"

// outOfTreeRegistry reads the app.WithPlugin(name, factory) calls of scheduler-plugins'
// main.
func outOfTreeRegistry(l *loader) ([]registration, error) {
	pkg, err := l.load(schedulerPluginsMain)
	if err != nil {
		return nil, err
	}
	fn, ok := pkg.funcs["main"]
	if !ok {
		return nil, errors.New("no main in " + schedulerPluginsMain)
	}
	var registered []registration
	var failure error
	ast.Inspect(fn.node.Body, func(node ast.Node) bool {
		call, ok := node.(*ast.CallExpr)
		if !ok || failure != nil {
			return failure == nil
		}
		selector, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || selector.Sel.Name != "WithPlugin" {
			return true
		}
		if len(call.Args) != 2 {
			failure = fmt.Errorf("%s: WithPlugin with %d arguments", l.fset.Position(call.Pos()), len(call.Args))
			return false
		}
		name, err := l.stringConst(pkg, fn.file, call.Args[0])
		if err != nil {
			failure = fmt.Errorf("plugin name %s: %w", render(call.Args[0]), err)
			return false
		}
		registered = append(registered, registration{name, call.Args[1], pkg, fn.file})
		return false
	})
	if failure != nil {
		return nil, failure
	}
	if len(registered) == 0 {
		return nil, errors.New("main registers no plugins with app.WithPlugin")
	}
	return registered, nil
}

// implemented maps each registered plugin to the JSON names of the points whose
// interfaces its type implements, in the framework's order.
func implemented(l *loader, registered []registration, points []extensionPoint) (map[string][]string, error) {
	plugins := map[string][]string{}
	for _, r := range registered {
		if _, seen := plugins[r.name]; seen {
			return nil, fmt.Errorf("plugin %s is registered twice", r.name)
		}
		typ, err := l.factoryType(r.pkg, r.file, r.factory)
		if err != nil {
			return nil, fmt.Errorf("plugin %s: %w", r.name, err)
		}
		methods, err := l.methodSet(typ, 0)
		if err != nil {
			return nil, fmt.Errorf("plugin %s: %w", r.name, err)
		}
		if !methods["Name"] {
			return nil, fmt.Errorf("plugin %s: %s has no Name method, so it is not the plugin's type", r.name, typ)
		}
		implements := []string{}
		for _, point := range points {
			if hasAll(methods, point.methods) {
				implements = append(implements, point.json)
			}
		}
		if err := l.checkAssertions(typ, points, implements); err != nil {
			return nil, fmt.Errorf("plugin %s: %w", r.name, err)
		}
		plugins[r.name] = implements
	}
	return plugins, nil
}

func hasAll(methods, required map[string]bool) bool {
	for name := range required {
		if !methods[name] {
			return false
		}
	}
	return true
}

// checkAssertions fails when the plugin's package asserts that its type implements an
// extension point's interface (var _ fwk.FilterPlugin = &Type{}) that the derived methods
// miss: the assertion compiles, so the derivation would be wrong.
func (l *loader) checkAssertions(typ typeRef, points []extensionPoint, implements []string) error {
	for _, assertion := range typ.pkg.assertions {
		spec := assertion.node
		if len(spec.Values) != 1 || !assertsType(spec.Values[0], typ.name) {
			continue
		}
		iface, err := l.typeOf(typ.pkg, assertion.file, spec.Type)
		if err != nil {
			continue // an interface of a package outside the source trees: no extension point
		}
		for _, point := range points {
			if point.iface == iface.name && iface.pkg.importPath != typ.pkg.importPath && !slices.Contains(implements, point.json) {
				return fmt.Errorf("%s asserts that %s implements %s, but the methods found miss some of %v",
					l.fset.Position(spec.Pos()), typ, iface.name, sortedKeys(point.methods))
			}
		}
	}
	return nil
}

// assertsType reports whether value is &Type{...}, Type{...} or (*Type)(nil).
func assertsType(value ast.Expr, name string) bool {
	switch value := value.(type) {
	case *ast.UnaryExpr:
		return assertsType(value.X, name)
	case *ast.CompositeLit:
		ident, ok := value.Type.(*ast.Ident)
		return ok && ident.Name == name
	case *ast.CallExpr:
		paren, ok := value.Fun.(*ast.ParenExpr)
		if !ok {
			return false
		}
		star, ok := paren.X.(*ast.StarExpr)
		if !ok {
			return false
		}
		ident, ok := star.X.(*ast.Ident)
		return ok && ident.Name == name
	}
	return false
}

func sortedKeys(set map[string]bool) []string {
	keys := make([]string, 0, len(set))
	for key := range set {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	return keys
}

const defaultsPackage = "k8s.io/kubernetes/pkg/scheduler/apis/config/v1"

// defaultMultiPoint reads the plugins getDefaultPlugins enables at multiPoint whatever the
// feature gates (applyFeatureGates adds others, which are not listed).
func defaultMultiPoint(l *loader) ([]string, error) {
	pkg, err := l.load(defaultsPackage)
	if err != nil {
		return nil, err
	}
	fn, ok := pkg.funcs["getDefaultPlugins"]
	if !ok {
		return nil, errors.New("no getDefaultPlugins in " + defaultsPackage)
	}
	var names []string
	var failure error
	ast.Inspect(fn.node.Body, func(node ast.Node) bool {
		kv, ok := node.(*ast.KeyValueExpr)
		if !ok || failure != nil || names != nil {
			return failure == nil && names == nil
		}
		if key, ok := kv.Key.(*ast.Ident); !ok || key.Name != "MultiPoint" {
			return true
		}
		ast.Inspect(kv.Value, func(node ast.Node) bool {
			inner, ok := node.(*ast.KeyValueExpr)
			if !ok || failure != nil {
				return failure == nil
			}
			if key, ok := inner.Key.(*ast.Ident); ok && key.Name == "Name" {
				name, err := l.stringConst(pkg, fn.file, inner.Value)
				if err != nil {
					failure = err
					return false
				}
				names = append(names, name)
			}
			return true
		})
		return false
	})
	if failure != nil {
		return nil, failure
	}
	if len(names) == 0 {
		return nil, errors.New("getDefaultPlugins enables no plugin at multiPoint")
	}
	return names, nil
}

// format is the generated file of t.
func (t table) format() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("// Code generated by hack/pluginpoints; DO NOT EDIT.\n\npackage schedconfig\n\n")
	fmt.Fprintf(&b, "// %s\nvar %s = pluginPoints{\n", t.doc, t.variable)
	fmt.Fprintf(&b, "source: %q,\n", t.source)
	b.WriteString("extensionPoints: []string{")
	for _, point := range t.points {
		fmt.Fprintf(&b, "%q, ", point.json)
	}
	b.WriteString("},\n")
	if t.defaultMultiPoint != nil {
		b.WriteString("defaultMultiPoint: []string{")
		for _, name := range t.defaultMultiPoint {
			fmt.Fprintf(&b, "%q, ", name)
		}
		b.WriteString("},\n")
	}
	b.WriteString("plugins: map[string][]string{\n")
	for _, name := range sortedKeys(mapKeys(t.plugins)) {
		fmt.Fprintf(&b, "%q: {", name)
		for _, point := range t.plugins[name] {
			fmt.Fprintf(&b, "%q, ", point)
		}
		b.WriteString("},\n")
	}
	b.WriteString("},\n")
	if t.args != nil {
		b.WriteString("args: map[string]map[string]string{\n")
		for _, name := range slices.Sorted(maps.Keys(t.args)) {
			fmt.Fprintf(&b, "%q: {\n", name)
			for _, path := range slices.Sorted(maps.Keys(t.args[name])) {
				fmt.Fprintf(&b, "%q: %q,\n", path, t.args[name][path])
			}
			b.WriteString("},\n")
		}
		b.WriteString("},\n")
	}
	b.WriteString("}\n")
	formatted, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("format %s: %w", t.variable, err)
	}
	return formatted, nil
}

func mapKeys(m map[string][]string) map[string]bool {
	set := make(map[string]bool, len(m))
	for key := range m {
		set[key] = true
	}
	return set
}
