package schedconfig

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
)

// withProfiles is a configuration whose profiles are the YAML list items in profiles.
func withProfiles(profiles string) string {
	return "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n" + profiles
}

// tlpAtScore is a profile named packer that enables TargetLoadPacking at score, followed
// by its pluginConfig entry with args, when args is not empty.
func tlpAtScore(args string) string {
	profile := `- schedulerName: packer
  plugins:
    score:
      enabled:
      - name: TargetLoadPacking
`
	if args == "" {
		return withProfiles(profile)
	}
	return withProfiles(profile + "  pluginConfig:\n  - name: TargetLoadPacking\n    args:\n" + asArgs(args))
}

// scoringProfile is a profile item named name that enables the plugins of pluginsAndArgs,
// pairs of a plugin and its args, at score, each with a pluginConfig entry holding its
// args when they are not empty.
func scoringProfile(name string, pluginsAndArgs ...string) string {
	profile := "- schedulerName: " + name + "\n  plugins:\n    score:\n      enabled:\n"
	var configs string
	for i := 0; i+1 < len(pluginsAndArgs); i += 2 {
		plugin, args := pluginsAndArgs[i], pluginsAndArgs[i+1]
		profile += "      - name: " + plugin + "\n"
		if args != "" {
			configs += "  - name: " + plugin + "\n    args:\n" + asArgs(args)
		}
	}
	if configs != "" {
		profile += "  pluginConfig:\n" + configs
	}
	return profile
}

// lowRiskProfiles are profiles of the names given, each enabling LowRiskOverCommitment
// with its default args.
func lowRiskProfiles(names []string) string {
	var profiles strings.Builder
	for _, name := range names {
		profiles.WriteString(scoringProfile(name, "LowRiskOverCommitment", ""))
	}
	return profiles.String()
}

// asArgs indents the YAML of a plugin's args as the args of a pluginConfig entry.
func asArgs(text string) string {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for i, line := range lines {
		lines[i] = "      " + line
	}
	return strings.Join(lines, "\n") + "\n"
}

// tlpByMultiPointDisabledAtScore is a profile named packer that enables TargetLoadPacking
// by multiPoint and disables disabled (the plugin, or "*") at score: kube-scheduler
// builds the plugin and runs it at no extension point.
func tlpByMultiPointDisabledAtScore(disabled string) string {
	return `- schedulerName: packer
  plugins:
    multiPoint:
      enabled:
      - name: TargetLoadPacking
    score:
      disabled:
      - name: ` + disabled + "\n"
}

// secretToken is a token that no message may quote.
const secretToken = "s3cr3t-b3ar3r-t0k3n"

func TestMetricSources(t *testing.T) {
	kms := func(profile, plugin string) MetricSource {
		return MetricSource{Profile: profile, Plugin: plugin, Provider: v1.KubernetesMetricsServerProvider}
	}
	tests := []struct {
		name        string
		config      string
		want        []MetricSource
		wantMessage string // set: MetricSources returns a refusal of ReasonInvalidConfig with this text
	}{
		{"no plugins section", withProfiles("- schedulerName: packer\n"), nil, ""},
		{"in-tree plugins only", withProfiles(`- schedulerName: packer
  plugins:
    score:
      enabled:
      - name: NodeResourcesFit
    multiPoint:
      enabled:
      - name: PodTopologySpread
`), nil, ""},
		// scheduler-plugins' kube-scheduler decodes the args of every pluginConfig entry at
		// start, enabled or not: a wrong type or field keeps it from starting. A provider the
		// plugin refuses matters only when the plugin is created.
		{"args of a plugin no extension point enables are decoded", withProfiles(`- schedulerName: packer
  pluginConfig:
  - name: TargetLoadPacking
    args:
      watcherAddress: 5
`), nil, "watcherAddress of plugin TargetLoadPacking in profile packer is a number, but must be a string"},
		{"a provider of a plugin no extension point enables is not checked", withProfiles(`- schedulerName: packer
  pluginConfig:
  - name: LowRiskOverCommitment
    args:
      smoothingWindowSize: 5
      metricProvider: {type: Nonsense}
`), nil, ""},

		// Args left out take upstream's defaults: provider KubernetesMetricsServer.
		{"no pluginConfig", tlpAtScore(""), []MetricSource{kms("packer", "TargetLoadPacking")}, ""},
		{"pluginConfig without args", withProfiles(`- schedulerName: packer
  plugins:
    score:
      enabled:
      - name: TargetLoadPacking
  pluginConfig:
  - name: TargetLoadPacking
`), []MetricSource{kms("packer", "TargetLoadPacking")}, ""},
		{"null args", tlpAtScore("null"), []MetricSource{kms("packer", "TargetLoadPacking")}, ""},
		{"empty args", tlpAtScore("{}"), []MetricSource{kms("packer", "TargetLoadPacking")}, ""},
		{"other fields only", tlpAtScore("targetUtilization: 60\ndefaultRequestsMultiplier: \"2\"\n"), []MetricSource{kms("packer", "TargetLoadPacking")}, ""},
		{"null metricProvider", tlpAtScore("metricProvider: null\n"), []MetricSource{kms("packer", "TargetLoadPacking")}, ""},

		{"Prometheus with every field", tlpAtScore(`metricProvider:
  type: Prometheus
  address: https://thanos-querier.openshift-monitoring.svc:9091
  token: ` + secretToken + `
  insecureSkipVerify: false
`), []MetricSource{{
			Profile: "packer", Plugin: "TargetLoadPacking", Provider: v1.PrometheusProvider,
			Address: "https://thanos-querier.openshift-monitoring.svc:9091", Token: secretToken, InsecureSkipVerify: ptr.To(false),
		}}, ""},
		{"Prometheus leaves insecureSkipVerify unset, as written", tlpAtScore("metricProvider:\n  type: Prometheus\n  address: http://prom:9090\n"),
			[]MetricSource{{Profile: "packer", Plugin: "TargetLoadPacking", Provider: v1.PrometheusProvider, Address: "http://prom:9090"}}, ""},
		{"SignalFx", tlpAtScore("metricProvider:\n  type: SignalFx\n  address: https://api.us1.signalfx.com\n  token: " + secretToken + "\n"),
			[]MetricSource{{Profile: "packer", Plugin: "TargetLoadPacking", Provider: v1.SignalFxProvider, Address: "https://api.us1.signalfx.com", Token: secretToken}}, ""},
		{"KubernetesMetricsServer written out", tlpAtScore("metricProvider:\n  type: KubernetesMetricsServer\n"), []MetricSource{kms("packer", "TargetLoadPacking")}, ""},
		// kube-scheduler decodes args strictly and case-sensitively: a field the args type
		// lacks is refused, its fields named.
		{"a field the args do not have", tlpAtScore("targetUtilisation: 60\n"), nil,
			"the args of plugin TargetLoadPacking in profile packer have a field targetUtilisation, which the plugin's args do not have " +
				"(kube-scheduler decodes them strictly, names being case-sensitive, and would refuse the configuration); " +
				"its fields are apiVersion, defaultRequests, defaultRequestsMultiplier, kind, metricProvider, targetUtilization, watcherAddress"},
		{"field names are case-sensitive", tlpAtScore("WatcherAddress: http://load-watcher:2020\n"), nil, "have a field WatcherAddress"},
		{"a field metricProvider does not have", tlpAtScore("metricProvider:\n  type: Prometheus\n  address: http://prom:9090\n  timeout: 5s\n"), nil,
			"have a field metricProvider.timeout, which the plugin's args do not have (kube-scheduler decodes them strictly, names being case-sensitive, " +
				"and would refuse the configuration); its fields are metricProvider.address, metricProvider.insecureSkipVerify, metricProvider.token, metricProvider.type"},
		{"another plugin's field", withProfiles(`- schedulerName: packer
  plugins:
    score:
      enabled:
      - name: LoadVariationRiskBalancing
  pluginConfig:
  - name: LoadVariationRiskBalancing
    args:
      targetUtilization: 60
`), nil, "plugin LoadVariationRiskBalancing in profile packer have a field targetUtilization"},
		{"every field of each plugin, with TypeMeta", withProfiles(`- schedulerName: packer
  plugins:
    multiPoint:
      enabled:
      - name: LowRiskOverCommitment
  pluginConfig:
  - name: TargetLoadPacking
    args:
      apiVersion: kubescheduler.config.k8s.io/v1
      kind: TargetLoadPackingArgs
      defaultRequests: {cpu: 2000m, memory: 1}
      defaultRequestsMultiplier: "1.5"
      targetUtilization: 60
      watcherAddress: http://load-watcher:2020
  - name: LoadVariationRiskBalancing
    args:
      safeVarianceMargin: 1
      safeVarianceSensitivity: 0.5
      watcherAddress: http://load-watcher:2020
  - name: LowRiskOverCommitment
    args:
      smoothingWindowSize: 5
      riskLimitWeights: {cpu: 0.5, memory: 1}
      metricProvider: {type: Prometheus, address: http://prom:9090, token: t, insecureSkipVerify: false}
`), []MetricSource{{Profile: "packer", Plugin: "LowRiskOverCommitment", Provider: v1.PrometheusProvider, Address: "http://prom:9090",
			Token: "t", InsecureSkipVerify: ptr.To(false)}}, ""},

		// Each field decodes into its Go type in scheduler-plugins, as at the scheduler's start.
		{"targetUtilization in quotes", tlpAtScore("targetUtilization: \"60\"\n"), nil,
			"targetUtilization of plugin TargetLoadPacking in profile packer is a string, but must be a whole number, without quotes"},
		{"a fraction of a whole number", tlpAtScore("targetUtilization: 60.5\n"), nil, "targetUtilization of plugin TargetLoadPacking in profile packer is a number, but must be a whole number"},
		{"defaultRequestsMultiplier without quotes", tlpAtScore("defaultRequestsMultiplier: 2\n"), nil,
			"defaultRequestsMultiplier of plugin TargetLoadPacking in profile packer is a number, but must be a string (put it in quotes)"},
		{"a request that is no quantity", tlpAtScore("defaultRequests: {cpu: 2 cores}\n"), nil,
			"defaultRequests of plugin TargetLoadPacking in profile packer is a mapping, but must be a mapping of resource names to quantities, such as cpu: 2000m"},
		// Parsing a quantity scales its exponent with big numbers: minutes and hundreds of
		// megabytes for 1e-99999999 (issue 39). Such quantities are refused unparsed.
		{"a request with an absurd exponent", tlpAtScore("defaultRequests: {memory: 1Gi, cpu: '1e-99999999'}\n"), nil,
			"defaultRequests.cpu of plugin TargetLoadPacking in profile packer has an exponent of 8 digits, more than the 3 of a quantity; " +
				"write one such as 100m, 1.5, 2Gi or 2e3 (kube-scheduler would spend minutes parsing it)"},
		// YAML reads this one as a number, which underflows to 0 on the way to JSON.
		{"a request with an absurd exponent, unquoted", tlpAtScore("defaultRequests: {cpu: 1e-99999999}\n"), []MetricSource{kms("packer", "TargetLoadPacking")}, ""},
		// A configuration in JSON keeps the args' text: the number and both values of a
		// repeated name reach the decoding.
		{"a configuration in JSON", `{"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", "profiles": [{"schedulerName": "packer",
  "pluginConfig": [{"name": "TargetLoadPacking", "args": {"defaultRequests": {"cpu": 1e-99999999}}}]}]}`, nil,
			"defaultRequests.cpu of plugin TargetLoadPacking in profile packer has an exponent of 8 digits"},
		{"a name repeated in JSON", `{"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", "profiles": [{"schedulerName": "packer",
  "pluginConfig": [{"name": "TargetLoadPacking", "args": {"defaultRequests": {"cpu": "1e-99999999"}, "defaultRequests": {"cpu": "1"}}}]}]}`, nil,
			"the args of plugin TargetLoadPacking in profile packer give defaultRequests twice in one mapping, which kube-scheduler's strict decoding refuses; keep one"},
		{"a name repeated deeper in JSON", `{"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", "profiles": [{"schedulerName": "packer",
  "pluginConfig": [{"name": "LowRiskOverCommitment", "args": {"riskLimitWeights": {"cpu": 0.5}, "metricProvider": {"type": "Prometheus", "type": "SignalFx"}}}]}]}`, nil,
			"the args of plugin LowRiskOverCommitment in profile packer give type twice in one mapping"},
		{"names repeated in different mappings", `{"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", "profiles": [{"schedulerName": "packer",
  "pluginConfig": [{"name": "TargetLoadPacking", "args": {"defaultRequests": {"cpu": "1", "memory": "1Gi"}, "metricProvider": {"type": "KubernetesMetricsServer"}}}]}]}`, nil, ""},
		{"a request of 33 characters", tlpAtScore("defaultRequests: {cpu: '" + strings.Repeat("1", 32) + "m'}\n"), nil,
			"defaultRequests.cpu of plugin TargetLoadPacking in profile packer is 33 characters long, more than the 32 of a quantity"},
		{"a request with an absurd exponent in args no extension point enables", withProfiles(`- schedulerName: packer
  pluginConfig:
  - name: TargetLoadPacking
    args:
      defaultRequests:
        cpu: 1E+99999999
`), nil, "defaultRequests.cpu of plugin TargetLoadPacking in profile packer has an exponent of 8 digits"},
		{"requests at the bounds", tlpAtScore("defaultRequests: {cpu: 1e-999, memory: '" + strings.Repeat("9", 31) + "m'}\n"),
			[]MetricSource{kms("packer", "TargetLoadPacking")}, ""},

		// With watcherAddress, the type is not defaulted and not checked: the plugin ignores it.
		{"watcherAddress alone", tlpAtScore("watcherAddress: http://load-watcher.lw.svc:2020\n"),
			[]MetricSource{{Profile: "packer", Plugin: "TargetLoadPacking", WatcherAddress: "http://load-watcher.lw.svc:2020"}}, ""},
		{"watcherAddress with a provider", tlpAtScore("watcherAddress: http://load-watcher.lw.svc:2020\nmetricProvider:\n  type: Whatever\n"),
			[]MetricSource{{Profile: "packer", Plugin: "TargetLoadPacking", WatcherAddress: "http://load-watcher.lw.svc:2020", Provider: "Whatever"}}, ""},
		{"empty watcherAddress with a type", tlpAtScore("watcherAddress: \"\"\nmetricProvider:\n  type: Prometheus\n  address: http://prom:9090\n"),
			[]MetricSource{{Profile: "packer", Plugin: "TargetLoadPacking", Provider: v1.PrometheusProvider, Address: "http://prom:9090"}}, ""},
		{"null watcherAddress is unset", tlpAtScore("watcherAddress: null\n"), []MetricSource{kms("packer", "TargetLoadPacking")}, ""},

		{"multiPoint", withProfiles(`- schedulerName: packer
  plugins:
    multiPoint:
      enabled:
      - name: LoadVariationRiskBalancing
`), []MetricSource{kms("packer", "LoadVariationRiskBalancing")}, ""},
		{"multiPoint, disabled at score by name", withProfiles(tlpByMultiPointDisabledAtScore("TargetLoadPacking")), nil, ""},
		{"multiPoint, all disabled at score", withProfiles(tlpByMultiPointDisabledAtScore(`"*"`)), nil, ""},
		{"multiPoint, disabled at preScore only: TargetLoadPacking has no PreScore", withProfiles(`- schedulerName: packer
  plugins:
    multiPoint:
      enabled:
      - name: TargetLoadPacking
    preScore:
      disabled:
      - name: "*"
`), []MetricSource{kms("packer", "TargetLoadPacking")}, ""},
		// LowRiskOverCommitment is a PreScore plugin too, so multiPoint still runs it there.
		{"multiPoint, LowRiskOverCommitment disabled at score only", withProfiles(`- schedulerName: packer
  plugins:
    multiPoint:
      enabled:
      - name: LowRiskOverCommitment
    score:
      disabled:
      - name: "*"
`), []MetricSource{kms("packer", "LowRiskOverCommitment")}, ""},
		{"multiPoint, LowRiskOverCommitment disabled at score and preScore", withProfiles(`- schedulerName: packer
  plugins:
    multiPoint:
      enabled:
      - name: LowRiskOverCommitment
    preScore:
      disabled:
      - name: LowRiskOverCommitment
    score:
      disabled:
      - name: "*"
`), nil, ""},
		// kube-scheduler keeps a plugin a point enables explicitly whatever its disabled list
		// says, and multiPoint's own disabled list removes only default plugins.
		{"enabled and disabled with * at score", withProfiles(`- schedulerName: packer
  plugins:
    score:
      disabled:
      - name: "*"
      enabled:
      - name: TargetLoadPacking
`), []MetricSource{kms("packer", "TargetLoadPacking")}, ""},
		{"enabled and disabled by name at score", withProfiles(`- schedulerName: packer
  plugins:
    score:
      disabled:
      - name: TargetLoadPacking
      enabled:
      - name: TargetLoadPacking
`), []MetricSource{kms("packer", "TargetLoadPacking")}, ""},
		{"multiPoint's disabled list does not remove what it enables", withProfiles(`- schedulerName: packer
  plugins:
    multiPoint:
      enabled:
      - name: TargetLoadPacking
      disabled:
      - name: "*"
`), []MetricSource{kms("packer", "TargetLoadPacking")}, ""},
		{"preScore only", withProfiles(`- schedulerName: packer
  plugins:
    preScore:
      enabled:
      - name: LowRiskOverCommitment
`), []MetricSource{kms("packer", "LowRiskOverCommitment")}, ""},
		{"enabled at filter only", withProfiles(`- schedulerName: packer
  plugins:
    filter:
      enabled:
      - name: TargetLoadPacking
`), nil, ""},

		{"several profiles and plugins, in order", withProfiles(`- schedulerName: balancer
  plugins:
    score:
      enabled:
      - name: LowRiskOverCommitment
      - name: LoadVariationRiskBalancing
    preScore:
      enabled:
      - name: LowRiskOverCommitment
  pluginConfig:
  - name: LowRiskOverCommitment
    args:
      metricProvider:
        type: Prometheus
        address: http://prom-b:9090
  - name: LoadVariationRiskBalancing
    args:
      watcherAddress: http://lw:2020
- schedulerName: plain
- schedulerName: packer
  plugins:
    multiPoint:
      enabled:
      - name: TargetLoadPacking
  pluginConfig:
  - name: TargetLoadPacking
    args:
      watcherAddress: http://lw-packer:2020
      metricProvider:
        type: SignalFx
`), []MetricSource{
			{Profile: "balancer", Plugin: "LoadVariationRiskBalancing", WatcherAddress: "http://lw:2020"},
			{Profile: "balancer", Plugin: "LowRiskOverCommitment", Provider: v1.PrometheusProvider, Address: "http://prom-b:9090"},
			{Profile: "packer", Plugin: "TargetLoadPacking", WatcherAddress: "http://lw-packer:2020", Provider: v1.SignalFxProvider},
		}, ""},

		// Each instance of a Trimaran plugin without watcherAddress starts a built-in
		// load-watcher, and a second one crashes kube-scheduler: one a configuration.
		{"two plugins in one profile, one with watcherAddress", withProfiles(scoringProfile("packer",
			"TargetLoadPacking", "metricProvider:\n  type: Prometheus\n  address: http://prom:9090\n",
			"LoadVariationRiskBalancing", "watcherAddress: http://lw:2020\n")), []MetricSource{
			{Profile: "packer", Plugin: "TargetLoadPacking", Provider: v1.PrometheusProvider, Address: "http://prom:9090"},
			{Profile: "packer", Plugin: "LoadVariationRiskBalancing", WatcherAddress: "http://lw:2020"},
		}, ""},
		{"two plugins in one profile with built-in load-watchers", withProfiles(scoringProfile("packer",
			"TargetLoadPacking", "metricProvider:\n  type: Prometheus\n  address: http://prom:9090\n",
			"LoadVariationRiskBalancing", "")), nil,
			"the Trimaran plugins TargetLoadPacking in profile packer and LoadVariationRiskBalancing in profile packer read load through the built-in load-watcher " +
				"(their args set no watcherAddress), and each instance starts one of its own in the one scheduler process (a plugin enabled in two profiles has two instances): " +
				`the second registers load-watcher's HTTP handler again and kube-scheduler would crash at start (pattern "/watcher" conflicts with pattern "/watcher"). ` +
				"Keep one Trimaran plugin with the built-in load-watcher per configuration: give the others watcherAddress, the URL of an external load-watcher service " +
				"(for example http://load-watcher.load-watcher.svc:2020), or run them in a second SecondaryScheduler, whose scheduler is a process of its own"},
		{"two plugins in two profiles, one with watcherAddress", withProfiles(scoringProfile("packer", "TargetLoadPacking", "") +
			scoringProfile("balancer", "LowRiskOverCommitment", "watcherAddress: http://lw:2020\n")), []MetricSource{
			kms("packer", "TargetLoadPacking"),
			{Profile: "balancer", Plugin: "LowRiskOverCommitment", WatcherAddress: "http://lw:2020"},
		}, ""},
		{"two plugins in two profiles with built-in load-watchers", withProfiles(scoringProfile("packer", "TargetLoadPacking", "") +
			scoringProfile("balancer", "LowRiskOverCommitment", "metricProvider:\n  type: SignalFx\n")), nil,
			"the Trimaran plugins TargetLoadPacking in profile packer and LowRiskOverCommitment in profile balancer read load through the built-in load-watcher"},
		{"the same plugin in two profiles, one with watcherAddress", withProfiles(scoringProfile("packer", "TargetLoadPacking", "") +
			scoringProfile("packer-2", "TargetLoadPacking", "watcherAddress: http://lw:2020\n")), []MetricSource{
			kms("packer", "TargetLoadPacking"),
			{Profile: "packer-2", Plugin: "TargetLoadPacking", WatcherAddress: "http://lw:2020"},
		}, ""},
		// Profiles share no plugin instance: each starts its own load-watcher.
		{"the same plugin in two profiles with built-in load-watchers", withProfiles(scoringProfile("packer", "TargetLoadPacking", "") +
			scoringProfile("packer-2", "TargetLoadPacking", "metricProvider:\n  type: Prometheus\n  address: http://prom:9090\n")), nil,
			"the Trimaran plugins TargetLoadPacking in profile packer and TargetLoadPacking in profile packer-2 read load through the built-in load-watcher"},
		{"every plugin with watcherAddress, in every profile", withProfiles(scoringProfile("packer",
			"TargetLoadPacking", "watcherAddress: http://lw:2020\n", "LoadVariationRiskBalancing", "watcherAddress: http://lw:2020\n") +
			scoringProfile("packer-2", "TargetLoadPacking", "watcherAddress: http://lw:2020\n")), []MetricSource{
			{Profile: "packer", Plugin: "TargetLoadPacking", WatcherAddress: "http://lw:2020"},
			{Profile: "packer", Plugin: "LoadVariationRiskBalancing", WatcherAddress: "http://lw:2020"},
			{Profile: "packer-2", Plugin: "TargetLoadPacking", WatcherAddress: "http://lw:2020"},
		}, ""},
		{"an empty watcherAddress with a type is the built-in load-watcher", withProfiles(scoringProfile("packer", "TargetLoadPacking", "") +
			scoringProfile("packer-2", "TargetLoadPacking", "watcherAddress: \"\"\nmetricProvider:\n  type: KubernetesMetricsServer\n")), nil,
			"TargetLoadPacking in profile packer and TargetLoadPacking in profile packer-2 read load through the built-in load-watcher"},
		// kube-scheduler creates every plugin a profile enables, where it runs or not.
		{"a plugin enabled where it does not score still starts its load-watcher", withProfiles(scoringProfile("packer", "TargetLoadPacking", "") + `- schedulerName: idle
  plugins:
    multiPoint:
      enabled:
      - name: LoadVariationRiskBalancing
    score:
      disabled:
      - name: "*"
`), nil, "TargetLoadPacking in profile packer and LoadVariationRiskBalancing in profile idle read load through the built-in load-watcher"},
		{"the args of a plugin enabled where it does not score are checked", withProfiles(`- schedulerName: idle
  plugins:
    filter:
      enabled:
      - name: TargetLoadPacking
  pluginConfig:
  - name: TargetLoadPacking
    args:
      metricProvider:
        type: prometheus
`), nil, `metricProvider.type of plugin TargetLoadPacking in profile idle is "prometheus", which the plugin refuses`},
		{"many instances are named up to a bound", withProfiles(lowRiskProfiles(packerNames(8))), nil,
			"the Trimaran plugins LowRiskOverCommitment in profile packer, LowRiskOverCommitment in profile packer-1, LowRiskOverCommitment in profile packer-2, " +
				"LowRiskOverCommitment in profile packer-3, LowRiskOverCommitment in profile packer-4, LowRiskOverCommitment in profile packer-5 and 2 more read load"},

		{"args are a list", tlpAtScore("- watcherAddress: http://lw:2020"), nil,
			"args of plugin TargetLoadPacking in profile packer is a list, but must be a mapping of fields"},
		{"args are a number", tlpAtScore("42"), nil, "args of plugin TargetLoadPacking in profile packer is a number, but must be a mapping"},
		{"args are a string", tlpAtScore("watcherAddress=http://lw:2020"), nil, "args of plugin TargetLoadPacking in profile packer is a string"},
		{"watcherAddress is a number", tlpAtScore("watcherAddress: 2020\n"), nil,
			"watcherAddress of plugin TargetLoadPacking in profile packer is a number, but must be a string (put it in quotes); kube-scheduler would refuse the configuration"},
		{"metricProvider is a string", tlpAtScore("metricProvider: Prometheus\n"), nil, "metricProvider of plugin TargetLoadPacking in profile packer is a string, but must be a mapping of fields"},
		{"type is a list", tlpAtScore("metricProvider:\n  type: [Prometheus]\n"), nil, "metricProvider.type of plugin TargetLoadPacking in profile packer is a list"},
		{"address is a mapping", tlpAtScore("metricProvider:\n  type: Prometheus\n  address: {host: prom}\n"), nil, "metricProvider.address of plugin TargetLoadPacking in profile packer is a mapping"},
		{"token is a number", tlpAtScore("metricProvider:\n  type: Prometheus\n  token: 31337424242\n"), nil,
			"metricProvider.token of plugin TargetLoadPacking in profile packer is a number, but must be a string (put it in quotes)"},
		{"insecureSkipVerify is a string", tlpAtScore("metricProvider:\n  type: Prometheus\n  insecureSkipVerify: \"true\"\n"), nil,
			"metricProvider.insecureSkipVerify of plugin TargetLoadPacking in profile packer is a string, but must be true or false, without quotes"},
		{"wrong type in the second profile", withProfiles("- schedulerName: plain\n") + strings.TrimPrefix(tlpAtScore("watcherAddress: true\n"), withProfiles("")), nil,
			"watcherAddress of plugin TargetLoadPacking in profile packer is a boolean"},
		{"provider type in lower case", tlpAtScore("metricProvider:\n  type: prometheus\n"), nil,
			`metricProvider.type of plugin TargetLoadPacking in profile packer is "prometheus", which the plugin refuses, so kube-scheduler would not start; ` +
				"use Prometheus, KubernetesMetricsServer or SignalFx (the type is case-sensitive: write Prometheus)"},
		{"provider load-watcher has but the plugin refuses", tlpAtScore("metricProvider:\n  type: Datadog\n"), nil, `is "Datadog", which the plugin refuses`},
		{"empty watcherAddress keeps the type from defaulting", tlpAtScore("watcherAddress: \"\"\n"), nil,
			"the args of plugin TargetLoadPacking in profile packer set watcherAddress to an empty string, which keeps metricProvider.type from defaulting"},
		{"two pluginConfig entries", tlpAtScore("{}") + "  - name: TargetLoadPacking\n    args: {}\n", nil,
			"profile packer has two pluginConfig entries for TargetLoadPacking, which kube-scheduler refuses"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			config, err := Parse([]byte(tt.config), "", "test")
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			sources, err := MetricSources(config)
			if tt.wantMessage != "" {
				expectProblem(t, err, v1.ReasonInvalidConfig, tt.wantMessage)
				if problem, ok := refusal.As(err); ok {
					for _, secret := range []string{secretToken, "31337424242"} {
						if strings.Contains(problem.Message, secret) {
							t.Errorf("message quotes the token: %s", problem)
						}
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("MetricSources: %v", err)
			}
			if diff := cmp.Diff(tt.want, sources); diff != "" {
				t.Errorf("MetricSources (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMetricSourcesWithoutConfig(t *testing.T) {
	sources, err := MetricSources(nil)
	if sources != nil || err != nil {
		t.Errorf("MetricSources(nil) = %v, %v; want nothing", sources, err)
	}
}

func TestCheckMetricsAddress(t *testing.T) {
	const field = "metricProvider.address of plugin TargetLoadPacking in profile packer"
	tests := []struct {
		name        string
		address     string
		wantMessage string   // empty: valid
		notQuoted   []string // what the message must not contain
	}{
		{"empty", "", field + " is empty; set it to an http or https URL, for example http://prometheus-k8s.monitoring.svc:9090", nil},
		{"blank", "  \n", "is empty", nil},

		{"${VAR}", "${PROM_URL}", field + ` holds "${PROM_URL}", an unresolved placeholder: kube-scheduler does not expand environment variables or templates in its configuration, ` +
			"so load-watcher would fail every query and every node would score alike; write the real URL, for example http://prometheus-k8s.monitoring.svc:9090", nil},
		{"${VAR} with a path", "${PROM_URL}/prometheus", `holds "${PROM_URL}", an unresolved placeholder`, nil},
		{"$VAR", "$PROM_URL", `holds "$PROM_URL", an unresolved placeholder`, nil},
		{"$(VAR) as host", "http://$(PROM_HOST):9090", `holds "$(PROM_HOST)", an unresolved placeholder`, nil},
		{"unclosed ${", "http://${PROM_HOST:9090", `holds "${PROM_HOST:9090", an unresolved placeholder`, nil},
		{"Helm template", "{{ .Values.prometheus.url }}", `holds "{{ .Values.prometheus.url }}", an unresolved placeholder`, nil},
		{"Helm template as host", "http://{{ .host }}:9090", `holds "{{ .host }}"`, nil},
		{"single braces", "http://{prometheus_host}:9090", `holds "{prometheus_host}"`, nil},
		{"angle brackets", "<prometheus-url>", `holds "<prometheus-url>", an unresolved placeholder`, nil},
		{"angle brackets as host", "https://<prometheus-host>:9091", `holds "<prometheus-host>"`, nil},
		{"long placeholder is cut", "${" + strings.Repeat("P", 500) + "}", `holds "${` + strings.Repeat("P", 58) + `...", an unresolved placeholder`, nil},

		{"a variable's name", "PROMETHEUS_URL", field + ` is "PROMETHEUS_URL", which is not a URL: it must start with http:// or https://, as in http://prometheus-k8s.monitoring.svc:9090`, nil},
		{"host and port without scheme", "prometheus-k8s.monitoring.svc:9090", `is "prometheus-k8s.monitoring.svc:9090", which is not a URL: it must start with http://`, nil},
		{"IP and port without scheme", "10.0.0.1:9090", `is "10.0.0.1:9090", which is not a URL`, nil},
		{"scheme-relative", "//prometheus:9090", `is "//prometheus:9090", which is not a URL`, nil},
		{"ftp", "ftp://prometheus:9090", `is "ftp://prometheus:9090", whose scheme is not http or https, the only ones load-watcher queries`, nil},
		{"grpc", "grpc://prometheus:9090", "whose scheme is not http or https", nil},
		{"http without host", "http://", `is "http://", which has no host`, nil},
		{"http with a path only", "http:///api/v1", `is "http:///api/v1", which has no host`, nil},
		{"http with a port only", "http://:9090", "which has no host", nil},
		{"space in host", "http://prometheus k8s:9090", "which is not a valid URL", nil},
		{"underscore-free garbage host", "http://prom!etheus:9090", "whose host is not a host name or IP address", nil},
		{"port out of range", "http://prometheus:99999", `is "http://prometheus:99999", whose port is not between 1 and 65535`, nil},
		{"port zero", "http://prometheus:0", "whose port is not between 1 and 65535", nil},
		{"port not a number", "http://prometheus:http", "which is not a valid URL", nil},
		{"unclosed IPv6", "http://[::1:9090", "which is not a valid URL", nil},
		{"leading space", " http://prometheus:9090", `is " http://prometheus:9090", which has spaces or line breaks around it`, nil},
		{"final line break of a block scalar", "http://prometheus:9090\n", `is "http://prometheus:9090\n", which has spaces or line breaks around it (a YAML block scalar such as | keeps the final line break)`, nil},
		{"long text is cut", "x" + strings.Repeat("y", 5000), `is "x` + strings.Repeat("y", 99) + `...", which is not a URL`, nil},

		{"user and password", "https://admin:hunter22@prometheus:9090", field + " holds credentials (user:password@ before the host), which would show wherever the address is shown, " +
			"in status, Events and logs; remove them: give the provider a bearer token in metricProvider.token instead, which is never shown", []string{"admin", "hunter22"}},
		{"token as user", "http://" + secretToken + "@prometheus:9090", "holds credentials", []string{secretToken}},
		{"credentials and a placeholder", "http://admin:$ecret@${PROM_HOST}:9090", "holds credentials", []string{"admin", "$ecret"}},
		{"credentials without scheme", "admin:hunter22@prometheus:9090", "holds credentials", []string{"hunter22"}},
		{"query is not quoted", "prometheus:9090/?token=" + secretToken, `is "prometheus:9090/?...", which is not a URL`, []string{secretToken}},
		{"fragment is not quoted", "ftp://prometheus#" + secretToken, `is "ftp://prometheus?...", whose scheme`, []string{secretToken}},
		{"at sign in a bad path", "http:/admin:hunter22@prometheus", `is "http:/...@prometheus", which is not a URL`, []string{"hunter22"}},

		{"service", "http://prometheus-k8s.monitoring.svc:9090", "", nil},
		{"thanos with TLS", "https://thanos-querier.openshift-monitoring.svc:9091", "", nil},
		{"fully qualified with trailing dot", "http://prometheus.monitoring.svc.cluster.local.:9090", "", nil},
		{"path prefix", "https://monitoring.example.com/prometheus/", "", nil},
		{"upper-case scheme and host", "HTTPS://PROMETHEUS.EXAMPLE.COM", "", nil},
		{"IPv4", "http://10.0.0.1:9090", "", nil},
		{"IPv6 with port", "http://[::1]:9090", "", nil},
		{"IPv6 without port", "https://[fd00:10:96::a]", "", nil},
		{"IPv6 with zone", "http://[fe80::1%25eth0]:9090", "", nil},
		{"no port", "http://prometheus", "", nil},
		{"empty port", "http://prometheus:", "", nil},
		{"underscore in host", "http://prom_metrics.internal:9090", "", nil},
		{"query", "http://prometheus:9090/?timeout=10s", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			problem := CheckMetricsAddress(field, tt.address)
			if tt.wantMessage == "" {
				if problem != nil {
					t.Fatalf("want valid, got %v", problem)
				}
				return
			}
			expectProblem(t, problem, v1.ReasonMetricsAddressInvalid, tt.wantMessage)
			for _, secret := range tt.notQuoted {
				if problem != nil && strings.Contains(problem.Error(), secret) {
					t.Errorf("message quotes %q: %s", secret, problem)
				}
			}
		})
	}
}

func TestMetricSourceCheckAddresses(t *testing.T) {
	prometheus := func(address string) MetricSource {
		return MetricSource{Profile: "packer", Plugin: "TargetLoadPacking", Provider: v1.PrometheusProvider, Address: address, Token: secretToken}
	}
	tests := []struct {
		name        string
		source      MetricSource
		wantMessage string // empty: valid
	}{
		{"Prometheus", prometheus("http://prometheus:9090"), ""},
		{"Prometheus without address", prometheus(""),
			"metricProvider.address of plugin TargetLoadPacking in profile packer is empty, so load-watcher queries http://prometheus-k8s:9090, " +
				"a Service of that name in the scheduler's own namespace; set it to your Prometheus's URL, for example http://prometheus-k8s.monitoring.svc:9090"},
		{"Prometheus with a placeholder", prometheus("${PROM_URL}"), `metricProvider.address of plugin TargetLoadPacking in profile packer holds "${PROM_URL}"`},
		// Left out, SignalFx's address is its own API, https://api.signalfx.com.
		{"SignalFx without address", MetricSource{Profile: "packer", Plugin: "TargetLoadPacking", Provider: v1.SignalFxProvider}, ""},
		{"SignalFx without scheme", MetricSource{Profile: "packer", Plugin: "TargetLoadPacking", Provider: v1.SignalFxProvider, Address: "api.us1.signalfx.com"},
			`is "api.us1.signalfx.com", which is not a URL: it must start with http:// or https://, as in https://api.us1.signalfx.com`},
		{"KubernetesMetricsServer ignores the address", MetricSource{Provider: v1.KubernetesMetricsServerProvider, Address: "${UNUSED}"}, ""},
		{"watcherAddress", MetricSource{WatcherAddress: "http://load-watcher:2020", Provider: v1.PrometheusProvider, Address: "${IGNORED}"}, ""},
		{"watcherAddress with credentials", MetricSource{Profile: "packer", Plugin: "TargetLoadPacking", WatcherAddress: "http://admin:hunter22@lw:2020"},
			"watcherAddress of plugin TargetLoadPacking in profile packer holds credentials (user:password@ before the host), which would show wherever the address is shown, " +
				"in status, Events and logs; remove them: the plugin has no other way to authenticate to a load-watcher service, so restrict who can reach it"},
		{"watcherAddress with a placeholder", MetricSource{Profile: "packer", Plugin: "LoadVariationRiskBalancing", WatcherAddress: "$(WATCHER)"},
			`watcherAddress of plugin LoadVariationRiskBalancing in profile packer holds "$(WATCHER)", an unresolved placeholder: ` +
				"kube-scheduler does not expand environment variables or templates in its configuration, so load-watcher would fail every query and every node would score alike; " +
				"write the real URL, for example http://load-watcher.load-watcher.svc:2020"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			problem := tt.source.CheckAddresses()
			if tt.wantMessage == "" {
				if problem != nil {
					t.Fatalf("want valid, got %v", problem)
				}
				return
			}
			expectProblem(t, problem, v1.ReasonMetricsAddressInvalid, tt.wantMessage)
			if problem != nil && strings.Contains(problem.Error(), secretToken) {
				t.Errorf("message quotes the token: %s", problem)
			}
		})
	}
}

func TestProbedAddress(t *testing.T) {
	tests := []struct {
		name    string
		source  MetricSource
		want    string
		wantSet bool
	}{
		{"Prometheus", MetricSource{Provider: v1.PrometheusProvider, Address: "https://thanos:9091"}, "https://thanos:9091", true},
		{"Prometheus through a load-watcher service", MetricSource{WatcherAddress: "http://lw:2020", Provider: v1.PrometheusProvider, Address: "https://thanos:9091"}, "", false},
		{"Prometheus without address", MetricSource{Provider: v1.PrometheusProvider}, "", false},
		{"Prometheus with a placeholder", MetricSource{Provider: v1.PrometheusProvider, Address: "${PROM_URL}"}, "", false},
		{"Prometheus with credentials", MetricSource{Provider: v1.PrometheusProvider, Address: "http://a:b@thanos:9091"}, "", false},
		{"KubernetesMetricsServer", MetricSource{Provider: v1.KubernetesMetricsServerProvider}, "", false},
		{"SignalFx", MetricSource{Provider: v1.SignalFxProvider, Address: "https://api.us1.signalfx.com"}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, set := tt.source.ProbedAddress()
			if got != tt.want || set != tt.wantSet {
				t.Errorf("ProbedAddress() = %q, %v; want %q, %v", got, set, tt.want, tt.wantSet)
			}
		})
	}
}

func TestMetricSourceString(t *testing.T) {
	tests := []struct {
		name   string
		source MetricSource
		want   string
	}{
		{"Prometheus with a token", MetricSource{Profile: "packer", Plugin: "TargetLoadPacking", Provider: v1.PrometheusProvider,
			Address: "https://admin:hunter22@thanos:9091/?token=" + secretToken, Token: secretToken},
			"profile packer, plugin TargetLoadPacking: Prometheus at https://...@thanos:9091/?... with a token"},
		{"default provider", MetricSource{Profile: "packer", Plugin: "LowRiskOverCommitment", Provider: v1.KubernetesMetricsServerProvider},
			"profile packer, plugin LowRiskOverCommitment: KubernetesMetricsServer"},
		{"load-watcher service", MetricSource{Profile: "packer", Plugin: "TargetLoadPacking", WatcherAddress: "http://lw:2020", Token: secretToken},
			"profile packer, plugin TargetLoadPacking: load-watcher http://lw:2020"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.source.String(); got != tt.want {
				t.Errorf("String() = %q; want %q", got, tt.want)
			}
		})
	}
}

// The fuzz test replaces every token in a configuration with one of these, then checks
// that no message quotes it.
const (
	sentinelToken       = "zq-sentinel-token-7f3c9"
	sentinelNumberToken = 918273645546372819
)

// withSentinelTokens returns the configuration config.yaml decodes to, with the
// metricProvider.token of every Trimaran plugin's args that has one replaced by
// sentinelToken (a string) or sentinelNumberToken (any other JSON value), and whether
// it replaced any.
func withSentinelTokens(t *testing.T, data []byte) ([]byte, bool) {
	t.Helper()
	asJSON, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, false
	}
	// Numbers stay as written: a float64 could not hold every int64 of the configuration.
	decoder := json.NewDecoder(bytes.NewReader(asJSON))
	decoder.UseNumber()
	var document map[string]any
	if err := decoder.Decode(&document); err != nil {
		return nil, false
	}
	replaced := false
	profiles, _ := document["profiles"].([]any)
	for _, profile := range profiles {
		profile, _ := profile.(map[string]any)
		configs, _ := profile["pluginConfig"].([]any)
		for _, config := range configs {
			config, _ := config.(map[string]any)
			if name, _ := config["name"].(string); !slices.Contains(TrimaranPlugins, name) {
				continue
			}
			args, _ := config["args"].(map[string]any)
			provider, _ := args["metricProvider"].(map[string]any)
			token, found := provider["token"]
			if !found {
				continue
			}
			if _, isString := token.(string); isString {
				provider["token"] = sentinelToken
			} else {
				provider["token"] = sentinelNumberToken
			}
			replaced = true
		}
	}
	encoded, err := json.Marshal(document)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	return encoded, replaced
}

// FuzzMetricSources checks that no configuration Parse accepts makes MetricSources or the
// address checks panic, return anything but a bounded Problem of the expected reason, or
// quote a token.
func FuzzMetricSources(f *testing.F) {
	f.Add([]byte(validConfig))
	f.Add([]byte(tlpAtScore("")))
	f.Add([]byte(tlpAtScore("metricProvider:\n  type: Prometheus\n  address: https://admin:pw@thanos:9091/?x=1\n  token: abc\n  insecureSkipVerify: false\n")))
	f.Add([]byte(tlpAtScore("metricProvider:\n  type: Prometheus\n  address: ${PROM_URL}\n  token: 12345678\n")))
	f.Add([]byte(tlpAtScore("metricProvider:\n  type: SignalFx\n  token: [abc]\n")))
	f.Add([]byte(tlpAtScore("metricProvider:\n  type: prometheus\n  token: abc\n")))
	f.Add([]byte(tlpAtScore("watcherAddress: \"\"\nmetricProvider:\n  token: abc\n")))
	f.Add([]byte(tlpAtScore("watcherAddress: http://$(LW):2020\n")))
	f.Add([]byte(tlpAtScore("metricProvider:\n  address: http://[::1]:9090\n  insecureSkipVerify: \"yes\"\n")))
	f.Add([]byte(tlpAtScore("- 1\n")))
	// Quantities that take minutes to parse (issue 39), and a repeated name that would
	// hide one from a check of the last value only.
	f.Add([]byte(tlpAtScore("defaultRequests: {cpu: '1e-99999999'}\n")))
	f.Add([]byte(tlpAtScore("defaultRequests: {memory: 1E+99999999, cpu: '" + strings.Repeat("9", 40) + "'}\n")))
	f.Add([]byte(`{"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", "profiles": [{"schedulerName": "packer",
  "plugins": {"score": {"enabled": [{"name": "TargetLoadPacking"}]}},
  "pluginConfig": [{"name": "TargetLoadPacking", "args": {"defaultRequests": {"cpu": 1e-99999999}, "defaultRequests": {"cpu": "1"}}}]}]}`))
	f.Add([]byte(withProfiles(scoringProfile("a", "TargetLoadPacking", "", "LowRiskOverCommitment", "watcherAddress: http://lw:2020\n") +
		scoringProfile("b", "TargetLoadPacking", "metricProvider: {type: Prometheus, address: http://prom:9090, token: abc}\n"))))
	f.Add([]byte(withProfiles(`- schedulerName: a
  plugins:
    multiPoint:
      enabled:
      - name: LowRiskOverCommitment
    score:
      disabled:
      - name: "*"
  pluginConfig:
  - name: LowRiskOverCommitment
    args:
      metricProvider: {type: Prometheus, address: "<prometheus-url>", token: abc}
- schedulerName: b
  plugins:
    preScore:
      enabled:
      - name: LoadVariationRiskBalancing
`)))
	f.Fuzz(func(t *testing.T, data []byte) {
		config, err := Parse(data, "", "fuzz")
		if err != nil {
			return
		}
		check := func(sources []MetricSource, err error, secrets ...string) {
			t.Helper()
			var messages []string
			if err != nil {
				problem, ok := refusal.As(err)
				if !ok || problem.Reason != v1.ReasonInvalidConfig {
					t.Fatalf("MetricSources: want a refusal of %s, got %v", v1.ReasonInvalidConfig, err)
				}
				messages = append(messages, problem.Message)
			}
			for _, source := range sources {
				if !slices.Contains(TrimaranPlugins, source.Plugin) {
					t.Fatalf("source of plugin %q", source.Plugin)
				}
				messages = append(messages, source.String())
				if err := source.CheckAddresses(); err != nil {
					problem, _ := refusal.As(err)
					if problem == nil || problem.Reason != v1.ReasonMetricsAddressInvalid {
						t.Fatalf("CheckAddresses: %v", err)
					}
					messages = append(messages, problem.Message)
				}
				if address, ok := source.ProbedAddress(); ok && CheckMetricsAddress("address", address) != nil {
					t.Fatalf("ProbedAddress %q is not a valid address", address)
				}
			}
			for _, message := range messages {
				if len(message) > refusal.MaxMessageBytes+len(" ... (truncated)") {
					t.Fatalf("message of %d bytes", len(message))
				}
				for _, secret := range secrets {
					if strings.Contains(message, secret) {
						t.Fatalf("message quotes the token: %s", message)
					}
				}
			}
		}
		sources, err := MetricSources(config)
		check(sources, err)

		withSentinels, replaced := withSentinelTokens(t, data)
		if !replaced {
			return
		}
		config, err = Parse(withSentinels, "", "fuzz")
		if err != nil {
			// Replacing a token cannot make a configuration invalid, except by growing it.
			if len(withSentinels) <= MaxConfigBytes {
				t.Fatalf("configuration with sentinel tokens refused: %v", err)
			}
			return
		}
		sources, err = MetricSources(config)
		check(sources, err, sentinelToken, "918273645546372819")
	})
}

func TestRepeatedName(t *testing.T) {
	tests := []struct {
		data, want string
	}{
		{`{"a": 1, "b": {"a": 2}, "c": [{"a": 3}, {"a": 4}], "d": ["a", "a"]}`, ""},
		{`{"a": 1, "a": 2}`, "a"},
		{`{"a": {"b": [1, 2], "b": 3}}`, "b"},
		{`[{"a": {}}, {"x": "y", "y": {"z": 1}, "x": 2}]`, "x"},
		{`{"a": "b", "b": "a"}`, ""},
		{`{"a": 1, "a"`, "a"},
		{`{"a": `, ""},
		{`5`, ""},
	}
	for _, tt := range tests {
		name, repeated := repeatedName([]byte(tt.data))
		if name != tt.want || repeated != (tt.want != "") {
			t.Errorf("repeatedName(%s) = %q, %v; want %q", tt.data, name, repeated, tt.want)
		}
	}
}

// TestHostileQuantityIsCheap shows that refusing a quantity that would take minutes and
// hundreds of megabytes to parse (issue 39) costs no more allocations than accepting one
// at the bounds.
func TestHostileQuantityIsCheap(t *testing.T) {
	allocs := func(quantity string) (float64, error) {
		config, err := Parse([]byte(tlpAtScore("defaultRequests: {cpu: '"+quantity+"'}\n")), "", "test")
		if err != nil {
			t.Fatal(err)
		}
		_, err = MetricSources(config)
		return testing.AllocsPerRun(20, func() { _, _ = MetricSources(config) }), err
	}
	atBounds, err := allocs("1e-999")
	if err != nil {
		t.Fatalf("1e-999 refused: %v", err)
	}
	hostile, err := allocs("1e-99999999")
	if problem, ok := refusal.As(err); !ok || problem.Reason != v1.ReasonInvalidConfig {
		t.Fatalf("want a refusal of %s, got %v", v1.ReasonInvalidConfig, err)
	}
	t.Logf("allocations of MetricSources: %v refusing 1e-99999999, %v accepting 1e-999", hostile, atBounds)
	if hostile > atBounds {
		t.Errorf("refusing 1e-99999999 allocates %v times, more than the %v of accepting 1e-999", hostile, atBounds)
	}
}
