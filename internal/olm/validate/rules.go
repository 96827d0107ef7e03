package validate

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/mail"
	"net/url"
	"slices"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/distribution/reference"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/crdschema"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/olm/bundle"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/olm/csv"
)

// Rules are every rule of OLM's bundle validators (default and operatorframework suites)
// that applies to a registry+v1 bundle, plus this project's: alm-examples valid against
// the CRD's schema and CEL rules.
var Rules = []Rule{
	{"format/directories", checkDirectories},
	{"format/annotations", checkAnnotations},
	{"format/object-kinds", checkObjectKinds},
	{"format/object-metadata", checkObjectMetadata},
	{"contents/crds", checkCRDsOwned},
	{"contents/service-accounts", checkServiceAccounts},
	{"contents/size", checkSize},
	{"contents/related-images", checkRelatedImages},
	{"csv/names", checkCSVNames},
	{"csv/name-format", checkCSVNameFormat},
	{"csv/required-fields", checkRequiredFields},
	{"csv/alm-examples", checkALMExamples},
	{"csv/install-modes", checkInstallModes},
	{"csv/min-kube-version", checkMinKubeVersion},
	{"csv/olm-annotations", checkOLMAnnotationCase},
	{"csv/skip-range", checkSkipRange},
	{"crd/apiextensions", checkCRDs},
	{"operatorhub/metadata", checkOperatorHub},
	{"operatorhub/capabilities", checkCapabilities},
	{"operatorhub/categories", checkCategories},
	{"operatorhub/deprecated-apis", checkDeprecatedAPIs},
	{"good-practices/deployments", checkHasDeployment},
	{"good-practices/resource-requests", checkResourceRequests},
	{"good-practices/crd-descriptions", checkCRDDescriptions},
	{"good-practices/channels", checkChannelNames},
	{"good-practices/crd-permissions", checkCRDPermissions},
	{"objects/pod-disruption-budgets", checkPDBs},
	{"objects/priority-classes", checkPriorityClasses},
	{"objects/rbac", checkRBACObjects},
	{"project/alm-examples-schema", checkExamplesAgainstCRD},
}

const (
	annotationPrefix = "operators.operatorframework.io.bundle."
	maxBundleBytes   = 1 << 20
)

func checkDirectories(b *Bundle) []Finding {
	var out []Finding
	for _, dir := range []string{"manifests/", "metadata/"} {
		if !slices.ContainsFunc(slices.Collect(maps.Keys(b.Files)), func(p string) bool { return strings.HasPrefix(p, dir) }) {
			out = append(out, errorf("no %s directory", dir))
		}
	}
	if _, ok := b.Files["metadata/annotations.yaml"]; !ok {
		out = append(out, errorf("no metadata/annotations.yaml"))
	}
	return out
}

func checkAnnotations(b *Bundle) []Finding {
	var out []Finding
	want := map[string]string{"mediatype.v1": "registry+v1", "manifests.v1": "manifests/", "metadata.v1": "metadata/", "package.v1": "", "channels.v1": ""}
	for _, key := range slices.Sorted(maps.Keys(want)) {
		value := b.Annotations[annotationPrefix+key]
		switch {
		case value == "":
			out = append(out, errorf("annotation %s%s is missing or empty", annotationPrefix, key))
		case want[key] != "" && value != want[key]:
			out = append(out, errorf("annotation %s%s is %q, want %q", annotationPrefix, key, value, want[key]))
		}
	}
	if value, ok := b.Annotations[annotationPrefix+"channel.default.v1"]; ok && value == "" {
		out = append(out, errorf("annotation %schannel.default.v1 is present but empty", annotationPrefix))
	}
	return out
}

func checkObjectKinds(b *Bundle) []Finding {
	var out []Finding
	for _, o := range b.Objects {
		kind := o.GetKind()
		if kind == csv.Kind || kind == "CustomResourceDefinition" || slices.Contains(bundle.LooseKinds, kind) {
			continue
		}
		out = append(out, errorf("%s: a registry+v1 bundle cannot carry a %s; put it into the CSV", o.File, kind))
	}
	return out
}

func checkObjectMetadata(b *Bundle) []Finding {
	var out []Finding
	for _, o := range b.Objects {
		var meta metav1.ObjectMeta
		raw, _ := o.Object["metadata"].(map[string]any)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &meta); err != nil {
			out = append(out, errorf("%s: metadata: %v", o.File, err))
			continue
		}
		// RBAC objects may have path-segment names (system:...), as the API server allows.
		nameCheck := apivalidation.NameIsDNSSubdomain
		if strings.HasPrefix(o.GetAPIVersion(), rbacv1.GroupName+"/") {
			nameCheck = pathSegmentName
		}
		for _, err := range apivalidation.ValidateObjectMeta(&meta, meta.Namespace != "", nameCheck, field.NewPath("metadata")) {
			out = append(out, errorf("%s: %v", o.File, err))
		}
	}
	return out
}

// pathSegmentName is the API server's check of RBAC object names: any name that can be a
// URL path segment.
func pathSegmentName(name string, prefix bool) []string {
	if !prefix && (name == "." || name == "..") {
		return []string{fmt.Sprintf("may not be %q", name)}
	}
	if strings.ContainsAny(name, "/%") {
		return []string{"may not contain '/' or '%'"}
	}
	return nil
}

func checkCRDsOwned(b *Bundle) []Finding {
	var out []Finding
	crds := b.objectsOfKind("CustomResourceDefinition")
	names := make([]string, 0, len(crds))
	for _, o := range crds {
		if slices.Contains(names, o.GetName()) {
			out = append(out, errorf("CRD %s appears twice", o.GetName()))
		}
		names = append(names, o.GetName())
	}
	if b.CSV == nil {
		return out
	}
	var owned, required []string
	for _, d := range b.CSV.Spec.CustomResourceDefinitions.Owned {
		owned = append(owned, d.Name)
		if !slices.Contains(names, d.Name) {
			out = append(out, errorf("the CSV owns CRD %s, which is not in the bundle", d.Name))
		}
	}
	for _, d := range b.CSV.Spec.CustomResourceDefinitions.Required {
		required = append(required, d.Name)
	}
	for _, name := range names {
		if !slices.Contains(owned, name) && !slices.Contains(required, name) {
			out = append(out, errorf("CRD %s is in the bundle but neither owned nor required by the CSV", name))
		}
	}
	return out
}

func checkServiceAccounts(b *Bundle) []Finding {
	if b.CSV == nil {
		return nil
	}
	var used []string
	for _, d := range b.CSV.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		used = append(used, d.Spec.Template.Spec.ServiceAccountName)
	}
	var out []Finding
	for _, o := range b.objectsOfKind("ServiceAccount") {
		if slices.Contains(used, o.GetName()) {
			out = append(out, errorf("%s: ServiceAccount %s is used by a CSV deployment; OLM creates it", o.File, o.GetName()))
		}
	}
	return out
}

func checkSize(b *Bundle) []Finding {
	size, err := b.gzipSize()
	if err != nil {
		return []Finding{errorf("compress the bundle: %v", err)}
	}
	switch {
	case size > maxBundleBytes:
		return []Finding{errorf("the compressed bundle is %d bytes, above the limit of %d", size, maxBundleBytes)}
	case size > maxBundleBytes*85/100:
		return []Finding{warnf("the compressed bundle is %d bytes, above 85%% of the limit of %d", size, maxBundleBytes)}
	}
	return nil
}

func checkRelatedImages(b *Bundle) []Finding {
	if b.CSV == nil {
		return nil
	}
	var out []Finding
	for _, image := range b.CSV.Spec.RelatedImages {
		if image.Image == "" {
			out = append(out, errorf("related image %q has no image", image.Name))
			continue
		}
		if _, err := reference.ParseNormalizedNamed(image.Image); err != nil {
			out = append(out, errorf("related image %q: %q is not a valid pull spec: %v", image.Name, image.Image, err))
		}
	}
	return out
}

func checkCSVNames(b *Bundle) []Finding {
	if b.CSV == nil {
		return []Finding{errorf("the bundle has no ClusterServiceVersion")}
	}
	var out []Finding
	for where, name := range map[string]string{"metadata.name": b.CSV.Name, "spec.replaces": b.CSV.Spec.Replaces} {
		if name == "" && where == "spec.replaces" {
			continue
		}
		problems := append(validation.IsDNS1123Subdomain(name), validation.IsValidLabelValue(name)...)
		for _, p := range problems {
			out = append(out, errorf("%s %q: %s", where, name, p))
		}
	}
	slices.SortFunc(out, func(a, b Finding) int { return strings.Compare(a.Message, b.Message) })
	return out
}

// checkCSVNameFormat reports a CSV name that is not <package>.v<semver>; the
// good-practices suite repeats the same warning.
func checkCSVNameFormat(b *Bundle) []Finding {
	if b.CSV == nil {
		return nil
	}
	pkg := b.Annotations[annotationPrefix+"package.v1"]
	version, ok := strings.CutPrefix(b.CSV.Name, pkg+".v")
	if _, err := semver.Parse(version); !ok || err != nil {
		return []Finding{warnf("CSV name %q does not follow <package>.v<semver> (package %q)", b.CSV.Name, pkg)}
	}
	return nil
}

// requiredPaths are the CSV's fields without omitempty upstream, as dotted paths ([] for
// each item of a list), which must be set.
var requiredPaths = []string{
	"apiVersion", "kind", "metadata.name",
	"spec.displayName", "spec.install.strategy", "spec.install.spec.deployments",
	"spec.install.spec.deployments[].name", "spec.install.spec.deployments[].spec",
	"spec.install.spec.permissions[].serviceAccountName", "spec.install.spec.permissions[].rules",
	"spec.install.spec.clusterPermissions[].serviceAccountName", "spec.install.spec.clusterPermissions[].rules",
	"spec.customresourcedefinitions.owned[].name", "spec.customresourcedefinitions.owned[].version",
	"spec.customresourcedefinitions.owned[].kind",
	"spec.customresourcedefinitions.owned[].specDescriptors[].path",
	"spec.customresourcedefinitions.owned[].statusDescriptors[].path",
	"spec.customresourcedefinitions.required[].name", "spec.customresourcedefinitions.required[].version",
	"spec.customresourcedefinitions.required[].kind",
	"spec.icon[].base64data", "spec.icon[].mediatype", "spec.installModes[].type",
	"spec.relatedImages[].name", "spec.relatedImages[].image",
}

func checkRequiredFields(b *Bundle) []Finding {
	var object map[string]any
	for _, o := range b.objectsOfKind(csv.Kind) {
		object = o.Object
	}
	if object == nil {
		return nil
	}
	var out []Finding
	for _, p := range requiredPaths {
		for _, missing := range missingAt(object, strings.Split(p, "."), "") {
			out = append(out, errorf("required field %s is not set", missing))
		}
	}
	return out
}

// missingAt walks object along path and returns where a required value is missing or
// empty; a list segment ([]) is checked in each item, and a missing optional list above it
// is fine.
func missingAt(value any, keys []string, at string) []string {
	if len(keys) == 0 {
		if isEmpty(value) {
			return []string{at}
		}
		return nil
	}
	object, _ := value.(map[string]any)
	key, list := strings.CutSuffix(keys[0], "[]")
	here := strings.TrimPrefix(at+"."+key, ".")
	child, ok := object[key]
	if list {
		items, _ := child.([]any)
		var out []string
		for i, item := range items {
			out = append(out, missingAt(item, keys[1:], fmt.Sprintf("%s[%d]", here, i))...)
		}
		return out
	}
	if !ok && len(keys) > 1 {
		// An optional parent: its required children apply only when it is set, except
		// under the always-required parents of a required leaf.
		if key != "metadata" && key != "spec" && key != "install" {
			return nil
		}
	}
	return missingAt(child, keys[1:], here)
}

func isEmpty(value any) bool {
	switch v := value.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	}
	return false
}

func checkALMExamples(b *Bundle) []Finding {
	if b.CSV == nil {
		return nil
	}
	var out []Finding
	if len(b.CSV.Annotations) == 0 {
		out = append(out, warnf("the CSV has no annotations"))
	}
	examples, ok, err := b.almExamples()
	switch {
	case !ok:
		return append(out, warnf("the CSV has no alm-examples annotation"))
	case err != nil:
		return append(out, errorf("alm-examples is not a JSON list of objects: %v", err))
	}
	owned := map[string]bool{}
	internal, err := internalObjects(b)
	if err != nil {
		out = append(out, errorf("%v", err))
	}
	for _, d := range b.CSV.Spec.CustomResourceDefinitions.Owned {
		// An internal object (the operator's own) needs no example; one may still be given.
		owned[ownedGVK(d)] = slices.Contains(internal, d.Name)
	}
	for i, example := range examples {
		apiVersion, _ := example["apiVersion"].(string)
		kind, _ := example["kind"].(string)
		gvk := apiVersion + ", Kind=" + kind
		if apiVersion == "" || kind == "" {
			out = append(out, errorf("alm-examples[%d] has no apiVersion or kind", i))
			continue
		}
		if _, ok := owned[gvk]; !ok {
			out = append(out, errorf("alm-examples[%d] is a %s, which the CSV does not own", i, gvk))
			continue
		}
		owned[gvk] = true
	}
	for _, gvk := range slices.Sorted(maps.Keys(owned)) {
		if !owned[gvk] {
			out = append(out, warnf("owned API %s has no example in alm-examples", gvk))
		}
	}
	return out
}

// internalObjectsAnnotation lists, as a JSON list of CRD names, the owned APIs that only
// the operator uses: consoles hide them.
const internalObjectsAnnotation = "operators.operatorframework.io/internal-objects"

// internalObjects are the CRD names the CSV marks internal.
func internalObjects(b *Bundle) ([]string, error) {
	listed, found := b.CSV.Annotations[internalObjectsAnnotation]
	if !found {
		return nil, nil
	}
	var names []string
	if err := json.Unmarshal([]byte(listed), &names); err != nil {
		return nil, fmt.Errorf("%s is not a JSON list of CRD names: %w", internalObjectsAnnotation, err)
	}
	return names, nil
}

func ownedGVK(d csv.CRDDescription) string {
	_, group, _ := strings.Cut(d.Name, ".")
	return group + "/" + d.Version + ", Kind=" + d.Kind
}

func checkInstallModes(b *Bundle) []Finding {
	if b.CSV == nil {
		return nil
	}
	modes := b.CSV.Spec.InstallModes
	if len(modes) == 0 {
		return []Finding{errorf("spec.installModes is empty")}
	}
	var supported []string
	for _, m := range modes {
		if !slices.Contains([]string{csv.InstallModeOwnNamespace, csv.InstallModeSingleNamespace, csv.InstallModeMultiNamespace, csv.InstallModeAllNamespaces}, m.Type) {
			return []Finding{errorf("install mode %q is not a known type", m.Type)}
		}
		if m.Supported {
			supported = append(supported, m.Type)
		}
	}
	if len(supported) == 0 {
		return []Finding{errorf("no install mode is supported")}
	}
	for _, w := range b.CSV.Spec.WebhookDefinitions {
		if w.Type == "ConversionWebhook" && !slices.Equal(supported, []string{csv.InstallModeAllNamespaces}) {
			return []Finding{errorf("a conversion webhook requires AllNamespaces as the only supported install mode, not %v", supported)}
		}
	}
	return nil
}

func checkMinKubeVersion(b *Bundle) []Finding {
	if b.CSV == nil {
		return nil
	}
	v := b.CSV.Spec.MinKubeVersion
	if v == "" {
		return []Finding{warnf("spec.minKubeVersion is not set")}
	}
	if _, err := semver.Parse(v); err != nil {
		return []Finding{errorf("spec.minKubeVersion %q is not a semantic version: %v", v, err)}
	}
	return nil
}

// olmAnnotations must be spelled exactly so: OLM reads them case-sensitively.
var olmAnnotations = []string{"olm.operatorGroup", "olm.operatorNamespace", "olm.targetNamespaces", "olm.providedAPIs", "olm.skipRange"}

func checkOLMAnnotationCase(b *Bundle) []Finding {
	if b.CSV == nil {
		return nil
	}
	var out []Finding
	for _, key := range slices.Sorted(maps.Keys(b.CSV.Annotations)) {
		for _, want := range olmAnnotations {
			if strings.EqualFold(key, want) && key != want {
				out = append(out, errorf("annotation %q must be spelled %q", key, want))
			}
		}
	}
	return out
}

func checkSkipRange(b *Bundle) []Finding {
	if b.CSV == nil {
		return nil
	}
	skipRange, ok := b.CSV.Annotations["olm.skipRange"]
	if !ok {
		return nil
	}
	if _, err := semver.ParseRange(skipRange); err != nil {
		return []Finding{errorf("olm.skipRange %q is not a semver range: %v", skipRange, err)}
	}
	return nil
}

func checkCRDs(b *Bundle) []Finding {
	var out []Finding
	for _, o := range b.objectsOfKind("CustomResourceDefinition") {
		data, err := yaml.Marshal(o.Object)
		if err == nil {
			crd, decodeErr := crdschema.Decode(data)
			if decodeErr == nil {
				for _, message := range crdschema.CreationErrors(crd) {
					out = append(out, errorf("CRD %s: %s", o.GetName(), message))
				}
				continue
			}
			err = decodeErr
		}
		out = append(out, errorf("CRD %s: %v", o.GetName(), err))
	}
	return out
}

var iconMediaTypes = []string{"image/gif", "image/jpeg", "image/png", "image/svg+xml"}

func checkOperatorHub(b *Bundle) []Finding {
	if b.CSV == nil {
		return nil
	}
	spec := b.CSV.Spec
	var out []Finding
	if spec.Provider.Name == "" {
		out = append(out, errorf("spec.provider.name is not set"))
	}
	for i, m := range spec.Maintainers {
		if m.Name == "" {
			out = append(out, errorf("spec.maintainers[%d] has no name", i))
		}
		if _, err := mail.ParseAddress(m.Email); err != nil {
			out = append(out, errorf("spec.maintainers[%d].email %q is not valid: %v", i, m.Email, err))
		}
	}
	for i, l := range spec.Links {
		if l.Name == "" {
			out = append(out, errorf("spec.links[%d] has no name", i))
		}
		if u, err := url.ParseRequestURI(l.URL); err != nil || u.Host == "" {
			out = append(out, errorf("spec.links[%d].url %q is not a valid URL", i, l.URL))
		}
	}
	if spec.Version == "" {
		out = append(out, errorf("spec.version is not set"))
	}
	switch {
	case len(spec.Icon) == 0:
		out = append(out, warnf("the CSV has no icon"))
	case len(spec.Icon) > 1:
		out = append(out, errorf("the CSV has %d icons; at most one", len(spec.Icon)))
	default:
		icon := spec.Icon[0]
		if _, err := base64.StdEncoding.DecodeString(icon.Data); err != nil || icon.Data == "" {
			out = append(out, errorf("the icon's base64data is not base64"))
		}
		if !slices.Contains(iconMediaTypes, icon.MediaType) {
			out = append(out, errorf("the icon's mediatype %q is not one of %v", icon.MediaType, iconMediaTypes))
		}
	}
	return out
}

var capabilityLevels = []string{"Basic Install", "Seamless Upgrades", "Full Lifecycle", "Deep Insights", "Auto Pilot"}

func checkCapabilities(b *Bundle) []Finding {
	if b.CSV == nil {
		return nil
	}
	if c := b.CSV.Annotations["capabilities"]; !slices.Contains(capabilityLevels, c) {
		return []Finding{errorf("capabilities %q is not one of %v", c, capabilityLevels)}
	}
	return nil
}

var standardCategories = []string{
	"AI/Machine Learning", "Application Runtime", "Big Data", "Cloud Provider", "Database",
	"Developer Tools", "Drivers and plugins", "Integration & Delivery", "Logging & Tracing",
	"Modernization & Migration", "Monitoring", "Networking", "OpenShift Optional", "Security",
	"Storage", "Streaming & Messaging",
}

func checkCategories(b *Bundle) []Finding {
	if b.CSV == nil {
		return nil
	}
	raw, ok := b.CSV.Annotations["categories"]
	if !ok {
		return nil
	}
	var out []Finding
	for _, c := range strings.Split(raw, ",") {
		if c = strings.TrimSpace(c); !slices.Contains(standardCategories, c) {
			out = append(out, errorf("category %q is not a standard one", c))
		}
	}
	return out
}

// removedAPIs are API versions removed from Kubernetes, with the minor that removed them.
// A bundle has no upper bound on the Kubernetes it installs on, so any of them is an error.
var removedAPIs = map[string]string{
	"apiextensions.k8s.io/v1beta1, Kind=CustomResourceDefinition":               "1.22",
	"rbac.authorization.k8s.io/v1beta1, Kind=ClusterRole":                       "1.22",
	"rbac.authorization.k8s.io/v1beta1, Kind=ClusterRoleBinding":                "1.22",
	"rbac.authorization.k8s.io/v1beta1, Kind=Role":                              "1.22",
	"rbac.authorization.k8s.io/v1beta1, Kind=RoleBinding":                       "1.22",
	"scheduling.k8s.io/v1beta1, Kind=PriorityClass":                             "1.22",
	"networking.k8s.io/v1beta1, Kind=Ingress":                                   "1.22",
	"policy/v1beta1, Kind=PodDisruptionBudget":                                  "1.25",
	"policy/v1beta1, Kind=PodSecurityPolicy":                                    "1.25",
	"batch/v1beta1, Kind=CronJob":                                               "1.25",
	"autoscaling/v2beta1, Kind=HorizontalPodAutoscaler":                         "1.25",
	"autoscaling/v2beta2, Kind=HorizontalPodAutoscaler":                         "1.26",
	"flowcontrol.apiserver.k8s.io/v1beta2, Kind=FlowSchema":                     "1.29",
	"flowcontrol.apiserver.k8s.io/v1beta3, Kind=FlowSchema":                     "1.32",
	"admissionregistration.k8s.io/v1beta1, Kind=ValidatingWebhookConfiguration": "1.22",
	"admissionregistration.k8s.io/v1beta1, Kind=MutatingWebhookConfiguration":   "1.22",
}

func checkDeprecatedAPIs(b *Bundle) []Finding {
	var out []Finding
	for _, o := range b.Objects {
		gvk := o.GroupVersionKind().String()
		if removed, ok := removedAPIs[strings.TrimPrefix(gvk, "/")]; ok {
			out = append(out, errorf("%s: %s was removed in Kubernetes %s", o.File, gvk, removed))
		}
	}
	return out
}

func checkHasDeployment(b *Bundle) []Finding {
	if b.CSV != nil && len(b.CSV.Spec.InstallStrategy.StrategySpec.DeploymentSpecs) == 0 {
		return []Finding{errorf("the CSV installs no deployment")}
	}
	return nil
}

func checkResourceRequests(b *Bundle) []Finding {
	if b.CSV == nil {
		return nil
	}
	var out []Finding
	for _, d := range b.CSV.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		for _, c := range d.Spec.Template.Spec.Containers {
			if len(c.Resources.Requests) == 0 {
				out = append(out, warnf("deployment %s: container %s has no resource requests", d.Name, c.Name))
			}
		}
	}
	return out
}

func checkCRDDescriptions(b *Bundle) []Finding {
	var out []Finding
	if b.CSV != nil {
		for _, d := range b.CSV.Spec.CustomResourceDefinitions.Owned {
			if d.Description == "" {
				out = append(out, warnf("owned CRD %s has no description in the CSV", d.Name))
			}
		}
	}
	for _, o := range b.objectsOfKind("CustomResourceDefinition") {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &crd); err != nil {
			continue
		}
		for _, v := range crd.Spec.Versions {
			if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil || v.Schema.OpenAPIV3Schema.Description == "" {
				out = append(out, warnf("CRD %s version %s has no description", crd.Name, v.Name))
			}
		}
	}
	return out
}

func checkChannelNames(b *Bundle) []Finding {
	var out []Finding
	for _, c := range strings.Split(b.Annotations[annotationPrefix+"channels.v1"], ",") {
		c = strings.TrimSpace(c)
		if c != "" && !strings.HasPrefix(c, "candidate") && !strings.HasPrefix(c, "stable") && !strings.HasPrefix(c, "fast") {
			out = append(out, warnf("channel %q does not start with candidate, stable or fast", c))
		}
	}
	return out
}

// csvRules are the CSV's permissions and clusterPermissions, each with where it comes from.
func csvRules(b *Bundle) map[string][]rbacv1.PolicyRule {
	rules := map[string][]rbacv1.PolicyRule{}
	if b.CSV == nil {
		return rules
	}
	for _, p := range b.CSV.Spec.InstallStrategy.StrategySpec.Permissions {
		rules["CSV permissions of "+p.ServiceAccountName] = append(rules["CSV permissions of "+p.ServiceAccountName], p.Rules...)
	}
	for _, p := range b.CSV.Spec.InstallStrategy.StrategySpec.ClusterPermissions {
		rules["CSV clusterPermissions of "+p.ServiceAccountName] = append(rules["CSV clusterPermissions of "+p.ServiceAccountName], p.Rules...)
	}
	return rules
}

// allRules are the CSV's rules and those of the bundle's Roles and ClusterRoles.
func allRules(b *Bundle) map[string][]rbacv1.PolicyRule {
	rules := csvRules(b)
	for _, kind := range []string{"Role", "ClusterRole"} {
		for _, o := range b.objectsOfKind(kind) {
			var role rbacv1.ClusterRole
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role); err == nil {
				rules[o.File] = role.Rules
			}
		}
	}
	return rules
}

func grants(rule rbacv1.PolicyRule, group, resource string, verbs ...string) bool {
	matches := func(values []string, want string) bool {
		return slices.Contains(values, want) || slices.Contains(values, "*")
	}
	if !matches(rule.APIGroups, group) || !matches(rule.Resources, resource) {
		return false
	}
	return slices.ContainsFunc(verbs, func(v string) bool { return matches(rule.Verbs, v) })
}

func checkCRDPermissions(b *Bundle) []Finding {
	var out []Finding
	for _, source := range slices.Sorted(maps.Keys(csvRules(b))) {
		for _, rule := range csvRules(b)[source] {
			if grants(rule, "apiextensions.k8s.io", "customresourcedefinitions", "create") {
				out = append(out, warnf("%s may create CRDs", source))
			}
		}
	}
	return out
}

func checkPDBs(b *Bundle) []Finding {
	var out []Finding
	for _, o := range b.objectsOfKind("PodDisruptionBudget") {
		spec, _ := o.Object["spec"].(map[string]any)
		if v, ok := spec["maxUnavailable"]; ok && isZero(v) {
			out = append(out, errorf("%s: maxUnavailable 0 blocks every voluntary eviction (node drains)", o.File))
		}
		if v, ok := spec["minAvailable"]; ok && v == "100%" {
			out = append(out, errorf("%s: minAvailable 100%% blocks every voluntary eviction (node drains)", o.File))
		}
	}
	return out
}

// isZero says whether a PDB bound is 0 or 0%.
func isZero(v any) bool {
	switch t := v.(type) {
	case string:
		return t == "0" || t == "0%"
	case int64:
		return t == 0
	case float64:
		return t == 0
	}
	return false
}

func checkPriorityClasses(b *Bundle) []Finding {
	var out []Finding
	for _, o := range b.objectsOfKind("PriorityClass") {
		if global, _ := o.Object["globalDefault"].(bool); global {
			out = append(out, errorf("%s: a PriorityClass with globalDefault true changes every pod of the cluster", o.File))
		}
	}
	return out
}

// defaultSCCs are OpenShift's default SecurityContextConstraints.
var defaultSCCs = []string{"anyuid", "hostaccess", "hostmount-anyuid", "hostnetwork", "hostnetwork-v2", "node-exporter", "nonroot", "nonroot-v2", "privileged", "restricted", "restricted-v2"}

func checkRBACObjects(b *Bundle) []Finding {
	var out []Finding
	rules := allRules(b)
	for _, source := range slices.Sorted(maps.Keys(rules)) {
		for _, rule := range rules[source] {
			if grants(rule, "policy", "poddisruptionbudgets", "create", "update", "patch") {
				out = append(out, warnf("%s may create, update or patch PodDisruptionBudgets", source))
			}
			if grants(rule, "security.openshift.io", "securitycontextconstraints", "update", "patch", "delete") {
				for _, scc := range defaultSCCs {
					if len(rule.ResourceNames) == 0 || slices.Contains(rule.ResourceNames, scc) {
						out = append(out, errorf("%s may modify the default SecurityContextConstraints %s", source, scc))
						break
					}
				}
			}
		}
	}
	return out
}

func checkExamplesAgainstCRD(b *Bundle) []Finding {
	examples, _, err := b.almExamples()
	if err != nil {
		return nil // reported by csv/alm-examples
	}
	validators := map[string]*crdschema.Validator{}
	for _, o := range b.objectsOfKind("CustomResourceDefinition") {
		data, err := yaml.Marshal(o.Object)
		if err != nil {
			continue
		}
		crd, err := crdschema.Decode(data)
		if err != nil {
			continue
		}
		validator, err := crdschema.NewValidator(crd)
		if err != nil {
			return []Finding{errorf("CRD %s: %v", crd.Name, err)}
		}
		for _, v := range crd.Spec.Versions {
			validators[crd.Spec.Group+"/"+v.Name+", Kind="+crd.Spec.Names.Kind] = validator
		}
	}
	var out []Finding
	for i, example := range examples {
		apiVersion, _ := example["apiVersion"].(string)
		kind, _ := example["kind"].(string)
		validator, ok := validators[apiVersion+", Kind="+kind]
		if !ok {
			continue // reported by csv/alm-examples
		}
		validator.Default(example)
		for _, message := range validator.Errors(example) {
			out = append(out, errorf("alm-examples[%d] (%s): %s", i, bundle.ProfileOf(example), message))
		}
	}
	return out
}
