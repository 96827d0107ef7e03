package desired

import (
	"fmt"
	"strings"

	schedulerconfigv1 "k8s.io/kube-scheduler/config/v1"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/gather"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/schedconfig"
)

// checkPluginCRDs refuses, before rollout, a configuration that enables a plugin reading
// a kind the API server does not serve (schedconfig.NeededCRDs): the scheduler would fail
// to create the plugin, or wait forever for its informer, and a running scheduler would be
// replaced by one that never becomes ready. The message names each CRD missing and the
// command that installs it from scheduler-plugins' own manifests; the operator installs
// no CRD itself. Failing to find out is transient, not a refusal.
func checkPluginCRDs(config *schedulerconfigv1.KubeSchedulerConfiguration, kinds gather.ServedKinds, where string) error {
	var missing []string
	for _, crd := range schedconfig.NeededCRDs(config) {
		served, err := kinds.Serves(crd.GroupVersionKind)
		if err != nil {
			return err
		}
		if !served {
			missing = append(missing, fmt.Sprintf("%s reads %s (%s), whose CustomResourceDefinition %s this cluster does not serve: install it with `%s`",
				pluginList(schedconfig.PluginsReading(config, crd)), crd.Kind, crd.GroupVersion(), crd.CRDName(), crd.InstallCommand()))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return refusal.New(v1.ReasonPluginCRDMissing,
		"%s enables plugins that read kinds this cluster does not serve, without which the scheduler would not start: %s; "+
			"the running scheduler, if any, is kept, and this is checked again until they are served",
		where, strings.Join(missing, "; "))
}
