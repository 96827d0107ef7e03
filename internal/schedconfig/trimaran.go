package schedconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	schedulerconfigv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/usertext"
)

// TrimaranPlugins are scheduler-plugins' load-aware plugins. Each instance reads node load
// through a load-watcher of its own, configured by the watcherAddress and metricProvider
// of its args (TrimaranSpec in scheduler-plugins' apis/config/v1): an external service at
// watcherAddress, or, without it, one built into the scheduler, of which a process may run
// only one (checkBuiltInLoadWatchers).
var TrimaranPlugins = []string{"TargetLoadPacking", "LoadVariationRiskBalancing", "LowRiskOverCommitment"}

// preScoreTrimaranPlugin is the one Trimaran plugin that is a PreScore plugin as well as a
// Score plugin, so that multiPoint enables it at preScore too.
const preScoreTrimaranPlugin = "LowRiskOverCommitment"

// defaultMetricProvider is the provider of a Trimaran plugin whose args set neither
// watcherAddress nor metricProvider.type (SetDefaultTrimaranSpec in scheduler-plugins'
// apis/config/v1/defaults.go).
const defaultMetricProvider = v1.KubernetesMetricsServerProvider

// defaultPrometheusAddress is where load-watcher queries Prometheus when
// metricProvider.address is empty: a Service in the scheduler's own namespace.
const defaultPrometheusAddress = "http://prometheus-k8s:9090"

// addressKind is what the messages about one kind of address suggest.
type addressKind struct {
	// example is a real address of this kind; it must not look like a placeholder.
	example string
	// instead of credentials in the address.
	instead string
}

var (
	prometheusAddresses = addressKind{
		example: "http://prometheus-k8s.monitoring.svc:9090",
		instead: "give the provider a bearer token in metricProvider.token instead, which is never shown",
	}
	signalFxAddresses = addressKind{example: "https://api.us1.signalfx.com", instead: prometheusAddresses.instead}
	watcherAddresses  = addressKind{
		example: "http://load-watcher.load-watcher.svc:2020",
		instead: "the plugin has no other way to authenticate to a load-watcher service, so restrict who can reach it, with a NetworkPolicy for example",
	}
)

// maxPlaceholderInMessage bounds the placeholder a message quotes.
const maxPlaceholderInMessage = 60

// MetricSource is where one Trimaran plugin of one profile reads node load, as the
// plugin's args say. It holds the provider's token: print it with %v or String, which
// leave the token and any credentials out, never field by field into a message or log.
type MetricSource struct {
	// Profile is the schedulerName of the profile.
	Profile string
	// Plugin is one of TrimaranPlugins.
	Plugin string
	// WatcherAddress is the URL of an external load-watcher service. When set, the
	// plugin reads load from it and ignores the provider fields below.
	WatcherAddress string
	// Provider is metricProvider.type as written: Prometheus, KubernetesMetricsServer or
	// SignalFx; KubernetesMetricsServer, upstream's default, when the args set neither it
	// nor watcherAddress; empty when watcherAddress is set and the type is not.
	Provider v1.MetricProvider
	// Address is metricProvider.address: the provider's URL. KubernetesMetricsServer does
	// not use it (load-watcher reads the metrics API with the scheduler's in-cluster
	// credentials). Left empty, load-watcher queries http://prometheus-k8s:9090 for
	// Prometheus and https://api.signalfx.com for SignalFx.
	Address string
	// Token is metricProvider.token, the provider's bearer token (SignalFx's X-SF-Token).
	// It is secret: never put it in a message, an Event or a log.
	Token string
	// InsecureSkipVerify is metricProvider.insecureSkipVerify as written. When nil,
	// upstream's default applies: true for Prometheus, whose certificate load-watcher then
	// does not verify. SignalFx never verifies its certificate, whatever the value.
	InsecureSkipVerify *bool
}

// String describes the source for logs and messages without its token, and without the
// credentials, query and fragment of its addresses.
func (s MetricSource) String() string {
	if s.WatcherAddress != "" {
		return fmt.Sprintf("profile %s, plugin %s: load-watcher %s", shorten(s.Profile), s.Plugin, quotableAddress(s.WatcherAddress))
	}
	text := fmt.Sprintf("profile %s, plugin %s: %s", shorten(s.Profile), s.Plugin, s.Provider)
	if s.Address != "" {
		text += " at " + quotableAddress(s.Address)
	}
	if s.Token != "" {
		text += " with a token"
	}
	return text
}

// ProbedAddress is the Prometheus address the operator should probe to learn whether
// this source's metrics are usable: the address of provider Prometheus, when the plugin
// reads it through its built-in load-watcher (no watcherAddress) and CheckAddresses
// finds nothing wrong with it. Other sources are not probed.
func (s MetricSource) ProbedAddress() (string, bool) {
	if s.WatcherAddress != "" || s.Provider != v1.PrometheusProvider || s.CheckAddresses() != nil {
		return "", false
	}
	return s.Address, true
}

// CheckAddresses checks the addresses this source reads load from with
// CheckMetricsAddress: watcherAddress when it is set, otherwise the address of provider
// Prometheus, which must be set, and of SignalFx, when set.
func (s MetricSource) CheckAddresses() error {
	where := fmt.Sprintf("of plugin %s in profile %s", s.Plugin, shorten(s.Profile))
	switch {
	case s.WatcherAddress != "":
		return checkAddress("watcherAddress "+where, s.WatcherAddress, watcherAddresses)
	case s.Provider == v1.PrometheusProvider && s.Address == "":
		return refusal.New(v1.ReasonMetricsAddressInvalid,
			"metricProvider.address %s is empty, so load-watcher queries %s, a Service of that name in the scheduler's own namespace; "+
				"set it to your Prometheus's URL, for example %s",
			where, defaultPrometheusAddress, prometheusAddresses.example)
	case s.Provider == v1.PrometheusProvider:
		return checkAddress("metricProvider.address "+where, s.Address, prometheusAddresses)
	case s.Provider == v1.SignalFxProvider && s.Address != "":
		// Left empty, the address is SignalFx's own API, which is a real one.
		return checkAddress("metricProvider.address "+where, s.Address, signalFxAddresses)
	}
	return nil
}

// MetricSources lists where the Trimaran plugins of a configuration's profiles read node
// load: for each profile in order, each of TrimaranPlugins (in that order) that the
// profile runs at score or preScore, with its args from the profile's pluginConfig, or
// upstream's defaults when it has none. A plugin runs at an extension point when that
// point enables it, whatever the point's disabled list says (which only removes default
// plugins), or when multiPoint enables it and the point disables neither it nor "*".
// The args of every Trimaran plugin in a profile's pluginConfig are checked as
// scheduler-plugins' kube-scheduler decodes them at start, whether a plugin is enabled or
// not (checkArgsFields): args that are not a mapping, a field the plugin's args do not
// have, a field of a wrong type, and two pluginConfig entries for one plugin are refusals
// (ReasonInvalidConfig), as the scheduler would not start; so are a name given twice in
// one mapping and a quantity out of the bounds of v1.CheckQuantity (minutes to parse, for
// kube-scheduler as for the operator). Those of a plugin the profile enables, at any
// extension point, are also checked as the plugin reads them when kube-scheduler creates
// it: a metricProvider.type the plugin refuses, and two plugin instances with a built-in
// load-watcher (checkBuiltInLoadWatchers), are refusals too.
// Kubernetes' own kube-scheduler ignores args of plugins it does not have, but such a
// configuration is wrong for the images that have them.
func MetricSources(config *schedulerconfigv1.KubeSchedulerConfiguration) ([]MetricSource, error) {
	enabled, err := enabledMetricSources(config)
	if err != nil {
		return nil, err
	}
	var sources, builtInWatchers []MetricSource
	for _, instance := range enabled {
		if instance.WatcherAddress == "" {
			builtInWatchers = append(builtInWatchers, instance.MetricSource)
		}
		if instance.scoring {
			sources = append(sources, instance.MetricSource)
		}
	}
	if err := checkBuiltInLoadWatchers(builtInWatchers); err != nil {
		return nil, err
	}
	return sources, nil
}

// enabledMetricSource is one instance of a Trimaran plugin that kube-scheduler builds.
type enabledMetricSource struct {
	MetricSource
	// scoring is whether it runs at score or preScore (runsAtScoring).
	scoring bool
}

// enabledMetricSources lists the Trimaran plugin instances of config's profiles, for each
// profile in order, each of TrimaranPlugins (in that order) that the profile enables at
// some extension point, after the checks MetricSources describes but the one of built-in
// load-watchers.
func enabledMetricSources(config *schedulerconfigv1.KubeSchedulerConfiguration) ([]enabledMetricSource, error) {
	if config == nil {
		return nil, nil
	}
	var enabled []enabledMetricSource
	for _, profile := range config.Profiles {
		name := ptr.Deref(profile.SchedulerName, "")
		for _, plugin := range TrimaranPlugins {
			args, err := pluginArgs(profile, plugin)
			if err != nil {
				return nil, err
			}
			if err := checkArgsFields(name, plugin, args); err != nil {
				return nil, err
			}
			if !enables(profile.Plugins, plugin) {
				continue
			}
			source, err := decodeMetricSource(name, plugin, args)
			if err != nil {
				return nil, err
			}
			enabled = append(enabled, enabledMetricSource{MetricSource: source, scoring: runsAtScoring(profile.Plugins, plugin)})
		}
	}
	return enabled, nil
}

// maxNamedInstances bounds the plugin instances a message names.
const maxNamedInstances = 6

// checkBuiltInLoadWatchers refuses a configuration with more than one instance of a
// Trimaran plugin without watcherAddress, given in builtIn. Such an instance reads load
// through a load-watcher of its own, built in (NewCollector in scheduler-plugins'
// pkg/trimaran, load-watcher's NewLibraryClient), and kube-scheduler creates an instance
// of each plugin for each profile that enables it, never shared. Each built-in
// load-watcher registers its HTTP handlers, /watcher and /watcher/health, on the
// process-wide http.DefaultServeMux (Watcher.StartWatching, load-watcher v0.2.4), so the
// second instance panics ("pattern "/watcher" ... conflicts with pattern "/watcher"")
// while kube-scheduler builds its profiles, before leader election: every replica
// crashes at start. Instances with watcherAddress only send requests to that service,
// and scheduler-plugins' Peaks plugin always does (without watcherAddress it refuses to
// start), so neither counts.
func checkBuiltInLoadWatchers(builtIn []MetricSource) error {
	if len(builtIn) < 2 {
		return nil
	}
	named := make([]string, 0, maxNamedInstances)
	for _, source := range builtIn[:min(len(builtIn), maxNamedInstances)] {
		named = append(named, fmt.Sprintf("%s in profile %s", source.Plugin, shorten(source.Profile)))
	}
	instances := strings.Join(named[:len(named)-1], ", ") + " and " + named[len(named)-1]
	if more := len(builtIn) - len(named); more > 0 {
		instances = fmt.Sprintf("%s and %d more", strings.Join(named, ", "), more)
	}
	return refusal.New(v1.ReasonInvalidConfig,
		"the Trimaran plugins %s read load through the built-in load-watcher (their args set no watcherAddress), "+
			"and each instance starts one of its own in the one scheduler process (a plugin enabled in two profiles has two instances): "+
			"the second registers load-watcher's HTTP handler again and kube-scheduler would crash at start "+
			`(pattern "/watcher" conflicts with pattern "/watcher"). Keep one Trimaran plugin with the built-in load-watcher per configuration: `+
			"give the others watcherAddress, the URL of an external load-watcher service (for example %s), "+
			"or run them in a second SecondaryScheduler, whose scheduler is a process of its own",
		instances, watcherAddresses.example)
}

// runsAtScoring follows kube-scheduler's merge of a profile's plugins with the defaults
// (custom enabled plugins are kept whatever the disabled list says) and its expansion
// of multiPoint (skipped at a point that disables the plugin or "*").
func runsAtScoring(plugins *schedulerconfigv1.Plugins, plugin string) bool {
	if plugins == nil {
		return false
	}
	if names(plugins.Score.Enabled, plugin) || names(plugins.PreScore.Enabled, plugin) {
		return true
	}
	if !names(plugins.MultiPoint.Enabled, plugin) {
		return false
	}
	if !disables(plugins.Score, plugin) {
		return true
	}
	return plugin == preScoreTrimaranPlugin && !disables(plugins.PreScore, plugin)
}

func names(list []schedulerconfigv1.Plugin, name string) bool {
	return slices.ContainsFunc(list, func(plugin schedulerconfigv1.Plugin) bool { return plugin.Name == name })
}

func disables(set schedulerconfigv1.PluginSet, plugin string) bool {
	return names(set.Disabled, plugin) || names(set.Disabled, "*")
}

// pluginArgs returns the JSON of plugin's args in profile, nil when it has none.
func pluginArgs(profile schedulerconfigv1.KubeSchedulerProfile, plugin string) ([]byte, error) {
	var args []byte
	found := false
	for _, config := range profile.PluginConfig {
		if config.Name != plugin {
			continue
		}
		if found {
			return nil, refusal.New(v1.ReasonInvalidConfig,
				"profile %s has two pluginConfig entries for %s, which kube-scheduler refuses; merge them into one",
				shorten(ptr.Deref(profile.SchedulerName, "")), plugin)
		}
		found = true
		args = config.Args.Raw
		// Parse leaves out-of-tree args as JSON; a config built in code may hold an object.
		if len(args) == 0 && config.Args.Object != nil {
			encoded, err := json.Marshal(config.Args.Object)
			if err != nil {
				return nil, fmt.Errorf("encode args of %s: %w", plugin, err)
			}
			args = encoded
		}
	}
	return args, nil
}

// trimaranSpec is TrimaranSpec of scheduler-plugins' apis/config/v1; a field left out
// stays nil.
type trimaranSpec struct {
	WatcherAddress *string `json:"watcherAddress"`
	MetricProvider struct {
		Type               *string `json:"type"`
		Address            *string `json:"address"`
		Token              *string `json:"token"`
		InsecureSkipVerify *bool   `json:"insecureSkipVerify"`
	} `json:"metricProvider"`
}

// decodeMetricSource reads the TrimaranSpec of args that checkArgsFields accepted (so
// every field has its name's exact case and its type) and applies upstream's defaults.
func decodeMetricSource(profile, plugin string, args []byte) (MetricSource, error) {
	var spec trimaranSpec
	if trimmed := bytes.TrimSpace(args); len(trimmed) > 0 && string(trimmed) != "null" {
		if err := json.Unmarshal(trimmed, &spec); err != nil {
			return MetricSource{}, fmt.Errorf("decode the args of plugin %s in profile %s: %w", plugin, shorten(profile), err)
		}
	}
	provider := spec.MetricProvider
	source := MetricSource{Profile: profile, Plugin: plugin,
		WatcherAddress: ptr.Deref(spec.WatcherAddress, ""), Provider: v1.MetricProvider(ptr.Deref(provider.Type, "")),
		Address: ptr.Deref(provider.Address, ""), Token: ptr.Deref(provider.Token, ""), InsecureSkipVerify: provider.InsecureSkipVerify}
	if spec.WatcherAddress == nil && source.Provider == "" {
		source.Provider = defaultMetricProvider
	}
	if source.WatcherAddress == "" {
		if err := checkProvider(source, spec.WatcherAddress != nil); err != nil {
			return MetricSource{}, err
		}
	}
	return source, nil
}

// checkProvider refuses what the plugin refuses at start: a metricProvider.type other than
// the three it knows, compared exactly, when it has no load-watcher address.
func checkProvider(source MetricSource, emptyWatcherAddress bool) *refusal.Error {
	known := []v1.MetricProvider{v1.PrometheusProvider, v1.KubernetesMetricsServerProvider, v1.SignalFxProvider}
	if slices.Contains(known, source.Provider) {
		return nil
	}
	where := fmt.Sprintf("plugin %s in profile %s", source.Plugin, shorten(source.Profile))
	if source.Provider == "" && emptyWatcherAddress {
		return refusal.New(v1.ReasonInvalidConfig,
			"the args of %s set watcherAddress to an empty string, which keeps metricProvider.type from defaulting, and the plugin refuses an empty type; "+
				"remove watcherAddress, or set metricProvider.type to Prometheus, KubernetesMetricsServer or SignalFx", where)
	}
	hint := ""
	for _, provider := range known {
		if strings.EqualFold(string(source.Provider), string(provider)) {
			hint = fmt.Sprintf(" (the type is case-sensitive: write %s)", provider)
		}
	}
	return refusal.New(v1.ReasonInvalidConfig,
		"metricProvider.type of %s is %q, which the plugin refuses, so kube-scheduler would not start; use Prometheus, KubernetesMetricsServer or SignalFx%s",
		where, shorten(string(source.Provider)), hint)
}

// argsFieldKind is how one field of a Trimaran plugin's args decodes.
type argsFieldKind struct {
	// into returns a new value of the field's Go type in scheduler-plugins.
	into func() any
	// want says what the field must be, for a message.
	want string
}

var (
	stringField   = argsFieldKind{func() any { return new(string) }, "a string (put it in quotes)"}
	boolField     = argsFieldKind{func() any { return new(bool) }, "true or false, without quotes"}
	integerField  = argsFieldKind{func() any { return new(int64) }, "a whole number, without quotes"}
	numberField   = argsFieldKind{func() any { return new(float64) }, "a number, without quotes"}
	mappingField  = argsFieldKind{func() any { return new(map[string]json.RawMessage) }, "a mapping of fields"}
	weightsField  = argsFieldKind{func() any { return new(map[string]float64) }, "a mapping of resource names to numbers, such as cpu: 0.5"}
	requestsField = argsFieldKind{func() any { return new(map[string]resource.Quantity) }, "a mapping of resource names to quantities, such as cpu: 2000m"}
	// typeMetaFields are the args' apiVersion and kind (metav1.TypeMeta, inline).
	typeMetaFields = map[string]argsFieldKind{"apiVersion": stringField, "kind": stringField}
	// trimaranSpecFields are TrimaranSpec's, inline in each Trimaran plugin's args.
	trimaranSpecFields = map[string]argsFieldKind{"metricProvider": mappingField, "watcherAddress": stringField}
	// metricProviderFields are MetricProviderSpec's.
	metricProviderFields = map[string]argsFieldKind{"type": stringField, "address": stringField, "token": stringField, "insecureSkipVerify": boolField}
)

// trimaranArgsFields are the fields of each Trimaran plugin's args besides TypeMeta's and
// TrimaranSpec's (TargetLoadPackingArgs, LoadVariationRiskBalancingArgs and
// LowRiskOverCommitmentArgs in scheduler-plugins' apis/config/v1).
var trimaranArgsFields = map[string]map[string]argsFieldKind{
	"TargetLoadPacking":          {"defaultRequests": requestsField, "defaultRequestsMultiplier": stringField, "targetUtilization": integerField},
	"LoadVariationRiskBalancing": {"safeVarianceMargin": numberField, "safeVarianceSensitivity": numberField},
	"LowRiskOverCommitment":      {"smoothingWindowSize": integerField, "riskLimitWeights": weightsField},
}

// checkArgsFields refuses args of plugin that scheduler-plugins' kube-scheduler would not
// decode: its decoding is strict (case-sensitive, no field the args type lacks, no name
// given twice) for every plugin of a pluginConfig, enabled or not, and a field of a wrong
// type fails it. A quantity out of the bounds of v1.CheckQuantity is refused before it is
// parsed (argsReader.decode).
func checkArgsFields(profile, plugin string, args []byte) error {
	// A name given twice would escape the checks of its first value, which kube-scheduler
	// decodes (a quantity too) before it refuses the repetition.
	if name, repeated := repeatedName(args); repeated {
		return refusal.New(v1.ReasonInvalidConfig,
			"the args of plugin %s in profile %s give %s twice in one mapping, which kube-scheduler's strict decoding refuses; keep one",
			plugin, shorten(profile), usertext.Cut(name, 100))
	}
	fields := argsReader{profile: profile, plugin: plugin}
	spec := fields.mapping("args", args)
	known := map[string]argsFieldKind{}
	for _, set := range []map[string]argsFieldKind{typeMetaFields, trimaranSpecFields, trimaranArgsFields[plugin]} {
		maps.Copy(known, set)
	}
	fields.checkFields("", spec, known)
	fields.checkFields("metricProvider.", fields.mapping("metricProvider", spec["metricProvider"]), metricProviderFields)
	if fields.problem != nil {
		return fields.problem
	}
	return nil
}

// repeatedName returns a name that an object of the JSON text data gives twice, at any
// depth; none when data is not JSON, which decoding reports.
func repeatedName(data []byte) (string, bool) {
	type frame struct {
		names  map[string]bool // nil in an array
		atName bool            // in an object, the next token is a name or the object's end
	}
	var open []frame
	decoder := json.NewDecoder(bytes.NewReader(data))
	for {
		token, err := decoder.Token()
		if err != nil {
			return "", false
		}
		if n := len(open); n > 0 && open[n-1].names != nil && open[n-1].atName {
			if name, ok := token.(string); ok {
				if open[n-1].names[name] {
					return name, true
				}
				open[n-1].names[name], open[n-1].atName = true, false
				continue
			}
		}
		switch token {
		case json.Delim('{'):
			open = append(open, frame{names: map[string]bool{}, atName: true})
			continue
		case json.Delim('['):
			open = append(open, frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			open = open[:len(open)-1]
		}
		// A value ended: the object holding it, if any, gives a name next.
		if len(open) == 0 {
			return "", false
		}
		if open[len(open)-1].names != nil {
			open[len(open)-1].atName = true
		}
	}
}

// checkFields decodes each field of a mapping, the field names prefixed with prefix,
// keeping the first that known lacks or of a wrong type as a refusal.
func (r *argsReader) checkFields(prefix string, mapping map[string]json.RawMessage, known map[string]argsFieldKind) {
	for _, field := range slices.Sorted(maps.Keys(mapping)) {
		kind, ok := known[field]
		if !ok && r.problem == nil {
			r.problem = refusal.New(v1.ReasonInvalidConfig,
				"the args of plugin %s in profile %s have a field %s, which the plugin's args do not have (kube-scheduler decodes them strictly, "+
					"names being case-sensitive, and would refuse the configuration); its fields are %s",
				r.plugin, shorten(r.profile), usertext.Cut(prefix+field, 100), fieldList(prefix, known))
		}
		if ok {
			r.decode(prefix+field, mapping[field], kind.into(), kind.want)
		}
	}
}

// fieldList names the fields of known, sorted, prefixed with prefix.
func fieldList(prefix string, known map[string]argsFieldKind) string {
	names := slices.Sorted(maps.Keys(known))
	for i, name := range names {
		names[i] = prefix + name
	}
	return strings.Join(names, ", ")
}

// argsReader decodes fields of a Trimaran plugin's args one by one (checkArgsFields),
// keeping the first one unknown or of a wrong type as a refusal. Its messages name the field and the kinds of value,
// never the value: a token may be the one of a wrong type.
type argsReader struct {
	profile, plugin string
	problem         *refusal.Error
}

// mapping decodes raw as a mapping; absent or null, it is empty.
func (r *argsReader) mapping(field string, raw []byte) map[string]json.RawMessage {
	var fields map[string]json.RawMessage
	r.decode(field, raw, &fields, mappingField.want)
	return fields
}

func (r *argsReader) decode(field string, raw []byte, into any, want string) {
	raw = bytes.TrimSpace(raw)
	if r.problem != nil || len(raw) == 0 || string(raw) == "null" {
		return
	}
	// Decoding parses quantities, which takes minutes for an exponent such as
	// 1e-99999999 (and as long in kube-scheduler): such a quantity is refused unparsed.
	var quantity *v1.QuantityError
	if errors.As(v1.CheckQuantitiesJSON(raw, into), &quantity) {
		r.problem = refusal.New(v1.ReasonInvalidConfig,
			"%s of plugin %s in profile %s %s (kube-scheduler would spend minutes parsing it)",
			usertext.Cut(joinField(field, quantity.Field), 100), r.plugin, shorten(r.profile), quantity.Problem())
		return
	}
	if err := json.Unmarshal(raw, into); err != nil {
		r.problem = refusal.New(v1.ReasonInvalidConfig,
			"%s of plugin %s in profile %s is %s, but must be %s; kube-scheduler would refuse the configuration",
			field, r.plugin, shorten(r.profile), jsonKind(raw), want)
	}
}

// joinField is the field inside field at path, such as defaultRequests.cpu.
func joinField(field, path string) string {
	if path == "" {
		return field
	}
	if strings.HasPrefix(path, "[") {
		return field + path
	}
	return field + "." + path
}

// jsonKind names the kind of a JSON value in the terms of YAML, which users write.
func jsonKind(raw []byte) string {
	switch raw[0] {
	case '{':
		return "a mapping"
	case '[':
		return "a list"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	default:
		return "a number"
	}
}

// placeholder matches the templating users paste from guides, which kube-scheduler does
// not expand: ${VAR}, $(VAR), $VAR, {{ .x }}, {var} and <prometheus-url>.
var placeholder = regexp.MustCompile(`\$\{[^}]*\}?|\$\([^)]*\)?|\$[A-Za-z_][A-Za-z0-9_]*|\{\{.*?(\}\}|$)|\{[^{}]*\}|<[^<>]*>?`)

// CheckMetricsAddress returns a refusal (ReasonMetricsAddressInvalid) when address is not
// an http or https URL with a host that load-watcher can query: empty, an unresolved
// placeholder such as ${PROM_URL}, other text, another scheme, or a URL holding
// credentials (user:password@host). field names the address in the message, for example
// "metricProvider.address of plugin TargetLoadPacking in profile packer". Messages quote
// at most a short piece of address, without credentials, query or fragment.
func CheckMetricsAddress(field, address string) error {
	return checkAddress(field, address, prometheusAddresses)
}

func checkAddress(field, address string, kind addressKind) error {
	example := kind.example
	invalid := func(format string, args ...any) *refusal.Error {
		return refusal.New(v1.ReasonMetricsAddressInvalid, "%s "+format, append([]any{field}, args...)...)
	}
	if strings.TrimSpace(address) == "" {
		return invalid("is empty; set it to an http or https URL, for example %s", example)
	}
	// Credentials are looked for first, in the text rather than the parsed URL, so that
	// no other message can quote them.
	if HasUserinfo(address) {
		return invalid("holds credentials (user:password@ before the host), which would show wherever the address is shown, in status, Events and logs; "+
			"remove them: %s", kind.instead)
	}
	withoutQuery, _, _ := strings.Cut(address, "?")
	withoutQuery, _, _ = strings.Cut(withoutQuery, "#")
	if found := placeholder.FindString(withoutQuery); found != "" {
		return invalid("holds %q, an unresolved placeholder: kube-scheduler does not expand environment variables or templates in its configuration, "+
			"so load-watcher would fail every query and every node would score alike; write the real URL, for example %s",
			usertext.Cut(found, maxPlaceholderInMessage), example)
	}
	if strings.TrimSpace(address) != address {
		return invalid("is %q, which has spaces or line breaks around it (a YAML block scalar such as | keeps the final line break); remove them",
			quotableAddress(address))
	}
	if !strings.Contains(address, "://") {
		return invalid("is %q, which is not a URL: it must start with http:// or https://, as in %s", quotableAddress(address), example)
	}
	parsed, err := url.Parse(address)
	if err != nil {
		return invalid("is %q, which is not a valid URL; write one such as %s", quotableAddress(address), example)
	}
	if parsed.Scheme != "http" && parsed.Scheme != "https" {
		return invalid("is %q, whose scheme is not http or https, the only ones load-watcher queries; write one such as %s",
			quotableAddress(address), example)
	}
	if parsed.Hostname() == "" {
		return invalid("is %q, which has no host; write one such as %s", quotableAddress(address), example)
	}
	if !validHost(parsed.Hostname()) {
		return invalid("is %q, whose host is not a host name or IP address; write one such as %s", quotableAddress(address), example)
	}
	if port := parsed.Port(); port != "" {
		if number, err := strconv.Atoi(port); err != nil || number < 1 || number > 65535 {
			return invalid("is %q, whose port is not between 1 and 65535", quotableAddress(address))
		}
	}
	return nil
}

// HasUserinfo reports whether the authority of address, the text after scheme:// (or
// from the start) up to the first /, ? or #, holds an @: credentials, which no message
// may quote.
func HasUserinfo(address string) bool {
	authority := address
	if _, rest, found := strings.Cut(address, "://"); found {
		authority = rest
	}
	if end := strings.IndexAny(authority, "/?#"); end >= 0 {
		authority = authority[:end]
	}
	return strings.Contains(authority, "@")
}

// validHost reports whether host, as url.URL.Hostname returns it, is an IP address or
// a DNS name (underscores allowed, as some private names have them).
func validHost(host string) bool {
	// netip accepts an IPv6 address with a zone, such as fe80::1%eth0.
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	for _, label := range strings.Split(strings.TrimSuffix(host, "."), ".") {
		if label == "" || len(label) > 63 || strings.HasPrefix(label, "-") || strings.HasSuffix(label, "-") {
			return false
		}
		if strings.ContainsFunc(label, func(r rune) bool { return !isHostNameRune(r) }) {
			return false
		}
	}
	return true
}

func isHostNameRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_'
}

// schemePrefix matches a URL's scheme and the slashes after it, which hold no secret.
var schemePrefix = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:/*`)

// quotableAddress is address as a message may show it: without what may be secret (the
// userinfo before an @, the query, the fragment) and cut short.
func quotableAddress(address string) string {
	shown, _, hasQuery := strings.Cut(address, "?")
	shown, _, hasFragment := strings.Cut(shown, "#")
	if at := strings.LastIndex(shown, "@"); at >= 0 {
		shown = schemePrefix.FindString(shown) + "...@" + shown[at+1:]
	}
	if hasQuery || hasFragment {
		shown += "?..."
	}
	return shorten(shown)
}
