package schedconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	schedulerconfigv1 "k8s.io/kube-scheduler/config/v1"
)

// pluginPoints is what one kube-scheduler build registers, generated from its sources by
// hack/pluginpoints (zz_generated_pluginpoints_*.go; `make plugin-points`).
type pluginPoints struct {
	// source names the sources read: module and version or commit.
	source string
	// extensionPoints are the JSON names of the profile's plugins fields that the
	// framework builds plugins for, multiPoint aside.
	extensionPoints []string
	// defaultMultiPoint are the plugins a profile enables at multiPoint by default,
	// whatever the feature gates; nil for a table of out-of-tree plugins only.
	defaultMultiPoint []string
	// plugins maps each registered plugin to the extension points it implements.
	plugins map[string][]string
	// args maps each plugin whose args type the table's sources declare to the fields of
	// its args: the JSON path of each (dotted, PATH[] for the items of a list of structs)
	// and its kind (checkPluginArgs); nil for the in-tree tables.
	args map[string]map[string]string
}

// Scheduler is a kube-scheduler build whose plugins the operator knows.
type Scheduler struct {
	// SchedulerPlugins is scheduler-plugins' kube-scheduler; otherwise Kubernetes' own.
	SchedulerPlugins bool
	// KubernetesMinor is the Kubernetes minor version it is built for; 0 when unknown.
	KubernetesMinor int
}

// table is the plugins of s. Generated tables exist for Kubernetes 1.37.0 and for
// scheduler-plugins 903da7d on Kubernetes 1.35.4 (the pins of hack/pluginpoints and
// hack/build-scheduler-plugins.sh); an image of another version is checked against the
// nearest: every scheduler-plugins image against scheduler-plugins' table, Kubernetes' own
// image against 1.35.4's in-tree table for 1.35 and older, against 1.37.0's otherwise
// (unknown versions included, the newest being the likeliest). Plugins rarely lose an
// extension point between versions, and the checks only refuse a plugin at a point its
// table lacks.
func (s Scheduler) table() pluginPoints {
	switch {
	case s.SchedulerPlugins:
		return schedulerPluginsTable
	case s.KubernetesMinor > 0 && s.KubernetesMinor <= 35:
		return schedulerPluginsCorePluginPoints
	}
	return kubernetesPluginPoints
}

// schedulerPluginsTable is scheduler-plugins' kube-scheduler: its in-tree core with its own
// plugins registered beside.
var schedulerPluginsTable = func() pluginPoints {
	table := schedulerPluginsCorePluginPoints
	table.source = schedulerPluginsPluginPoints.source + " on " + schedulerPluginsCorePluginPoints.source
	table.plugins = maps.Clone(schedulerPluginsCorePluginPoints.plugins)
	maps.Copy(table.plugins, schedulerPluginsPluginPoints.plugins)
	table.args = schedulerPluginsPluginPoints.args
	return table
}()

// removedInTreePlugins are in-tree plugins that Kubernetes 1.31 removed: kube-scheduler 1.30
// (a default image of the operator, for clusters at 1.30) still has them, later ones refuse
// them in v1 configurations ("was invalid in version"). They count as known (OutOfTreePlugins),
// and are refused where the image is known to be 1.31 or newer.
var removedInTreePlugins = map[string]bool{"AzureDiskLimits": true, "CinderLimits": true, "EBSLimits": true, "GCEPDLimits": true}

const removedInTreeMinor = 31

// maxStartProblems bounds how many problems StartProblems lists.
const maxStartProblems = 20

// StartProblems lists what would make kube-scheduler s refuse config at start, found as it
// finds them (pkg/scheduler/apis/config/validation and the framework runtime's NewFramework
// and profile map of Kubernetes), on the configuration as kube-scheduler sees it after its
// own defaulting (default plugins merged into each profile's, mergePlugins). Each problem
// is a sentence that says what to change; at most maxStartProblems, the last saying how
// many more there are. Plugins s does not have are left to the checks of plugin names
// (UnknownPlugins). The args of scheduler-plugins' own plugins, which its kube-scheduler
// decodes strictly at start, are checked against their types' fields (argsProblems); the
// in-tree plugins' args are left to kube-scheduler.
func StartProblems(config *schedulerconfigv1.KubeSchedulerConfiguration, s Scheduler) []string {
	if config == nil {
		return nil
	}
	table := s.table()
	var problems []string
	problems = append(problems, globalProblems(config)...)
	var first *effectiveProfile
	for i := range config.Profiles {
		profile := newEffectiveProfile(&config.Profiles[i], i, table, s)
		problems = append(problems, profile.problems...)
		if first == nil {
			first = profile
			continue
		}
		problems = append(problems, first.queueSortDiffers(profile)...)
	}
	if len(problems) > maxStartProblems {
		problems = append(problems[:maxStartProblems], fmt.Sprintf("%d more problems", len(problems)-maxStartProblems))
	}
	return problems
}

// globalProblems are the refusals of ValidateKubeSchedulerConfiguration of fields outside
// the profiles (leader election and client connection are the operator's).
func globalProblems(config *schedulerconfigv1.KubeSchedulerConfiguration) []string {
	var problems []string
	if config.Parallelism != nil && *config.Parallelism <= 0 {
		problems = append(problems, fmt.Sprintf("parallelism is %d; set it above 0 or remove it (default 16)", *config.Parallelism))
	}
	problems = append(problems, percentageProblem("percentageOfNodesToScore", config.PercentageOfNodesToScore)...)
	initial, maximum := int64(1), int64(10) // kube-scheduler's defaults
	if config.PodInitialBackoffSeconds != nil {
		initial = *config.PodInitialBackoffSeconds
	}
	if config.PodMaxBackoffSeconds != nil {
		maximum = *config.PodMaxBackoffSeconds
	}
	if initial <= 0 {
		problems = append(problems, fmt.Sprintf("podInitialBackoffSeconds is %d; set it above 0 or remove it (default 1)", initial))
	}
	if maximum < initial {
		problems = append(problems, fmt.Sprintf("podMaxBackoffSeconds (%d) is less than podInitialBackoffSeconds (%d); raise it or remove it (default 10)", maximum, initial))
	}
	return problems
}

func percentageProblem(field string, percentage *int32) []string {
	if percentage != nil && (*percentage < 0 || *percentage > 100) {
		return []string{fmt.Sprintf("%s is %d; use 0 to 100 (0: kube-scheduler's adaptive default)", field, *percentage)}
	}
	return nil
}

// effectiveProfile is a profile as kube-scheduler's framework builds it.
type effectiveProfile struct {
	name  string
	table pluginPoints
	// plugins are the profile's plugins after kube-scheduler's defaulting.
	plugins schedulerconfigv1.Plugins
	// queueSort is the one queue sort plugin the profile runs, "" when it has not one.
	queueSort     string
	queueSortArgs []byte
	problems      []string
}

func newEffectiveProfile(profile *schedulerconfigv1.KubeSchedulerProfile, index int, table pluginPoints, s Scheduler) *effectiveProfile {
	p := &effectiveProfile{name: fmt.Sprintf("profile %d", index), table: table}
	if profile.SchedulerName != nil {
		p.name = fmt.Sprintf("profile %q", shorten(*profile.SchedulerName))
	}
	p.plugins = mergeDefaults(table.defaultMultiPoint, profile.Plugins)
	p.problems = append(p.problems, prefixed(p.name, percentageProblem("percentageOfNodesToScore", profile.PercentageOfNodesToScore))...)
	p.problems = append(p.problems, p.pluginConfigProblems(profile.PluginConfig)...)
	p.problems = append(p.problems, prefixed(p.name, p.argsProblems(profile.PluginConfig))...)
	p.problems = append(p.problems, p.removedPluginProblems(s)...)
	p.problems = append(p.problems, p.extensionPointProblems()...)
	p.problems = append(p.problems, p.countProblems()...)
	for _, config := range profile.PluginConfig {
		if config.Name == p.queueSort {
			p.queueSortArgs = canonicalArgs(config.Args)
		}
	}
	return p
}

func prefixed(name string, problems []string) []string {
	for i := range problems {
		problems[i] = name + ": " + problems[i]
	}
	return problems
}

// pluginConfigProblems: kube-scheduler refuses two pluginConfig entries of one plugin.
func (p *effectiveProfile) pluginConfigProblems(configs []schedulerconfigv1.PluginConfig) []string {
	var problems []string
	seen := map[string]bool{}
	for _, config := range configs {
		if seen[config.Name] {
			problems = append(problems, fmt.Sprintf("%s has two pluginConfig entries for %s; merge them into one", p.name, shorten(config.Name)))
		}
		seen[config.Name] = true
	}
	return problems
}

func (p *effectiveProfile) removedPluginProblems(s Scheduler) []string {
	if s.KubernetesMinor < removedInTreeMinor {
		return nil
	}
	var problems []string
	for _, point := range pointSets(&p.plugins) {
		for _, plugin := range point.set.Enabled {
			if removedInTreePlugins[plugin.Name] {
				problems = append(problems, fmt.Sprintf("%s enables %s at %s, which Kubernetes 1.%d removed (the image is built for 1.%d); remove it (NodeVolumeLimits took its place)",
					p.name, plugin.Name, point.name, removedInTreeMinor, s.KubernetesMinor))
			}
		}
	}
	return problems
}

// extensionPointProblems: each plugin enabled at an extension point must implement it, and
// be enabled there once (updatePluginList); multiPoint enables a plugin at each point it
// implements, where it must not be enabled twice (expandMultiPointPlugins).
func (p *effectiveProfile) extensionPointProblems() []string {
	var problems []string
	for _, point := range pointSets(&p.plugins) {
		if point.name == multiPoint {
			continue
		}
		supported := slices.Contains(p.table.extensionPoints, point.name)
		seen := map[string]bool{}
		for _, plugin := range point.set.Enabled {
			implements, known := p.table.plugins[plugin.Name]
			switch {
			case !known:
				continue // refused as a plugin the image lacks, by UnknownPlugins
			case !supported:
				problems = append(problems, fmt.Sprintf("%s enables %s at %s, an extension point kube-scheduler %s does not have; enable it under multiPoint or at one of %s",
					p.name, plugin.Name, point.name, p.table.source, strings.Join(implements, ", ")))
			case !slices.Contains(implements, point.name):
				problems = append(problems, fmt.Sprintf("%s enables %s at %s, which it does not implement. %s; remove it from %s",
					p.name, plugin.Name, point.name, implementsSentence(plugin.Name, implements), point.name))
			case seen[plugin.Name]:
				problems = append(problems, fmt.Sprintf("%s enables %s twice at %s; keep one", p.name, plugin.Name, point.name))
			}
			seen[plugin.Name] = true
		}
	}
	for _, point := range p.table.extensionPoints {
		if twice := p.multiPointTwice(point); len(twice) > 0 {
			problems = append(problems, fmt.Sprintf("%s enables %s twice under multiPoint (kube-scheduler enables it at %s); keep one",
				p.name, strings.Join(twice, ", "), point))
		}
	}
	return problems
}

func implementsSentence(plugin string, implements []string) string {
	if len(implements) == 0 {
		return plugin + " implements no extension point"
	}
	if len(implements) == 1 {
		return fmt.Sprintf("%s implements %s only (multiPoint enables it there)", plugin, implements[0])
	}
	return fmt.Sprintf("%s implements %s (and multiPoint enables it at each)", plugin, strings.Join(implements, ", "))
}

// multiPointTwice are the plugins that multiPoint enables twice at point: listed twice under
// multiPoint, implementing point, neither disabled nor enabled explicitly there. Reported
// once, at the first such point.
func (p *effectiveProfile) multiPointTwice(point string) []string {
	set := p.pointSet(point)
	if set == nil || disabledAll(set) {
		return nil
	}
	seen := map[string]bool{}
	var twice []string
	for _, plugin := range p.plugins.MultiPoint.Enabled {
		if !p.implements(plugin.Name, point) || names(set.Disabled, plugin.Name) || names(set.Enabled, plugin.Name) {
			continue
		}
		if seen[plugin.Name] && !slices.Contains(twice, plugin.Name) && p.firstPoint(plugin.Name) == point {
			twice = append(twice, plugin.Name)
		}
		seen[plugin.Name] = true
	}
	return twice
}

func (p *effectiveProfile) firstPoint(plugin string) string {
	for _, point := range p.table.extensionPoints {
		set := p.pointSet(point)
		if p.implements(plugin, point) && set != nil && !disabledAll(set) && !names(set.Disabled, plugin) && !names(set.Enabled, plugin) {
			return point
		}
	}
	return ""
}

func (p *effectiveProfile) implements(plugin, point string) bool {
	return slices.Contains(p.table.plugins[plugin], point)
}

// effective is the plugins the framework runs at point (known to the table): those enabled
// there, then those multiPoint enables there (expandMultiPointPlugins).
func (p *effectiveProfile) effective(point string) []string {
	set := p.pointSet(point)
	if set == nil {
		return nil
	}
	var plugins []string
	for _, plugin := range set.Enabled {
		if _, known := p.table.plugins[plugin.Name]; known && !slices.Contains(plugins, plugin.Name) {
			plugins = append(plugins, plugin.Name)
		}
	}
	if disabledAll(set) {
		return plugins
	}
	for _, plugin := range p.plugins.MultiPoint.Enabled {
		if p.implements(plugin.Name, point) && !names(set.Disabled, plugin.Name) && !slices.Contains(plugins, plugin.Name) {
			plugins = append(plugins, plugin.Name)
		}
	}
	return plugins
}

// countProblems: exactly one queue sort plugin, at least one bind plugin and at most one
// placement generate plugin per profile (NewFramework).
func (p *effectiveProfile) countProblems() []string {
	if p.hasUnknownPlugin() {
		return nil // the counts would be wrong; the unknown plugin is refused anyway
	}
	var problems []string
	queueSort := p.effective("queueSort")
	switch len(queueSort) {
	case 1:
		p.queueSort = queueSort[0]
	case 0:
		problems = append(problems, fmt.Sprintf("%s runs no queue sort plugin; enable one (PrioritySort, kube-scheduler's default, under multiPoint or queueSort) and do not disable it", p.name))
	default:
		problems = append(problems, fmt.Sprintf("%s runs %d queue sort plugins (%s) where kube-scheduler takes exactly one; "+
			"keep one and disable the others under queueSort (a default one, PrioritySort, is enabled through multiPoint unless disabled)",
			p.name, len(queueSort), strings.Join(queueSort, ", ")))
	}
	if len(p.effective("bind")) == 0 {
		problems = append(problems, fmt.Sprintf("%s runs no bind plugin; enable one (DefaultBinder, kube-scheduler's default, under multiPoint or bind) and do not disable it", p.name))
	}
	if generators := p.effective("placementGenerate"); len(generators) > 1 {
		problems = append(problems, fmt.Sprintf("%s runs %d placement generate plugins (%s) where kube-scheduler takes at most one; keep one",
			p.name, len(generators), strings.Join(generators, ", ")))
	}
	return problems
}

func (p *effectiveProfile) hasUnknownPlugin() bool {
	for _, point := range pointSets(&p.plugins) {
		for _, plugin := range point.set.Enabled {
			if _, known := p.table.plugins[plugin.Name]; !known {
				return true
			}
		}
	}
	return false
}

// queueSortDiffers: every profile must have the same queueSort section, run the same queue
// sort plugin, with the same args (validateCommonQueueSort, and the profile map's check).
func (p *effectiveProfile) queueSortDiffers(other *effectiveProfile) []string {
	if !equality.Semantic.DeepEqual(p.plugins.QueueSort, other.plugins.QueueSort) {
		return []string{fmt.Sprintf("%s and %s have different queueSort sections, where kube-scheduler requires one queue sort for all profiles; make them the same",
			p.name, other.name)}
	}
	if p.queueSort != "" && other.queueSort != "" && p.queueSort != other.queueSort {
		return []string{fmt.Sprintf("%s runs queue sort plugin %s and %s runs %s, where kube-scheduler requires one queue sort for all profiles; enable the same in both",
			p.name, p.queueSort, other.name, other.queueSort)}
	}
	if p.queueSort != "" && !bytes.Equal(p.queueSortArgs, other.queueSortArgs) {
		return []string{fmt.Sprintf("%s and %s give queue sort plugin %s different args in pluginConfig, where kube-scheduler requires the same in all profiles; make them the same",
			p.name, other.name, p.queueSort)}
	}
	return nil
}

// canonicalArgs is args as compact JSON, nil when there are none.
func canonicalArgs(args runtime.RawExtension) []byte {
	var data []byte
	switch {
	case args.Object != nil:
		data, _ = json.Marshal(args.Object)
	case len(args.Raw) > 0:
		data = args.Raw
	default:
		return nil
	}
	var compact bytes.Buffer
	if json.Compact(&compact, data) != nil {
		return data
	}
	return compact.Bytes()
}

const multiPoint = "multiPoint"

// namedSet is one extension point's plugin set and its JSON name.
type namedSet struct {
	name string
	set  *schedulerconfigv1.PluginSet
}

// pluginsType is the config's Plugins, whose every PluginSet field is an extension point
// (multiPoint included): read by reflection, so a field a new version adds is checked too.
var pluginsType = reflect.TypeFor[schedulerconfigv1.Plugins]()

// pointSets are the plugin sets of plugins by their JSON names, in the fields' order.
func pointSets(plugins *schedulerconfigv1.Plugins) []namedSet {
	value := reflect.ValueOf(plugins).Elem()
	var sets []namedSet
	for i := range pluginsType.NumField() {
		field := pluginsType.Field(i)
		if field.Type != reflect.TypeFor[schedulerconfigv1.PluginSet]() {
			continue
		}
		name := strings.Split(field.Tag.Get("json"), ",")[0]
		sets = append(sets, namedSet{name: name, set: value.Field(i).Addr().Interface().(*schedulerconfigv1.PluginSet)})
	}
	return sets
}

func (p *effectiveProfile) pointSet(point string) *schedulerconfigv1.PluginSet {
	for _, named := range pointSets(&p.plugins) {
		if named.name == point {
			return named.set
		}
	}
	return nil
}

func disabledAll(set *schedulerconfigv1.PluginSet) bool { return names(set.Disabled, "*") }

// mergeDefaults is custom after kube-scheduler's defaulting (mergePlugins and mergePluginSet
// of pkg/scheduler/apis/config/v1/default_plugins.go): the defaults are all at multiPoint,
// where the custom set's disabled ones (all with "*") are removed, custom ones of the same
// name replace them in place, and the other custom ones follow, duplicates kept. The
// other points keep the custom sets.
func mergeDefaults(defaultMultiPoint []string, custom *schedulerconfigv1.Plugins) schedulerconfigv1.Plugins {
	var merged schedulerconfigv1.Plugins
	if custom != nil {
		merged = *custom.DeepCopy()
	}
	customMultiPoint := merged.MultiPoint
	var enabled []schedulerconfigv1.Plugin
	replaced := map[int]bool{}
	if !disabledAll(&customMultiPoint) {
		for _, name := range defaultMultiPoint {
			if names(customMultiPoint.Disabled, name) {
				continue
			}
			plugin := schedulerconfigv1.Plugin{Name: name}
			if i := lastIndex(customMultiPoint.Enabled, name); i >= 0 {
				plugin = customMultiPoint.Enabled[i]
				replaced[i] = true
			}
			enabled = append(enabled, plugin)
		}
	}
	for i, plugin := range customMultiPoint.Enabled {
		if !replaced[i] {
			enabled = append(enabled, plugin)
		}
	}
	merged.MultiPoint.Enabled = enabled
	return merged
}

// lastIndex is the index of the last plugin named name: kube-scheduler's map of custom
// plugins by name keeps the last.
func lastIndex(plugins []schedulerconfigv1.Plugin, name string) int {
	for i := len(plugins) - 1; i >= 0; i-- {
		if plugins[i].Name == name {
			return i
		}
	}
	return -1
}
