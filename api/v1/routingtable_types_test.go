package v1

import (
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/crdschema"
)

const routingTableCRDPath = "../../config/crd/bases/operator.secondary-scheduler.io_routingtables.yaml"

func loadRoutingTableCRD(t *testing.T) *apiextensions.CustomResourceDefinition {
	t.Helper()
	return loadCRDFile(t, routingTableCRDPath)
}

func TestRoutingTableCRDIsValid(t *testing.T) {
	crd := loadRoutingTableCRD(t)
	for _, err := range crdschema.CreationErrors(crd) {
		t.Errorf("the API server would refuse the CRD: %v", err)
	}
	if crd.Spec.Scope != apiextensions.ClusterScoped {
		t.Errorf("RoutingTable is %s: the routing policy's binding names it without a namespace", crd.Spec.Scope)
	}
}

// The bounds the operator checks routes against are the CRD's: a route within them is
// never refused by the API server, and one beyond them is refused before it reaches the
// table.
func TestRoutingTableBoundsAreTheCRDs(t *testing.T) {
	spec := loadRoutingTableCRD(t).Spec.Validation.OpenAPIV3Schema.Properties["spec"]
	route := spec.Properties["routes"].Items.Schema
	selectors := map[string]apiextensions.JSONSchemaProps{
		"namespaceSelector": route.Properties["namespaceSelector"], "podSelector": route.Properties["podSelector"]}
	maxItems := func(schema apiextensions.JSONSchemaProps) int64 {
		if schema.MaxItems == nil {
			return -1
		}
		return *schema.MaxItems
	}
	type bound struct {
		what string
		got  int64
		want int
	}
	checks := make([]bound, 0, 3+3*len(selectors))
	checks = append(checks, bound{"spec.routes", maxItems(spec.Properties["routes"]), MaxRoutes},
		bound{"spec.neverRoutedNamespaces", maxItems(spec.Properties["neverRoutedNamespaces"]), MaxNeverRoutedNamespaces},
		bound{"a route's tolerations", maxItems(route.Properties["tolerations"]), MaxRouteTolerations})
	for name, selector := range selectors {
		labels := int64(-1)
		if selector.Properties["matchLabels"].MaxProperties != nil {
			labels = *selector.Properties["matchLabels"].MaxProperties
		}
		requirements := selector.Properties["matchExpressions"]
		checks = append(checks, bound{name + ".matchLabels", labels, MaxRouteSelectorLabels},
			bound{name + ".matchExpressions", maxItems(requirements), MaxRouteSelectorRequirements},
			bound{name + ".matchExpressions[].values", maxItems(requirements.Items.Schema.Properties["values"]), MaxRouteSelectorValues})
	}
	for _, check := range checks {
		if check.got != int64(check.want) {
			t.Errorf("%s: the CRD allows %d, the operator %d", check.what, check.got, check.want)
		}
	}
}
