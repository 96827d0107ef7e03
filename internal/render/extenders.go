package render

import (
	"fmt"
	"path"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/extenders"
)

// spec.extenders turns into three things here: the configuration's extenders list
// (appendExtenders), the TLS files mounted into the scheduler container from the Secrets
// and ConfigMaps that spec names (mountExtenderTLS), and a container beside the scheduler
// for each extender that runs in its pod (addExtenderContainers).

// serviceAccountTokenDir is where a container finds its ServiceAccount token, as the
// kubelet mounts it.
const serviceAccountTokenDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// kubeAPIAccessVolume is the volume that stands for the kubelet's automatic token mount
// when the pod has an extender container that must not get the token.
const kubeAPIAccessVolume = "kube-api-access"

// appendExtenders appends spec.extenders to the configuration's extenders (after a Custom
// configuration's own).
func appendExtenders(config *yaml.RNode, cr *v1.SecondaryScheduler) error {
	if len(cr.Spec.Extenders) == 0 {
		return nil
	}
	list, err := config.Pipe(yaml.LookupCreate(yaml.SequenceNode, "extenders"))
	if err != nil {
		return fmt.Errorf("look up extenders: %w", err)
	}
	for _, e := range cr.Spec.Extenders {
		if err := appendValue(list, extenders.Config(cr.Namespace, e)); err != nil {
			return err
		}
	}
	return nil
}

// mountExtenderTLS mounts each extender's CA bundle and client certificate where its
// configuration names them: files from the Secret or ConfigMap itself, never copied into
// an object of the operator's.
func mountExtenderTLS(deployment *yaml.RNode, cr *v1.SecondaryScheduler) error {
	var volumes []corev1.Volume
	var mounts []corev1.VolumeMount
	for _, e := range cr.Spec.Extenders {
		if e.TLS == nil {
			continue
		}
		if ca := e.TLS.CABundle; ca != nil {
			volume := corev1.Volume{Name: "extender-" + e.Name + "-ca"}
			if ca.ConfigMap != nil {
				volume.ConfigMap = &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: ca.ConfigMap.Name},
					Items:                []corev1.KeyToPath{{Key: extenders.CAKey(ca.ConfigMap.Key), Path: extenders.CAFileName}},
				}
			} else {
				volume.Secret = &corev1.SecretVolumeSource{
					SecretName: ca.Secret.Name,
					Items:      []corev1.KeyToPath{{Key: extenders.CAKey(ca.Secret.Key), Path: extenders.CAFileName}},
				}
			}
			volumes = append(volumes, volume)
			mounts = append(mounts, corev1.VolumeMount{Name: volume.Name, MountPath: path.Dir(extenders.CAFile(e.Name)), ReadOnly: true})
		}
		if client := e.TLS.ClientCertificateSecretRef; client != nil {
			volume := corev1.Volume{Name: "extender-" + e.Name + "-client", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
				SecretName: client.Name,
				Items: []corev1.KeyToPath{
					{Key: corev1.TLSCertKey, Path: extenders.CertFileName},
					{Key: corev1.TLSPrivateKeyKey, Path: extenders.KeyFileName},
				},
			}}}
			volumes = append(volumes, volume)
			mounts = append(mounts, corev1.VolumeMount{Name: volume.Name, MountPath: path.Dir(extenders.CertFile(e.Name)), ReadOnly: true})
		}
	}
	if len(volumes) == 0 {
		return nil
	}
	return appendVolumes(deployment, volumes, schedulerContainer, mounts)
}

// addExtenderContainers adds a container for each extender that runs in the scheduler's
// pod. Unless every such extender may have the scheduler's token, the pod's automatic
// token mount is turned off and the token is mounted into the containers that may have
// it only, as the kubelet would have mounted it into all.
func addExtenderContainers(deployment *yaml.RNode, cr *v1.SecondaryScheduler) error {
	var sidecars []v1.Extender
	withToken := []string{schedulerContainer}
	for _, e := range cr.Spec.Extenders {
		if e.Container == nil {
			continue
		}
		sidecars = append(sidecars, e)
		if e.Container.MountServiceAccountToken {
			withToken = append(withToken, ExtenderContainerName(e.Name))
		}
	}
	if len(sidecars) == 0 {
		return nil
	}
	containers, err := lookup(deployment, "spec", "template", "spec", "containers")
	if err != nil {
		return err
	}
	for _, e := range sidecars {
		if err := appendValue(containers, extenderContainer(e)); err != nil {
			return err
		}
	}
	if len(withToken) == len(sidecars)+1 {
		return nil
	}
	if err := setValue(deployment, false, "spec", "template", "spec", "automountServiceAccountToken"); err != nil {
		return err
	}
	volume := corev1.Volume{Name: kubeAPIAccessVolume, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		// What the kubelet projects for the automatic mount.
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
	}}}
	mount := corev1.VolumeMount{Name: kubeAPIAccessVolume, MountPath: serviceAccountTokenDir, ReadOnly: true}
	if err := appendVolumes(deployment, []corev1.Volume{volume}, schedulerContainer, []corev1.VolumeMount{mount}); err != nil {
		return err
	}
	for _, name := range withToken[1:] {
		if err := appendMounts(deployment, name, []corev1.VolumeMount{mount}); err != nil {
			return err
		}
	}
	return nil
}

// schedulerContainer is the scheduler's container in the Deployment asset.
const schedulerContainer = "kube-scheduler"

// ExtenderContainerName is the container of extender name in the scheduler's pod.
func ExtenderContainerName(name string) string { return "extender-" + name }

// extenderContainer is the container of an extender that runs beside the scheduler, as
// locked down as the scheduler's own but for a writable root file system, which an
// extender's image may need.
func extenderContainer(e v1.Extender) corev1.Container {
	spec := e.Container
	container := corev1.Container{
		Name:    ExtenderContainerName(e.Name),
		Image:   spec.Image,
		Command: spec.Command,
		Args:    spec.Args,
		Env:     spec.Env,
		Ports:   []corev1.ContainerPort{{Name: "extender", ContainerPort: spec.Port, Protocol: corev1.ProtocolTCP}},
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("50m"),
			corev1.ResourceMemory: resource.MustParse("64Mi"),
		}},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(spec.Port)}},
			PeriodSeconds: 5, FailureThreshold: 3,
		},
		LivenessProbe:            spec.LivenessProbe,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
	}
	if spec.Resources != nil {
		container.Resources = *spec.Resources
	}
	if spec.ReadinessProbe != nil {
		container.ReadinessProbe = spec.ReadinessProbe
	}
	return container
}

// appendVolumes appends volumes to the pod and mounts to the container named container.
func appendVolumes(deployment *yaml.RNode, volumes []corev1.Volume, container string, mounts []corev1.VolumeMount) error {
	list, err := lookup(deployment, "spec", "template", "spec", "volumes")
	if err != nil {
		return err
	}
	for _, volume := range volumes {
		if err := appendValue(list, volume); err != nil {
			return err
		}
	}
	return appendMounts(deployment, container, mounts)
}

// appendMounts appends mounts to the container named container, creating its list.
func appendMounts(deployment *yaml.RNode, container string, mounts []corev1.VolumeMount) error {
	node, err := lookup(deployment, "spec", "template", "spec", "containers", "[name="+container+"]")
	if err != nil {
		return err
	}
	list, err := node.Pipe(yaml.LookupCreate(yaml.SequenceNode, "volumeMounts"))
	if err != nil {
		return fmt.Errorf("look up the volume mounts of %s: %w", container, err)
	}
	for _, mount := range mounts {
		if err := appendValue(list, mount); err != nil {
			return err
		}
	}
	return nil
}
