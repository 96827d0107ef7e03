package render

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// Client rate limits of the scheduler's connection to the API server, used when the
// configuration sets none. The upstream defaults (50/100) bound 2,000 pods on 500 nodes in
// 39 s, about 51 pods/s, the binding calls being throttled; 500/1000 did it in 10 s.
const (
	clientQPS   = 500
	clientBurst = 1000
)

// SchedulerConfig renders the KubeSchedulerConfiguration of cr's scheduler. For profile
// Custom it starts from facts.CustomConfig, the user's config.yaml already checked by
// internal/schedconfig, and keeps it as written (comments included) but for the fields
// the operator owns: leader election always, client rate limits when unset, and the
// node pool ANDed into every profile's NodeAffinity args. A typed profile gets the plugins
// of spec.gang and spec.quota too (addPlugins).
func SchedulerConfig(cr *v1.SecondaryScheduler, facts Facts) (string, error) {
	kind := cr.EffectiveProfile()
	profile, known := profiles[kind]
	if !known {
		return "", fmt.Errorf("profile type %q is not supported by this operator version", kind)
	}
	var config *yaml.RNode
	var err error
	switch {
	case profile.asset == "":
		if config, err = yaml.Parse(string(facts.CustomConfig)); err != nil {
			return "", fmt.Errorf("parse custom scheduler config: %w", err)
		}
	case profile.loadAware != nil && facts.ScoreByRequests:
		if config, _, err = profileAsset(cr, profile.loadAware.requestBased); err != nil {
			return "", err
		}
	case profile.loadAware != nil:
		if config, err = loadAwareConfig(cr, profile, facts.PrometheusAddress, facts.MetricsToken); err != nil {
			return "", err
		}
	default:
		var profileNode *yaml.RNode
		if config, profileNode, err = profileAsset(cr, profile.asset); err != nil {
			return "", err
		}
		if profile.writeArgs != nil {
			if err := profile.writeArgs(cr.Spec.Profile, profileNode); err != nil {
				return "", err
			}
		}
	}
	if profile.asset != "" {
		if err := addPlugins(config, cr); err != nil {
			return "", err
		}
	}
	if err := restrictToNodePool(config, cr); err != nil {
		return "", err
	}
	if err := appendExtenders(config, cr); err != nil {
		return "", err
	}
	if err := setOperatorOwnedFields(config, cr); err != nil {
		return "", err
	}
	return config.String()
}

// setOperatorOwnedFields makes the scheduler elect its leader with the Lease the operator
// made for it, in its own namespace: the default Lease, kube-system/kube-scheduler,
// belongs to the cluster's default scheduler, and sharing it would stop one of the two.
func setOperatorOwnedFields(config *yaml.RNode, cr *v1.SecondaryScheduler) error {
	leaderElection := map[string]any{
		"leaderElect":       true,
		"resourceLock":      "leases",
		"resourceName":      LeaseName(cr),
		"resourceNamespace": cr.Namespace,
	}
	for _, field := range []string{"leaderElect", "resourceLock", "resourceName", "resourceNamespace"} {
		if err := setValue(config, leaderElection[field], "leaderElection", field); err != nil {
			return err
		}
	}
	// In a fixed order: the text is hashed, and only a real change may roll the pods.
	for _, limit := range []struct {
		field string
		value int
	}{{"qps", clientQPS}, {"burst", clientBurst}} {
		existing, err := config.Pipe(yaml.Lookup("clientConnection", limit.field))
		if err != nil {
			return fmt.Errorf("read clientConnection.%s: %w", limit.field, err)
		}
		if existing != nil {
			continue
		}
		if err := setValue(config, limit.value, "clientConnection", limit.field); err != nil {
			return err
		}
	}
	return nil
}

// profileAsset loads a scheduler configuration asset of one profile and names the
// profile after cr's scheduler.
func profileAsset(cr *v1.SecondaryScheduler, asset string) (config, profile *yaml.RNode, err error) {
	if config, err = loadAsset("scheduler-config/" + asset); err != nil {
		return nil, nil, err
	}
	if profile, err = lookup(config, "profiles", "0"); err != nil {
		return nil, nil, err
	}
	return config, profile, setNode(profile, yaml.NewStringRNode(cr.EffectiveSchedulerName()), "schedulerName")
}

// ConfigHash identifies a rendered configuration.
func ConfigHash(config string) string {
	sum := sha256.Sum256([]byte(config))
	return hex.EncodeToString(sum[:8])
}
