package validate

import (
	"crypto/sha256"
	"path/filepath"
	"slices"
	"testing"
	"testing/fstest"

	"sigs.k8s.io/yaml"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/olm/bundle"
)

// bundleRoot is the generated bundle, relative to this package.
var bundleRoot = filepath.Join("..", "..", "..", bundle.Dir)

const csvFile = "manifests/" + bundle.CSVFile

func readBundle(t *testing.T) fstest.MapFS {
	t.Helper()
	files, err := bundle.ReadFiles(bundleRoot)
	if err != nil {
		t.Fatalf("read the bundle (make bundle writes it): %v", err)
	}
	return files
}

func load(t *testing.T, files fstest.MapFS) *Bundle {
	t.Helper()
	b, err := Load(files)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBundle runs every rule on the generated bundle: errors fail, warnings are listed.
func TestBundle(t *testing.T) {
	for _, f := range Validate(load(t, readBundle(t)), Rules) {
		if f.Level == Error {
			t.Error(f)
		} else {
			t.Log(f)
		}
	}
}

// mutation changes a copy of the bundle so that one rule must fire.
type mutation func(t *testing.T, files fstest.MapFS)

func editYAML(file string, edit func(object map[string]any)) mutation {
	return func(t *testing.T, files fstest.MapFS) {
		t.Helper()
		var object map[string]any
		if err := yaml.Unmarshal(files[file].Data, &object); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		edit(object)
		data, err := yaml.Marshal(object)
		if err != nil {
			t.Fatal(err)
		}
		files[file] = &fstest.MapFile{Data: data}
	}
}

func editCSV(edit func(csv map[string]any)) mutation { return editYAML(csvFile, edit) }

func addFile(name, content string) mutation {
	return func(_ *testing.T, files fstest.MapFS) { files[name] = &fstest.MapFile{Data: []byte(content)} }
}

// at walks nested maps and lists (an int key indexes a list) and returns the map there.
func at(object map[string]any, keys ...any) map[string]any {
	var current any = object
	for _, key := range keys {
		switch k := key.(type) {
		case string:
			current = current.(map[string]any)[k]
		case int:
			current = current.([]any)[k]
		}
	}
	return current.(map[string]any)
}

func annotations(csv map[string]any) map[string]any { return at(csv, "metadata", "annotations") }

func crdFile(files fstest.MapFS) string {
	for name := range files {
		if filepath.Base(name) == "operator.secondary-scheduler.io_secondaryschedulers.yaml" {
			return name
		}
	}
	return ""
}

var mutations = []struct {
	rule   string
	level  Level
	name   string
	mutate mutation
}{
	{"format/directories", Error, "no annotations.yaml", func(_ *testing.T, files fstest.MapFS) { delete(files, "metadata/annotations.yaml") }},
	{"format/annotations", Error, "wrong media type", editYAML("metadata/annotations.yaml", func(o map[string]any) {
		at(o, "annotations")[annotationPrefix+"mediatype.v1"] = "plain+v0"
	})},
	{"format/annotations", Error, "empty default channel", editYAML("metadata/annotations.yaml", func(o map[string]any) {
		at(o, "annotations")[annotationPrefix+"channel.default.v1"] = ""
	})},
	{"format/object-kinds", Error, "a loose Deployment", addFile("manifests/extra_apps_v1_deployment.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: extra\n")},
	{"format/object-metadata", Error, "a name that is not a DNS subdomain", editYAML("manifests/secondary-scheduler-operator-controller-manager-metrics-service_v1_service.yaml", func(o map[string]any) {
		at(o, "metadata")["name"] = "Metrics_Service"
	})},
	{"contents/crds", Error, "a CRD twice", func(_ *testing.T, files fstest.MapFS) {
		files["manifests/copy_crd.yaml"] = files[crdFile(files)]
	}},
	{"contents/crds", Error, "an owned CRD missing", func(_ *testing.T, files fstest.MapFS) { delete(files, crdFile(files)) }},
	{"contents/service-accounts", Error, "the deployment's ServiceAccount shipped", addFile("manifests/sa_v1_serviceaccount.yaml",
		"apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: "+bundle.ManagerServiceAccount+"\n")},
	{"contents/size", Error, "above 1 MiB compressed", func(_ *testing.T, files fstest.MapFS) {
		// SHA-256 output does not compress.
		var data []byte
		sum := sha256.Sum256(nil)
		for len(data) < maxBundleBytes+4096 {
			sum = sha256.Sum256(sum[:])
			data = append(data, sum[:]...)
		}
		files["manifests/noise.bin"] = &fstest.MapFile{Data: data}
	}},
	{"contents/related-images", Error, "an invalid pull spec", editCSV(func(c map[string]any) {
		at(c, "spec", "relatedImages", 0)["image"] = "Not A/Valid:Image"
	})},
	{"csv/names", Error, "replaces not a DNS subdomain", editCSV(func(c map[string]any) { at(c, "spec")["replaces"] = "Old_Version" })},
	{"csv/name-format", Warning, "name without a version", editCSV(func(c map[string]any) { at(c, "metadata")["name"] = "secondary-scheduler-operator" })},
	{"csv/required-fields", Error, "no displayName", editCSV(func(c map[string]any) { delete(at(c, "spec"), "displayName") })},
	{"csv/required-fields", Error, "a related image without a name", editCSV(func(c map[string]any) { delete(at(c, "spec", "relatedImages", 0), "name") })},
	{"csv/alm-examples", Error, "not JSON", editCSV(func(c map[string]any) { annotations(c)["alm-examples"] = "[{" })},
	{"csv/alm-examples", Error, "an example of an API not owned", editCSV(func(c map[string]any) {
		annotations(c)["alm-examples"] = `[{"apiVersion":"example.com/v1","kind":"Other","metadata":{"name":"x"}}]`
	})},
	{"csv/alm-examples", Warning, "no examples", editCSV(func(c map[string]any) { delete(annotations(c), "alm-examples") })},
	{"csv/install-modes", Error, "none supported", editCSV(func(c map[string]any) {
		for _, mode := range at(c, "spec")["installModes"].([]any) {
			mode.(map[string]any)["supported"] = false
		}
	})},
	{"csv/min-kube-version", Error, "not semver", editCSV(func(c map[string]any) { at(c, "spec")["minKubeVersion"] = "one.thirty" })},
	{"csv/min-kube-version", Warning, "empty", editCSV(func(c map[string]any) { delete(at(c, "spec"), "minKubeVersion") })},
	{"csv/olm-annotations", Error, "olm.SkipRange", editCSV(func(c map[string]any) { annotations(c)["olm.SkipRange"] = "<0.1.0" })},
	{"csv/skip-range", Error, "not a range", editCSV(func(c map[string]any) { annotations(c)["olm.skipRange"] = "from zero to one" })},
	{"crd/apiextensions", Error, "an invalid scope", func(t *testing.T, files fstest.MapFS) {
		editYAML(crdFile(files), func(o map[string]any) { at(o, "spec")["scope"] = "Galaxy" })(t, files)
	}},
	{"operatorhub/metadata", Error, "a maintainer without a valid email", editCSV(func(c map[string]any) {
		at(c, "spec", "maintainers", 0)["email"] = "nobody"
	})},
	{"operatorhub/metadata", Error, "an icon of another media type", editCSV(func(c map[string]any) {
		at(c, "spec", "icon", 0)["mediatype"] = "image/bmp"
	})},
	{"operatorhub/metadata", Warning, "no icon", editCSV(func(c map[string]any) { delete(at(c, "spec"), "icon") })},
	{"operatorhub/capabilities", Error, "unknown level", editCSV(func(c map[string]any) { annotations(c)["capabilities"] = "Magic" })},
	{"operatorhub/categories", Error, "not a standard category", editCSV(func(c map[string]any) { annotations(c)["categories"] = "Developer Tools, Scheduling" })},
	{"operatorhub/deprecated-apis", Error, "a removed RBAC version", addFile("manifests/old_clusterrole.yaml",
		"apiVersion: rbac.authorization.k8s.io/v1beta1\nkind: ClusterRole\nmetadata:\n  name: old\nrules: []\n")},
	{"good-practices/deployments", Error, "no deployment", editCSV(func(c map[string]any) {
		at(c, "spec", "install", "spec")["deployments"] = []any{}
	})},
	{"good-practices/resource-requests", Warning, "no requests", editCSV(func(c map[string]any) {
		container := at(c, "spec", "install", "spec", "deployments", 0, "spec", "template", "spec", "containers", 0)
		delete(container, "resources")
	})},
	{"good-practices/crd-descriptions", Warning, "an owned CRD without description", editCSV(func(c map[string]any) {
		delete(at(c, "spec", "customresourcedefinitions", "owned", 0), "description")
	})},
	{"good-practices/channels", Warning, "channel beta", editYAML("metadata/annotations.yaml", func(o map[string]any) {
		at(o, "annotations")[annotationPrefix+"channels.v1"] = "beta"
	})},
	{"good-practices/crd-permissions", Warning, "may create CRDs", editCSV(func(c map[string]any) {
		p := at(c, "spec", "install", "spec", "clusterPermissions", 0)
		p["rules"] = append(p["rules"].([]any), map[string]any{
			"apiGroups": []any{"apiextensions.k8s.io"}, "resources": []any{"customresourcedefinitions"}, "verbs": []any{"create"},
		})
	})},
	{"objects/pod-disruption-budgets", Error, "maxUnavailable 0", addFile("manifests/pdb.yaml",
		"apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: pdb\nspec:\n  maxUnavailable: 0\n")},
	{"objects/pod-disruption-budgets", Error, "minAvailable 100%", addFile("manifests/pdb.yaml",
		"apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: pdb\nspec:\n  minAvailable: 100%\n")},
	{"objects/priority-classes", Error, "globalDefault", addFile("manifests/pc.yaml",
		"apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: pc\nvalue: 1000\nglobalDefault: true\n")},
	// The real bundle already has this warning: the operator writes the PodDisruptionBudgets
	// of HighlyAvailable schedulers (maxUnavailable 1, which never blocks a drain).
	{"objects/rbac", Warning, "may patch PDBs", addFile("manifests/pdb-writer.yaml",
		"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: pdb-writer\nrules:\n- apiGroups: [policy]\n  resources: [poddisruptionbudgets]\n  verbs: [patch]\n")},
	{"objects/rbac", Error, "may modify a default SCC", addFile("manifests/scc-writer.yaml",
		"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: scc-writer\nrules:\n- apiGroups: [security.openshift.io]\n  resources: [securitycontextconstraints]\n  resourceNames: [restricted-v2]\n  verbs: [update]\n")},
	{"project/alm-examples-schema", Error, "an unknown profile type", editCSV(func(c map[string]any) {
		annotations(c)["alm-examples"] = `[{"apiVersion":"operator.secondary-scheduler.io/v1","kind":"SecondaryScheduler","metadata":{"name":"x"},"spec":{"profile":{"type":"Nonsense"}}}]`
	})},
	{"project/alm-examples-schema", Error, "a CEL rule broken", editCSV(func(c map[string]any) {
		annotations(c)["alm-examples"] = `[{"apiVersion":"operator.secondary-scheduler.io/v1","kind":"SecondaryScheduler","metadata":{"name":"x"},` +
			`"spec":{"profile":{"type":"TargetLoadPacking","metrics":{"address":"https://user:secret@prometheus:9091"}}}}]`
	})},
}

// TestRulesRejectMutations: for each rule, a copy of the real bundle changed so that the
// rule must fire; the real bundle must not fire it at that level.
func TestRulesRejectMutations(t *testing.T) {
	original := Validate(load(t, readBundle(t)), Rules)
	for _, m := range mutations {
		t.Run(m.rule+"/"+m.name, func(t *testing.T) {
			// The mutation must add a finding of the rule: the real bundle may already have
			// one (an accepted warning), never more than the mutated copy.
			count := func(findings []Finding) int {
				n := 0
				for _, f := range findings {
					if f.Rule == m.rule && f.Level == m.level {
						n++
					}
				}
				return n
			}
			files := readBundle(t)
			m.mutate(t, files)
			findings := Validate(load(t, files), Rules)
			if count(findings) <= count(original) {
				t.Errorf("rule %s did not fire at level %s more than on the real bundle (%d times); findings: %v", m.rule, m.level, count(original), findings)
			}
		})
	}
}

// TestEveryRuleHasANegativeTest keeps a new rule from going untested.
func TestEveryRuleHasANegativeTest(t *testing.T) {
	for _, rule := range Rules {
		if !slices.ContainsFunc(mutations, func(m struct {
			rule   string
			level  Level
			name   string
			mutate mutation
		}) bool {
			return m.rule == rule.Name
		}) {
			t.Errorf("rule %s has no mutation that makes it fire", rule.Name)
		}
	}
}
