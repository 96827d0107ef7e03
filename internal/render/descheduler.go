package render

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// DefaultDeschedulerImage is the descheduler a SecondaryScheduler with spec.descheduling
// runs: a release of sigs.k8s.io/descheduler whose LowNodeUtilization reads node use from
// Prometheus (v0.33 on) and which the tests build from the module proxy
// (hack/build-control-plane.sh descheduler, at the same version). Only the operator chooses
// it: no field of a SecondaryScheduler names the descheduler's image.
const DefaultDeschedulerImage = "registry.k8s.io/descheduler/descheduler:v0.36.0"

// Keys of the descheduler's ConfigMap.
const (
	deschedulerPolicyKey     = "policy.yaml"
	deschedulerKubeconfigKey = "kubeconfig"
)

// DeschedulerPolicyHashAnnotation is the annotation of the descheduler's pod template that
// restarts it when its policy changes: it reads the policy once, at start.
const DeschedulerPolicyHashAnnotation = "operator.secondary-scheduler.io/descheduler-policy-hash"

// DeschedulingModeAnnotation is the annotation of the descheduler's pod template that says
// its mode: what a pod's metrics count (evictions, or evictions it would have made) is
// read only from the pods of the current mode.
const DeschedulingModeAnnotation = "operator.secondary-scheduler.io/descheduling-mode"

// deschedulerContainer is the descheduler's container in its Deployment.
const deschedulerContainer = "descheduler"

// DeschedulerPodLabels are the labels of the descheduler's pods: apart from the scheduler's
// (PodSelector), so that the scheduler's Service and PodDisruptionBudget never select them.
func DeschedulerPodLabels(cr *v1.SecondaryScheduler) map[string]string {
	return map[string]string{LabelName: NameValue + "-descheduler", LabelInstance: cr.Name}
}

// deschedulerTemplateLabels are the labels of the descheduler's pods: its selector's, and
// the owner labels every object of cr's scheduler carries, by which the operator caches
// them and maps them to cr.
func deschedulerTemplateLabels(cr *v1.SecondaryScheduler) map[string]string {
	labels := OwnerLabels(cr)
	maps.Copy(labels, DeschedulerPodLabels(cr))
	return labels
}

// DeschedulerPause says why the descheduler of spec.descheduling is paused.
type DeschedulerPause string

const (
	// DeschedulerRuns says it is not paused.
	DeschedulerRuns DeschedulerPause = ""
	// PausedScoringByRequests says the scheduler scores nodes by their requests while its
	// metrics are unusable (the failsafe), so a pod evicted from a hot node could be placed
	// back on it; and the descheduler, which reads the same metrics, would evict nothing.
	PausedScoringByRequests DeschedulerPause = "ScoringByRequests"
	// PausedSchedulerRollingOut says the scheduler last seen serving is not of the
	// configuration rendered now (it rolls out, or is not ready yet), so the pods the
	// descheduler evicts could be placed by another rule than its own.
	PausedSchedulerRollingOut DeschedulerPause = "SchedulerRollingOut"
)

// deschedulerPause is why the descheduler must not evict now: a scheduler other than the
// load-aware one rendered with configHash would place what it evicts, and a pod could come
// back to the node it left, which is the eviction loop the band exists to prevent.
func deschedulerPause(facts Facts, configHash string) DeschedulerPause {
	switch {
	case facts.ScoreByRequests:
		return PausedScoringByRequests
	case facts.ServedConfigHash != configHash:
		return PausedSchedulerRollingOut
	}
	return DeschedulerRuns
}

// deschedulerBuilders are the builders of the descheduler's objects, in the order they are
// applied: its identity and permissions first, its Deployment last. None without
// spec.descheduling.
func deschedulerBuilders(cr *v1.SecondaryScheduler, facts Facts) []func(*v1.SecondaryScheduler, *Result) (*yaml.RNode, error) {
	if cr.Spec.Descheduling == nil {
		return nil
	}
	builders := []func(*v1.SecondaryScheduler, *Result) (*yaml.RNode, error){
		deschedulerServiceAccount,
		deschedulerClusterRoleBinding,
		deschedulerLeaseElection.lease,
		deschedulerLeaseElection.role,
		deschedulerLeaseElection.binding,
	}
	builders = append(builders, deschedulerTokenSecret(deschedulerToken(facts)))
	return append(builders, deschedulerConfigMap, deschedulerDeployment)
}

// deschedulerNoToken is what the descheduler's token Secret holds when the scheduler
// presents no token to Prometheus. sigs.k8s.io/descheduler v0.36.0 builds its Prometheus
// client, without a token Secret in its policy, from the token file at the ServiceAccount
// path, and has none when that file is missing (its cycles then fail). The operator never
// mounts a token of the cluster there (it would go to a Prometheus that asked for none):
// this fixed, public value, which a Prometheus that authenticates no one ignores.
const deschedulerNoToken = "none"

// deschedulerToken is the token the descheduler presents to Prometheus: the scheduler's,
// or deschedulerNoToken.
func deschedulerToken(facts Facts) string {
	if token := metricsToken(facts); token != "" {
		return token
	}
	return deschedulerNoToken
}

func deschedulerServiceAccount(cr *v1.SecondaryScheduler, _ *Result) (*yaml.RNode, error) {
	return newObject("serviceaccount.yaml", DeschedulerName(cr), cr.Namespace)
}

// setDeschedulerSubject makes the descheduler's ServiceAccount the subject of a binding.
func setDeschedulerSubject(node *yaml.RNode, cr *v1.SecondaryScheduler) error {
	return setServiceAccountSubject(node, cr.Namespace, DeschedulerName(cr))
}

func deschedulerClusterRoleBinding(cr *v1.SecondaryScheduler, _ *Result) (*yaml.RNode, error) {
	node, err := newObject("clusterrolebinding-plugin.yaml", ClusterBindingName(cr, "descheduler"), "")
	if err != nil {
		return nil, err
	}
	if err := setJSONValue(node, DeschedulerClusterRole, "roleRef", "name"); err != nil {
		return nil, err
	}
	return node, setDeschedulerSubject(node, cr)
}

// deschedulerLeaseElection is the descheduler's leader election, with the Lease
// --leader-elect-resource-name names.
var deschedulerLeaseElection = newLeaseElection(DeschedulerLeaseName, setDeschedulerSubject)

// deschedulerTokenSecret holds the token the scheduler presents to Prometheus, for the
// descheduler, under the key it reads: a Secret of its own, since the descheduler reads
// neither the key of the user's tokenSecretRef nor that of the operator's token Secret.
func deschedulerTokenSecret(token string) func(*v1.SecondaryScheduler, *Result) (*yaml.RNode, error) {
	return func(cr *v1.SecondaryScheduler, _ *Result) (*yaml.RNode, error) {
		node, err := newObject("descheduler/secret-token.yaml", DeschedulerTokenSecretName(cr), cr.Namespace)
		if err != nil {
			return nil, err
		}
		return node, setJSONValue(node, map[string][]byte{deschedulerTokenKey: []byte(token)}, "data")
	}
}

// deschedulerConfigMap holds the descheduler's policy and the kubeconfig it reaches the API
// server with.
func deschedulerConfigMap(cr *v1.SecondaryScheduler, result *Result) (*yaml.RNode, error) {
	node, err := newObject("descheduler/configmap.yaml", DeschedulerName(cr), cr.Namespace)
	if err != nil {
		return nil, err
	}
	kubeconfig, err := loadAsset("descheduler/kubeconfig.yaml")
	if err != nil {
		return nil, err
	}
	text, err := kubeconfig.String()
	if err != nil {
		return nil, fmt.Errorf("render the descheduler's kubeconfig: %w", err)
	}
	return node, setJSONValue(node, map[string]string{deschedulerPolicyKey: string(result.deschedulerPolicy), deschedulerKubeconfigKey: text}, "data")
}

// deschedulerDeployment runs the descheduler (bindata/assets/descheduler/deployment.yaml).
func deschedulerDeployment(cr *v1.SecondaryScheduler, result *Result) (*yaml.RNode, error) {
	node, err := newObject("descheduler/deployment.yaml", DeschedulerName(cr), cr.Namespace)
	if err != nil {
		return nil, err
	}
	labels := DeschedulerPodLabels(cr)
	digest := sha256.Sum256(result.deschedulerPolicy)
	template := []struct {
		value any
		path  []string
	}{
		{labels, []string{"spec", "selector", "matchLabels"}},
		{deschedulerTemplateLabels(cr), []string{"spec", "template", "metadata", "labels"}},
		{map[string]string{DeschedulerPolicyHashAnnotation: hex.EncodeToString(digest[:8]), DeschedulingModeAnnotation: string(cr.Spec.Descheduling.EffectiveMode())},
			[]string{"spec", "template", "metadata", "annotations"}},
		{DeschedulerName(cr), []string{"spec", "template", "spec", "serviceAccountName"}},
		{DeschedulerName(cr), []string{"spec", "template", "spec", "volumes", "[name=policy]", "configMap", "name"}},
	}
	for _, field := range template {
		if err := setJSONValue(node, field.value, field.path...); err != nil {
			return nil, err
		}
	}
	term, err := lookup(node, "spec", "template", "spec", "affinity", "podAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution", "[weight=100]")
	if err != nil {
		return nil, err
	}
	if err := setStrings(term, labels, "podAffinityTerm", "labelSelector", "matchLabels"); err != nil {
		return nil, err
	}
	if result.priorityClassName != "" {
		if err := setValue(node, result.priorityClassName, "spec", "template", "spec", "priorityClassName"); err != nil {
			return nil, err
		}
	}
	// The ServiceAccount path holds what the descheduler's Prometheus client reads: the
	// token it presents, and the CA it trusts (the scheduler's caBundle, else the API
	// server's, which verifies no Prometheus).
	caSource := &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
		Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}
	if ca := result.trustedCA; ca != nil {
		caSource = &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: ca.ConfigMap},
			Items: []corev1.KeyToPath{{Key: ca.Key, Path: "ca.crt"}}}
	}
	prometheusAccess := []corev1.VolumeProjection{{ConfigMap: caSource}, {Secret: &corev1.SecretProjection{
		LocalObjectReference: corev1.LocalObjectReference{Name: DeschedulerTokenSecretName(cr)},
		Items:                []corev1.KeyToPath{{Key: deschedulerTokenKey, Path: "token"}}}}}
	if err := setJSONValue(node, prometheusAccess, "spec", "template", "spec", "volumes", "[name=prometheus-access]", "projected", "sources"); err != nil {
		return nil, err
	}
	if ca := result.trustedCA; ca != nil {
		if err := setNode(node, yaml.NewStringRNode(ca.Hash), "spec", "template", "metadata", "annotations", TrustedCAHashAnnotation); err != nil {
			return nil, err
		}
	}
	container, err := lookup(node, "spec", "template", "spec", "containers", "[name="+deschedulerContainer+"]")
	if err != nil {
		return nil, err
	}
	if err := setValue(container, DefaultDeschedulerImage, "image"); err != nil {
		return nil, err
	}
	command := []string{"/bin/descheduler",
		"--policy-config-file=/etc/descheduler/policy/" + deschedulerPolicyKey,
		"--kubeconfig=/etc/descheduler/policy/" + deschedulerKubeconfigKey,
		"--leader-elect=true",
		"--leader-elect-resource-name=" + DeschedulerLeaseName(cr),
		"--leader-elect-resource-namespace=" + cr.Namespace,
		"--descheduling-interval=" + cr.Spec.Descheduling.EffectiveInterval().String(),
		"--v=3",
	}
	if result.DeschedulerPause != DeschedulerRuns {
		// Paused: no pod, so no cycle; the objects stay, ready to resume.
		if err := setValue(node, 0, "spec", "replicas"); err != nil {
			return nil, err
		}
	} else if cr.Spec.Descheduling.EffectiveMode() == v1.DeschedulingDryRun {
		command = append(command, "--dry-run=true")
		// In dry run the descheduler elects no leader (descheduler.go of v0.36.0: it warns
		// and runs alone), so a second replica would report each cycle twice.
		if err := setValue(node, 1, "spec", "replicas"); err != nil {
			return nil, err
		}
	}
	if err := setJSONValue(container, command, "command"); err != nil {
		return nil, err
	}
	// Status says the descheduler acts as its current policy says only once its pods run
	// this very template (report.Descheduling): the hash names all of it.
	return node, setPodTemplateHash(node)
}
