package render

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"k8s.io/apimachinery/pkg/api/resource"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/crdschema"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/metricsprobe"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/schedconfig"
)

// The tests of this file hold the three places that know of profile types to one list:
// the CRD (generated from api/v1's markers by make manifests), api/v1's own view
// (ProfileType.IsLoadAware and the Profile struct) and the profiles table, which alone
// tells types apart in rendering. A profile added to one and not the others fails here,
// with a message saying which to edit.

// crdOfTheAPI is the generated CRD, decoded as the API server's validation takes it.
func crdOfTheAPI(t *testing.T) *apiextensions.CustomResourceDefinition {
	t.Helper()
	path := filepath.Join("..", "..", "config", "crd", "bases", "operator.secondary-scheduler.io_secondaryschedulers.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read the CRD (make manifests writes it): %v", err)
	}
	crd, err := crdschema.Decode(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return crd
}

// profileSchemaOfTheCRD is the schema of spec.profile.
func profileSchemaOfTheCRD(t *testing.T) apiextensions.JSONSchemaProps {
	t.Helper()
	crd := crdOfTheAPI(t)
	if crd.Spec.Validation == nil || crd.Spec.Validation.OpenAPIV3Schema == nil {
		t.Fatal("the CRD has no schema")
	}
	profile, ok := crd.Spec.Validation.OpenAPIV3Schema.Properties["spec"].Properties["profile"]
	if !ok {
		t.Fatal("the CRD has no spec.profile")
	}
	return profile
}

// profileTypesOfTheCRD are the profile types the API server accepts, read from the CRD,
// so that a profile type added there is checked here without anyone listing it.
func profileTypesOfTheCRD(t *testing.T) []v1.ProfileType {
	t.Helper()
	enum := profileSchemaOfTheCRD(t).Properties["type"].Enum
	types := make([]v1.ProfileType, 0, len(enum))
	for _, value := range enum {
		name, ok := value.(string)
		if !ok {
			t.Fatalf("the CRD's enum of spec.profile.type holds %v, not a string", value)
		}
		types = append(types, v1.ProfileType(name))
	}
	if len(types) == 0 {
		t.Fatal("the CRD has no enum of spec.profile.type")
	}
	return types
}

// sortedProfileTypes are the types of the profiles table, in a stable order.
func sortedProfileTypes() []v1.ProfileType {
	return slices.Sorted(maps.Keys(profiles))
}

// secondarySchedulerObject is a SecondaryScheduler with spec.profile as given, to validate
// with the CRD. Custom gets the schedulerConfig it needs, so that only profile rules fail.
func secondarySchedulerObject(profile map[string]any) map[string]any {
	spec := map[string]any{"profile": profile}
	if profile["type"] == string(v1.CustomProfile) {
		spec["schedulerConfig"] = "config"
	}
	return map[string]any{
		"apiVersion": v1.GroupVersion.String(),
		"kind":       "SecondaryScheduler",
		"metadata":   map[string]any{"name": "profiled", "namespace": "platform"},
		"spec":       spec,
	}
}

// asJSONValue is value as the API server sees it: decoded JSON.
func asJSONValue(t *testing.T, value any) any {
	t.Helper()
	data, err := json.Marshal(value)
	if err != nil {
		t.Fatal(err)
	}
	var decoded any
	// As the API server decodes it: integers as int64, which the CEL rules tell from floats.
	if err := utiljson.Unmarshal(data, &decoded); err != nil {
		t.Fatal(err)
	}
	return decoded
}

// profileWithDefaults is spec.profile of type profileType with its member holding the
// table's defaults, decoded as the operator reads a resource.
func profileWithDefaults(t *testing.T, profileType v1.ProfileType) *v1.Profile {
	t.Helper()
	fields := map[string]any{"type": string(profileType)}
	if member := profiles[profileType].member; member != "" {
		fields[member] = profiles[profileType].defaults
	}
	data, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	var profile v1.Profile
	if err := json.Unmarshal(data, &profile); err != nil {
		t.Fatal(err)
	}
	return &profile
}

// The CRD's enum of spec.profile.type and the table list the same types, and the
// description of spec.profile.type, which kubectl explain shows, names each.
func TestProfileTypesMatchTheCRD(t *testing.T) {
	crdTypes := profileTypesOfTheCRD(t)
	description := strings.Join(strings.Fields(profileSchemaOfTheCRD(t).Properties["type"].Description), " ")
	for _, profileType := range crdTypes {
		if _, ok := profiles[profileType]; !ok {
			t.Errorf("the CRD accepts profile type %s, which has no entry in the profiles table: add one to profiles in internal/render/profiles.go", profileType)
		}
		if !regexp.MustCompile(`\b` + string(profileType) + `\b`).MatchString(description) {
			t.Errorf("the description of spec.profile.type does not name %s: say what it does in the comment of Profile.Type in api/v1 and run make manifests", profileType)
		}
	}
	for _, profileType := range sortedProfileTypes() {
		if !slices.Contains(crdTypes, profileType) {
			t.Errorf("the profiles table has %s, which the CRD's enum of spec.profile.type lacks: add it to the kubebuilder Enum marker of ProfileType in api/v1 and run make manifests", profileType)
		}
	}
}

// profileFieldsSharedByTypes are the fields of api/v1's Profile that are no profile's own
// arguments: the discriminator, and where the load-aware profiles read load.
var profileFieldsSharedByTypes = []string{"type", "metrics"}

// Each field of api/v1's Profile other than the shared ones is the arguments member of
// one profile, of the type of its defaults, and the CRD's union rules allow it with that
// profile's type alone. The rules are checked by validating objects with the CRD, as
// the API server would, rather than by reading their text.
func TestProfileMembersMatchTheAPI(t *testing.T) {
	memberOf := map[string]v1.ProfileType{}
	for _, profileType := range sortedProfileTypes() {
		member := profiles[profileType].member
		if member == "" {
			continue
		}
		if first, taken := memberOf[member]; taken {
			t.Errorf("%s and %s both have member %s in the profiles table: each profile's arguments are a member of their own", first, profileType, member)
		}
		memberOf[member] = profileType
	}
	profileStruct := reflect.TypeFor[v1.Profile]()
	apiMembers := map[string]reflect.Type{}
	for field := range profileStruct.Fields() {
		name, _, _ := strings.Cut(field.Tag.Get("json"), ",")
		if slices.Contains(profileFieldsSharedByTypes, name) {
			continue
		}
		apiMembers[name] = field.Type
		if _, ok := memberOf[name]; !ok {
			t.Errorf("api/v1's Profile has %s (%s), which is no profile's member in the profiles table, so it would be ignored: "+
				"set member to %q in its profile's entry in internal/render/profiles.go (or, if several types share it, add it to profileFieldsSharedByTypes)",
				name, field.Name, name)
		}
	}

	validator, err := crdschema.NewValidator(crdOfTheAPI(t))
	if err != nil {
		t.Fatal(err)
	}
	crdTypes := profileTypesOfTheCRD(t)
	for _, member := range slices.Sorted(maps.Keys(memberOf)) {
		profileType := memberOf[member]
		if !slices.Contains(crdTypes, profileType) {
			continue // TestProfileTypesMatchTheCRD says so; the CRD refuses the type itself.
		}
		profile := profiles[profileType]
		switch {
		case profile.loadAware == nil && profile.writeArgs == nil:
			t.Errorf("%s has member %s but no writeArgs in the profiles table: its arguments would be ignored", profileType, member)
		case profile.loadAware != nil && profile.writeArgs != nil:
			t.Errorf("%s is load-aware, so its arguments are loadAware.ownArgs: writeArgs in the profiles table would be ignored", profileType)
		}
		defaults := profile.defaults
		apiType, ok := apiMembers[member]
		switch {
		case !ok:
			t.Errorf("%s: api/v1's Profile has no field named %q in JSON: add its arguments member to Profile in api/v1 and run make manifests generate", profileType, member)
			continue
		case reflect.TypeOf(defaults) != apiType:
			t.Errorf("%s: its defaults in the profiles table are a %T, but profile.%s is a %s in api/v1: give the defaults as a %s", profileType, defaults, member, apiType, apiType)
			continue
		}
		args := asJSONValue(t, defaults)
		if errs := validator.Errors(secondarySchedulerObject(map[string]any{"type": string(profileType), member: args})); len(errs) > 0 {
			t.Errorf("%s: the CRD refuses profile.%s with the defaults of the profiles table: %q", profileType, member, errs)
		}
		var acceptedWith []string
		for _, other := range crdTypes {
			if other == profileType {
				continue
			}
			without := validator.Errors(secondarySchedulerObject(map[string]any{"type": string(other)}))
			with := validator.Errors(secondarySchedulerObject(map[string]any{"type": string(other), member: args}))
			if len(with) <= len(without) {
				acceptedWith = append(acceptedWith, string(other))
			}
		}
		if len(acceptedWith) > 0 {
			t.Errorf("the CRD accepts profile.%s with profile types %v, not only %s: add the union rule "+
				"`self.type == '%s' || !has(self.%s)` to the XValidation markers of Profile in api/v1 and run make manifests",
				member, acceptedWith, profileType, profileType, member)
		}
	}
}

// loadWatcherSeries are the series load-watcher's Prometheus provider reads, by the
// resource whose use they measure.
var loadWatcherSeries = map[corev1.ResourceName]string{
	corev1.ResourceCPU:    "instance:node_cpu:ratio",
	corev1.ResourceMemory: "instance:node_memory_utilisation:ratio",
}

// api/v1's IsLoadAware (through which the controllers read profile.metrics), the CRD's rule
// limiting profile.metrics, and the table agree on which profiles are load-aware; each
// load-aware entry is complete, and the metrics probe checks every series it needs.
func TestProfileLoadAwarenessMatchesTheAPI(t *testing.T) {
	validator, err := crdschema.NewValidator(crdOfTheAPI(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, profileType := range profileTypesOfTheCRD(t) {
		profile, ok := profiles[profileType]
		if !ok {
			continue // TestProfileTypesMatchTheCRD says so.
		}
		loadAware := profile.loadAware != nil
		if profileType.IsLoadAware() != loadAware {
			t.Errorf("%s: api/v1's ProfileType.IsLoadAware says %t, the profiles table %t: make IsLoadAware in api/v1 agree with the table",
				profileType, profileType.IsLoadAware(), loadAware)
		}
		metrics := map[string]any{"provider": string(v1.PrometheusProvider)}
		metricsAccepted := len(validator.Errors(secondarySchedulerObject(map[string]any{"type": string(profileType), "metrics": metrics}))) == 0
		switch {
		case loadAware && !metricsAccepted:
			t.Errorf("%s is load-aware in the profiles table, but the CRD refuses profile.metrics with it: "+
				"add it to the rule on profile.metrics among the XValidation markers of Profile in api/v1 and run make manifests", profileType)
		case !loadAware && metricsAccepted:
			t.Errorf("%s is not load-aware in the profiles table, but the CRD accepts profile.metrics with it: "+
				"leave it out of the rule on profile.metrics among the XValidation markers of Profile in api/v1 and run make manifests", profileType)
		}
		if !loadAware {
			continue
		}
		if profile.loadAware.plugin == "" || profile.loadAware.ownArgs == nil || profile.loadAware.requestBased == "" || len(profile.loadAware.measures) == 0 {
			t.Errorf("%s is load-aware, but its entry in the profiles table lacks its plugin, ownArgs, request-based stand-in or measured resources: %+v",
				profileType, *profile.loadAware)
		}
		for _, measured := range profile.loadAware.measures {
			if series, ok := loadWatcherSeries[measured]; !ok || !slices.Contains(metricsprobe.Series, series) {
				t.Errorf("%s scores by the measured use of %s, which the metrics probe does not check (metricsprobe.Series %v): "+
					"teach the probe and the recording rules the series load-watcher reads for it", profileType, measured, metricsprobe.Series)
			}
		}
	}
}

// describedDefault matches a default as the CRD's descriptions write it: numbers bare,
// strings quoted, quantities bare (1 or 1000m), maps as "key value" pairs in the order of
// their keys.
func describedDefault(value reflect.Value) string {
	if quantity, ok := value.Interface().(resource.Quantity); ok {
		return `(?:` + regexp.QuoteMeta(quantity.String()) + `|` + strconv.FormatInt(quantity.MilliValue(), 10) + `m)`
	}
	switch value.Kind() {
	case reflect.Pointer:
		return describedDefault(value.Elem())
	case reflect.String:
		return regexp.QuoteMeta(strconv.Quote(value.String()))
	case reflect.Int, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(value.Int(), 10)
	case reflect.Map:
		keys := value.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		pairs := make([]string, 0, len(keys))
		for _, key := range keys {
			pairs = append(pairs, regexp.QuoteMeta(key.String())+" "+describedDefault(value.MapIndex(key)))
		}
		return strings.Join(pairs, ", ")
	default:
		return regexp.QuoteMeta(fmt.Sprint(value.Interface()))
	}
}

// Every argument of every profile has a default in the table, and the CRD's description of
// the argument states it, so that users read what their scheduler does when they leave it out.
func TestProfileDefaultsAreDocumented(t *testing.T) {
	schema := profileSchemaOfTheCRD(t)
	for _, profileType := range sortedProfileTypes() {
		profile := profiles[profileType]
		if profile.member == "" {
			if profile.defaults != nil {
				t.Errorf("%s has defaults in the profiles table but no member: set member to its field of Profile in api/v1", profileType)
			}
			continue
		}
		defaults := reflect.ValueOf(profile.defaults)
		if defaults.Kind() != reflect.Pointer || defaults.IsNil() || defaults.Elem().Kind() != reflect.Struct {
			t.Errorf("%s: its defaults in the profiles table must be a pointer to its arguments type in api/v1, not %T", profileType, profile.defaults)
			continue
		}
		arguments := schema.Properties[profile.member].Properties
		for field, value := range defaults.Elem().Fields() {
			name, _, _ := strings.Cut(field.Tag.Get("json"), ",")
			if value.IsZero() {
				t.Errorf("%s: profile.%s.%s has no default in the profiles table: set it in defaults, as the scheduler uses it when it is left out",
					profileType, profile.member, name)
				continue
			}
			description := strings.Join(strings.Fields(arguments[name].Description), " ")
			if !regexp.MustCompile(`(?i)\bdefault:? ` + describedDefault(value) + `(\W|$)`).MatchString(description) {
				t.Errorf("%s: the CRD's description of profile.%s.%s does not say its default as the profiles table has it (%v): %q: "+
					"correct the comment of %s in api/v1 (and run make manifests) or the defaults",
					profileType, profile.member, name, asJSONValue(t, value.Interface()), description, field.Name)
			}
		}
	}
}

// The defaults of an in-tree profile are what its asset holds: rendering them changes
// nothing. (A load-aware plugin applies its defaults itself, so for it they are the
// plugin's, as documented, and the golden shows them rendered.)
func TestInTreeProfileDefaultsAreInTheirAssets(t *testing.T) {
	for _, profileType := range sortedProfileTypes() {
		profile := profiles[profileType]
		if profile.loadAware != nil || profile.member == "" {
			continue
		}
		render := func(spec *v1.Profile) string {
			config, err := SchedulerConfig(secondaryScheduler("defaults", func(cr *v1.SecondaryScheduler) { cr.Spec.Profile = spec }), Facts{})
			if err != nil {
				t.Fatalf("%s: %v", profileType, err)
			}
			return config
		}
		if diff := cmp.Diff(render(&v1.Profile{Type: profileType}), render(profileWithDefaults(t, profileType))); diff != "" {
			t.Errorf("%s: its defaults in the profiles table are not those of its asset %s (-asset +defaults):\n%s", profileType, profile.asset, diff)
		}
	}
}

// goldenNameOf is the golden file of a profile type: profile-target-load-packing for
// TargetLoadPacking.
func goldenNameOf(profileType v1.ProfileType) string {
	return "profile-" + strings.ToLower(regexp.MustCompile(`([a-z0-9])([A-Z])`).ReplaceAllString(string(profileType), "$1-$2"))
}

// Each profile's scheduler configuration with its defaults written out, and for a
// load-aware one its request-based stand-in too, has a golden file, written for a new
// profile by go test ./internal/render -run TestProfileGoldens -update.
func TestProfileGoldens(t *testing.T) {
	for _, profileType := range sortedProfileTypes() {
		t.Run(string(profileType), func(t *testing.T) {
			profile := profiles[profileType]
			cr := secondaryScheduler("profiled", func(cr *v1.SecondaryScheduler) {
				cr.Spec.Profile = profileWithDefaults(t, profileType)
				if profileType == v1.CustomProfile {
					cr.Spec.Profile, cr.Spec.SchedulerConfig = nil, "config"
				}
			})
			facts := Facts{CustomConfig: []byte(customConfig), PrometheusAddress: "http://prometheus-k8s.monitoring.svc:9090"}
			// A Custom configuration names its own profiles.
			schedulerNameOfTheConfig := cr.EffectiveSchedulerName()
			if profileType == v1.CustomProfile {
				schedulerNameOfTheConfig = ""
			}
			heading := fmt.Sprintf("# profile type %s", profileType)
			switch {
			case profileType == v1.CustomProfile:
				heading += ": the user's configuration with the fields the operator sets"
			case profile.member != "":
				heading += fmt.Sprintf(", profile.%s at its defaults", profile.member)
			}
			documents := []string{heading + "\n"}
			if profile.loadAware != nil {
				documents = append(documents, "# scoring by requests while its metrics are unavailable (whenUnavailable: ScoreByRequests)\n")
			}
			for i := range documents {
				facts.ScoreByRequests = i == 1
				config, err := SchedulerConfig(cr, facts)
				if err != nil {
					t.Fatal(err)
				}
				parsed, err := schedconfig.Parse([]byte(config), schedulerNameOfTheConfig, "the rendered configuration")
				if err != nil {
					t.Fatalf("the rendered configuration does not pass schedconfig.Parse: %v\n%s", err, config)
				}
				// The controller checks plugin names of Custom configurations only
				// (internal/desired's checkPluginsInImage): the typed profiles must enable known plugins.
				if unknown := schedconfig.UnknownPlugins(parsed, true); profileType != v1.CustomProfile && len(unknown) > 0 {
					t.Errorf("profile %s enables plugins no kube-scheduler has: %v", profileType, unknown)
				}
				documents[i] += config
			}
			expectGolden(t, goldenNameOf(profileType), strings.Join(documents, "---\n"))
		})
	}
}
