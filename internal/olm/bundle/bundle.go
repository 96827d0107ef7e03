// Package bundle generates the operator's OLM bundle (registry+v1) from config/: the
// ClusterServiceVersion from its hand-written base and what kustomize builds from
// config/default, the CRD, and the few other objects a bundle may carry. The output is a
// pure function of the tree and the options: no clock, no randomness, so generating twice
// gives identical files.
package bundle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/blang/semver/v4"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/olm/csv"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// Names and paths of the bundle.
const (
	// PackageName is the OLM package, and the prefix of every CSV name.
	PackageName = "secondary-scheduler-operator"
	// Channel is the only channel, also the default one.
	Channel = "stable"
	// ManagerServiceAccount is the operator's identity, whose bindings become the CSV's
	// permissions.
	ManagerServiceAccount = "secondary-scheduler-operator-controller-manager"
	// ManagerDeployment is the operator's Deployment in config/manager.
	ManagerDeployment = "secondary-scheduler-operator-controller-manager"
	// CSVBasePath is the hand-written part of the CSV, relative to the repository root.
	CSVBasePath = "config/manifests/bases/secondary-scheduler-operator.clusterserviceversion.yaml"
	// Dir, ManifestsDir and MetadataDir are where the bundle is written, relative to the
	// repository root; DockerfilePath is the bundle image's Dockerfile.
	Dir            = "bundle"
	ManifestsDir   = Dir + "/manifests"
	MetadataDir    = Dir + "/metadata"
	DockerfilePath = "bundle.Dockerfile"
	// CSVFile is the CSV's file name in ManifestsDir.
	CSVFile = PackageName + ".clusterserviceversion.yaml"

	defaultConfigDir = "config/default"
	// routingConfigDir builds the routing policy and its binding (dist/routing.yaml).
	routingConfigDir = "config/routing"
	samplesDir       = "config/samples"
	managerContainer = "manager"
	watchNamespace   = "WATCH_NAMESPACE"
	// targetNamespacesAnnotation is set by OLM on the operator's pod template: the
	// OperatorGroup's target namespaces, comma-separated.
	targetNamespacesAnnotation = "olm.targetNamespaces"
)

// Annotations are the bundle's metadata/annotations.yaml, repeated as LABELs of
// bundle.Dockerfile.
var Annotations = map[string]string{
	"operators.operatorframework.io.bundle.mediatype.v1":       "registry+v1",
	"operators.operatorframework.io.bundle.manifests.v1":       "manifests/",
	"operators.operatorframework.io.bundle.metadata.v1":        "metadata/",
	"operators.operatorframework.io.bundle.package.v1":         PackageName,
	"operators.operatorframework.io.bundle.channels.v1":        Channel,
	"operators.operatorframework.io.bundle.channel.default.v1": Channel,
}

// AdmissionKinds are the kinds of the admission policies the installer ships
// (config/admission): a bundle cannot carry them, so the CSV's description lists them for
// a cluster admin to apply.
var AdmissionKinds = []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"}

// LooseKinds are the kinds, besides the CSV and CRDs, that a registry+v1 bundle may
// carry (operator-registry's supported kinds).
var LooseKinds = []string{
	"Secret", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "ServiceAccount", "Service",
	"Role", "RoleBinding", "PrometheusRule", "ServiceMonitor", "PodDisruptionBudget",
	"PriorityClass", "VerticalPodAutoscaler", "ConsoleYAMLSample", "ConsoleQuickStart",
	"ConsoleCLIDownload", "ConsoleLink", "NetworkPolicy", "PodMonitor",
}

// Options are the inputs of Generate that do not come from the tree.
type Options struct {
	// Root is the repository root, holding config/.
	Root string
	// Version is the operator's semantic version, without a leading v.
	Version string
	// PreviousVersion is the version this one replaces; empty for none.
	PreviousVersion string
	// Image is the operator's image.
	Image string
}

// Bundle is the generated files, by path relative to the repository root.
type Bundle struct {
	Files map[string][]byte
}

// CSVName is the CSV's metadata.name for a version.
func CSVName(version string) string { return PackageName + ".v" + version }

// Generate builds the bundle.
func Generate(opts Options) (*Bundle, error) {
	if _, err := semver.Parse(opts.Version); err != nil {
		return nil, fmt.Errorf("version %q: %w", opts.Version, err)
	}
	if opts.PreviousVersion != "" {
		if _, err := semver.Parse(opts.PreviousVersion); err != nil {
			return nil, fmt.Errorf("previous version %q: %w", opts.PreviousVersion, err)
		}
	}
	if opts.Image == "" {
		return nil, fmt.Errorf("no operator image")
	}
	objects, err := kustomizeBuild(filepath.Join(opts.Root, defaultConfigDir))
	if err != nil {
		return nil, err
	}
	parts, err := split(objects)
	if err != nil {
		return nil, err
	}
	// The routing policy ships beside config/default (dist/routing.yaml): a bundle cannot
	// carry it either, so the description lists it with the others.
	routing, err := kustomizeBuild(filepath.Join(opts.Root, routingConfigDir))
	if err != nil {
		return nil, err
	}
	for _, object := range routing {
		if !slices.Contains(AdmissionKinds, object.GetKind()) {
			return nil, fmt.Errorf("%s builds %s %s, which is no admission policy", routingConfigDir, object.GetKind(), object.GetName())
		}
		parts.manual = append(parts.manual, object)
	}
	base, err := readCSVBase(filepath.Join(opts.Root, CSVBasePath))
	if err != nil {
		return nil, err
	}
	examples, err := almExamples(filepath.Join(opts.Root, samplesDir))
	if err != nil {
		return nil, err
	}
	out := &Bundle{Files: map[string][]byte{}}
	manifest, err := buildCSV(base, parts, examples, opts)
	if err != nil {
		return nil, err
	}
	out.Files[ManifestsDir+"/"+CSVFile] = manifest
	for _, object := range append(parts.crds, parts.loose...) {
		data, err := marshalObject(object.Object)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", object.GetKind(), object.GetName(), err)
		}
		out.Files[ManifestsDir+"/"+manifestFileName(object)] = data
	}
	annotations, err := yaml.Marshal(map[string]any{"annotations": Annotations})
	if err != nil {
		return nil, err
	}
	out.Files[MetadataDir+"/annotations.yaml"] = annotations
	out.Files[DockerfilePath] = dockerfile()
	return out, nil
}

// Write replaces the bundle under root with b: files no longer generated disappear.
func Write(root string, b *Bundle) error {
	for _, dir := range []string{ManifestsDir, MetadataDir} {
		if err := os.RemoveAll(filepath.Join(root, dir)); err != nil {
			return err
		}
	}
	for _, path := range slices.Sorted(maps.Keys(b.Files)) {
		full := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, b.Files[path], 0o644); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	return nil
}

// copyCSV copies base, so that generating never changes what was read.
func copyCSV(base *csv.ClusterServiceVersion) (*csv.ClusterServiceVersion, error) {
	data, err := json.Marshal(base)
	if err != nil {
		return nil, err
	}
	var out csv.ClusterServiceVersion
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// kustomizeBuild runs kustomize on dir, as kubectl kustomize does.
func kustomizeBuild(dir string) ([]*unstructured.Unstructured, error) {
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize %s: %w", dir, err)
	}
	objects := make([]*unstructured.Unstructured, 0, resources.Size())
	for _, resource := range resources.Resources() {
		// Through JSON, so that numbers are what the apimachinery converters expect.
		data, err := resource.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("kustomize %s: %w", dir, err)
		}
		object := &unstructured.Unstructured{}
		if err := object.UnmarshalJSON(data); err != nil {
			return nil, fmt.Errorf("kustomize %s: %w", dir, err)
		}
		objects = append(objects, object)
	}
	return objects, nil
}

func readCSVBase(path string) (*csv.ClusterServiceVersion, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var base csv.ClusterServiceVersion
	if err := yaml.UnmarshalStrict(data, &base); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if base.APIVersion != csv.APIVersion || base.Kind != csv.Kind {
		return nil, fmt.Errorf("%s: not a %s %s", path, csv.APIVersion, csv.Kind)
	}
	return &base, nil
}

// buildCSV completes the base with what the tree and the options say.
func buildCSV(base *csv.ClusterServiceVersion, parts *parts, examples []byte, opts Options) ([]byte, error) {
	out, err := copyCSV(base)
	if err != nil {
		return nil, err
	}
	out.Name = CSVName(opts.Version)
	out.Spec.Version = opts.Version
	if opts.PreviousVersion != "" {
		out.Spec.Replaces = CSVName(opts.PreviousVersion)
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	// Every earlier version may upgrade straight to this one. No createdAt: it would
	// change on every run and make the bundle impossible to verify as up to date.
	out.Annotations["olm.skipRange"] = "<" + opts.Version
	out.Annotations["containerImage"] = opts.Image
	out.Annotations["alm-examples"] = string(examples)

	if err := setOwnedCRDs(out, parts.crds); err != nil {
		return nil, err
	}
	deployment, err := operatorDeployment(parts.deployment, opts.Image)
	if err != nil {
		return nil, err
	}
	out.Spec.InstallStrategy = csv.NamedInstallStrategy{
		StrategyName: "deployment",
		StrategySpec: csv.StrategyDetailsDeployment{
			DeploymentSpecs:    []csv.StrategyDeploymentSpec{deployment},
			Permissions:        parts.permissions,
			ClusterPermissions: parts.clusterPermissions,
		},
	}
	out.Spec.RelatedImages = relatedImages(opts.Image)
	manual, err := manualObjectsSection(parts.manual)
	if err != nil {
		return nil, err
	}
	out.Spec.Description = strings.TrimRight(out.Spec.Description, "\n") + "\n" + manual
	return marshalObject(out)
}

func setOwnedCRDs(out *csv.ClusterServiceVersion, crds []*unstructured.Unstructured) error {
	for _, crd := range crds {
		kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		storage := ""
		for _, v := range versions {
			version, _ := v.(map[string]any)
			if served, _ := version["storage"].(bool); served {
				storage, _ = version["name"].(string)
			}
		}
		i := slices.IndexFunc(out.Spec.CustomResourceDefinitions.Owned, func(d csv.CRDDescription) bool { return d.Name == crd.GetName() })
		if i < 0 {
			return fmt.Errorf("%s: CRD %s is not in spec.customresourcedefinitions.owned; describe it there", CSVBasePath, crd.GetName())
		}
		owned := &out.Spec.CustomResourceDefinitions.Owned[i]
		if owned.Kind != kind {
			return fmt.Errorf("%s: CRD %s has kind %s, the base says %s", CSVBasePath, crd.GetName(), kind, owned.Kind)
		}
		owned.Version = storage
	}
	return nil
}

// operatorDeployment is the manager Deployment as OLM should create it: with the image
// of this bundle and WATCH_NAMESPACE read from the OperatorGroup's target namespaces.
func operatorDeployment(source *unstructured.Unstructured, image string) (csv.StrategyDeploymentSpec, error) {
	if source == nil {
		return csv.StrategyDeploymentSpec{}, fmt.Errorf("%s builds no Deployment %s", defaultConfigDir, ManagerDeployment)
	}
	var deployment appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(source.Object, &deployment); err != nil {
		return csv.StrategyDeploymentSpec{}, fmt.Errorf("deployment %s: %w", source.GetName(), err)
	}
	containers := deployment.Spec.Template.Spec.Containers
	i := slices.IndexFunc(containers, func(c corev1.Container) bool { return c.Name == managerContainer })
	if i < 0 {
		return csv.StrategyDeploymentSpec{}, fmt.Errorf("deployment %s has no container %s", source.GetName(), managerContainer)
	}
	containers[i].Image = image
	j := slices.IndexFunc(containers[i].Env, func(e corev1.EnvVar) bool { return e.Name == watchNamespace })
	if j < 0 {
		return csv.StrategyDeploymentSpec{}, fmt.Errorf("container %s of Deployment %s sets no %s", managerContainer, source.GetName(), watchNamespace)
	}
	// OLM writes the OperatorGroup's target namespaces into this pod annotation; the
	// operator runs schedulers there (main.go's --scheduler-namespaces default).
	containers[i].Env[j] = corev1.EnvVar{Name: watchNamespace, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + targetNamespacesAnnotation + "']"},
	}}
	return csv.StrategyDeploymentSpec{Name: deployment.Name, Label: deployment.Labels, Spec: deployment.Spec}, nil
}

// relatedImages lists the operator's image and every scheduler image it may default to,
// so that a mirror for a disconnected cluster holds them all.
func relatedImages(operatorImage string) []csv.RelatedImage {
	defaults := render.DefaultSchedulerImages()
	images := make([]csv.RelatedImage, 0, 1+len(defaults))
	images = append(images, csv.RelatedImage{Name: PackageName, Image: operatorImage})
	for _, image := range defaults {
		tag := image[strings.LastIndex(image, ":")+1:]
		images = append(images, csv.RelatedImage{Name: "kube-scheduler-" + strings.NewReplacer(".", "-").Replace(tag), Image: image})
	}
	return images
}

// manualObjectsSection renders, for the CSV's description, the objects a cluster admin
// must apply after OLM installs the operator.
func manualObjectsSection(objects []*unstructured.Unstructured) (string, error) {
	if len(objects) == 0 {
		return "", nil
	}
	var b strings.Builder
	b.WriteString("\n" + manualObjectsHeading + "\n\n")
	b.WriteString("OLM creates a bundle's Roles and RoleBindings only in the operator's namespace, and no\n")
	b.WriteString("admission policy at all, so a cluster admin applies these once, before subscribing,\n")
	b.WriteString("and again with each upgrade (change the ServiceAccount subject's namespace and the\n")
	b.WriteString("binding's paramRef.namespace if the operator is not installed in\n")
	b.WriteString("secondary-scheduler-operator):\n\n")
	b.WriteString("- the two Roles and RoleBindings in kube-system: each scheduler reads the request-header\n")
	b.WriteString("  CA there, so the operator manages RoleBindings there; and scheduler-plugins' controller,\n")
	b.WriteString("  which the operator runs while a scheduler enables Coscheduling or CapacityScheduling,\n")
	b.WriteString("  elects its leader with a Lease there;\n")
	b.WriteString("- the ValidatingAdmissionPolicy and its binding that check who may create or change a\n")
	b.WriteString("  SecondaryScheduler. The operator cannot create or change admission policies, so that\n")
	b.WriteString("  its account lends no such power; it writes only their parameters (a ConfigMap in its\n")
	b.WriteString("  namespace) and runs no scheduler until they are in place as this release ships them;\n")
	b.WriteString("- the ValidatingAdmissionPolicy and its binding that let the operator create pods in dry\n")
	b.WriteString("  run only: it may create pods in its namespace for its routing probe, which RBAC cannot\n")
	b.WriteString("  limit to dry runs, and it runs no scheduler until they are in place either;\n")
	b.WriteString("- on Kubernetes 1.36 and later, for spec.routing, the MutatingAdmissionPolicy and its\n")
	b.WriteString("  binding that route pods, whose parameters are the RoutingTable the operator writes;\n")
	b.WriteString("  and for spec.descheduling, the one that labels each pod with its scheduler's name, by\n")
	b.WriteString("  which a descheduler selects its scheduler's pods (older clusters refuse these four, and\n")
	b.WriteString("  the operator runs there without routing or descheduling).\n\n```yaml\n")
	for i, object := range objects {
		data, err := marshalObject(object.Object)
		if err != nil {
			return "", err
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(data)
	}
	b.WriteString("```\n")
	return b.String(), nil
}

// manualObjectsHeading opens the section of the description that lists the objects a
// cluster admin applies; earlier releases' descriptions open it with
// legacyManualObjectsHeading (the kube-system Role and RoleBinding only).
const (
	manualObjectsHeading       = "## Apply before installing, as a cluster admin"
	legacyManualObjectsHeading = "## Apply in kube-system after installing"
)

// ManualObjects extracts the YAML objects that manualObjectsSection put into a CSV
// description.
func ManualObjects(description string) ([][]byte, error) {
	const fence = "```yaml\n"
	start := strings.Index(description, "\n"+manualObjectsHeading+"\n")
	if start < 0 {
		start = strings.Index(description, "\n"+legacyManualObjectsHeading+"\n")
	}
	if start < 0 {
		return nil, nil
	}
	rest := description[start:]
	open := strings.Index(rest, fence)
	end := strings.LastIndex(rest, "```\n")
	if open < 0 || end <= open {
		return nil, fmt.Errorf("the section %q of the description has no YAML block", manualObjectsHeading)
	}
	var documents [][]byte
	for _, doc := range strings.Split(rest[open+len(fence):end], "---\n") {
		documents = append(documents, []byte(doc))
	}
	return documents, nil
}

// manifestFileName follows operator-sdk's naming: NAME_GROUP_VERSION_KIND.yaml, and
// GROUP_PLURAL.yaml for CRDs.
func manifestFileName(object *unstructured.Unstructured) string {
	gvk := object.GroupVersionKind()
	if gvk.Kind == "CustomResourceDefinition" {
		group, _, _ := unstructured.NestedString(object.Object, "spec", "group")
		plural, _, _ := unstructured.NestedString(object.Object, "spec", "names", "plural")
		return group + "_" + plural + ".yaml"
	}
	groupVersion := gvk.Version
	if gvk.Group != "" {
		groupVersion = gvk.Group + "_" + gvk.Version
	}
	return strings.ReplaceAll(object.GetName(), ":", "-") + "_" + groupVersion + "_" + strings.ToLower(gvk.Kind) + ".yaml"
}

// marshalObject writes YAML with sorted keys and without the nulls that Go types leave
// (creationTimestamp: null).
func marshalObject(object any) ([]byte, error) {
	data, err := json.Marshal(object)
	if err != nil {
		return nil, err
	}
	var generic any
	decoder := json.NewDecoder(bytes.NewReader(data))
	decoder.UseNumber()
	if err := decoder.Decode(&generic); err != nil {
		return nil, err
	}
	return yaml.Marshal(pruneNulls(generic))
}

func pruneNulls(value any) any {
	switch v := value.(type) {
	case map[string]any:
		for key, child := range v {
			if child == nil {
				delete(v, key)
				continue
			}
			v[key] = pruneNulls(child)
		}
	case []any:
		for i, child := range v {
			v[i] = pruneNulls(child)
		}
	}
	return value
}

func dockerfile() []byte {
	var b strings.Builder
	b.WriteString("# Generated by make bundle (hack/bundlegen); do not edit.\nFROM scratch\n\n")
	for _, key := range slices.Sorted(maps.Keys(Annotations)) {
		fmt.Fprintf(&b, "LABEL %s=%s\n", key, Annotations[key])
	}
	b.WriteString("\nCOPY " + ManifestsDir + " /manifests/\nCOPY " + MetadataDir + " /metadata/\n")
	return []byte(b.String())
}
