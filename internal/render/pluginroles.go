package render

import (
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// pluginBinding binds cr's scheduler to clusterRole, one of the ClusterRoles shipped for
// the plugins its configuration enables (schedconfig.NeededClusterRoles): the metrics
// reader of the Trimaran plugins, or the role of a plugin that reads its CRDs. The
// binding is named after the role, so that it is the same binding while the role is
// needed, and goes when no enabled plugin needs it.
func pluginBinding(clusterRole string) func(*v1.SecondaryScheduler, *Result) (*yaml.RNode, error) {
	return func(cr *v1.SecondaryScheduler, _ *Result) (*yaml.RNode, error) {
		node, err := newObject("clusterrolebinding-plugin.yaml", ClusterBindingName(cr, pluginBindingRole(clusterRole)), "")
		if err != nil {
			return nil, err
		}
		if err := setJSONValue(node, clusterRole, "roleRef", "name"); err != nil {
			return nil, err
		}
		return node, setSchedulerSubject(node, cr)
	}
}

// pluginBindingRole is the role part of the name of clusterRole's binding: "metrics-reader"
// for secondary-scheduler-metrics-reader, the name bindings of it always had, and
// "plugin-coscheduling" for secondary-scheduler-plugin-coscheduling.
func pluginBindingRole(clusterRole string) string {
	return strings.TrimPrefix(clusterRole, "secondary-scheduler-")
}
