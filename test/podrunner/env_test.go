package main

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

func TestContainerEnv(t *testing.T) {
	clientset := fake.NewClientset(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "operators", Name: "settings"}, Data: map[string]string{"level": "debug"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "operators", Name: "credentials"}, Data: map[string][]byte{"token": []byte("s3cret")}},
	)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "operators", Name: "manager-abc", UID: "0d6f3c1e",
			Labels:      map[string]string{"control-plane": "controller-manager"},
			Annotations: map[string]string{"olm.targetNamespaces": "team-a,team-b"},
		},
		Spec: corev1.PodSpec{NodeName: "scheduler-host", ServiceAccountName: "controller-manager"},
	}
	fieldRef := func(name, fieldPath string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: fieldPath}}}
	}
	configMapKey := func(name, configMap, key string, optional bool) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: configMap}, Key: key, Optional: ptr.To(optional)}}}
	}
	secretKey := func(name, secret, key string, optional bool) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key, Optional: ptr.To(optional)}}}
	}
	tests := []struct {
		name      string
		container corev1.Container
		want      []string
		wantErr   bool
	}{
		{
			name:      "value, empty value kept",
			container: corev1.Container{Env: []corev1.EnvVar{{Name: "WATCH_NAMESPACE", Value: ""}, {Name: "MODE", Value: "ha"}}},
			want:      []string{"WATCH_NAMESPACE=", "MODE=ha"},
		},
		{
			name: "pod fields",
			container: corev1.Container{Env: []corev1.EnvVar{
				fieldRef("POD_NAME", "metadata.name"), fieldRef("POD_NAMESPACE", "metadata.namespace"), fieldRef("POD_UID", "metadata.uid"),
				fieldRef("NODE_NAME", "spec.nodeName"), fieldRef("SERVICE_ACCOUNT", "spec.serviceAccountName"),
			}},
			want: []string{"POD_NAME=manager-abc", "POD_NAMESPACE=operators", "POD_UID=0d6f3c1e",
				"NODE_NAME=scheduler-host", "SERVICE_ACCOUNT=controller-manager"},
		},
		{
			name: "annotation and label, as OLM's bundle reads its target namespaces",
			container: corev1.Container{Env: []corev1.EnvVar{
				fieldRef("WATCH_NAMESPACE", "metadata.annotations['olm.targetNamespaces']"),
				fieldRef("ROLE", "metadata.labels['control-plane']"),
			}},
			want: []string{"WATCH_NAMESPACE=team-a,team-b", "ROLE=controller-manager"},
		},
		{
			name:      "missing annotation is empty",
			container: corev1.Container{Env: []corev1.EnvVar{fieldRef("WATCH_NAMESPACE", "metadata.annotations['olm.operatorNamespace']")}},
			want:      []string{"WATCH_NAMESPACE="},
		},
		{
			name:      "ConfigMap and Secret keys",
			container: corev1.Container{Env: []corev1.EnvVar{configMapKey("LEVEL", "settings", "level", false), secretKey("TOKEN", "credentials", "token", false)}},
			want:      []string{"LEVEL=debug", "TOKEN=s3cret"},
		},
		{
			name: "optional missing object or key is unset",
			container: corev1.Container{Env: []corev1.EnvVar{
				configMapKey("A", "absent", "level", true), configMapKey("B", "settings", "absent", true),
				secretKey("C", "absent", "token", true), secretKey("D", "credentials", "absent", true),
			}},
			want: []string{},
		},
		{
			name:      "required missing key",
			container: corev1.Container{Env: []corev1.EnvVar{configMapKey("LEVEL", "settings", "absent", false)}},
			wantErr:   true,
		},
		{
			name:      "required missing Secret",
			container: corev1.Container{Env: []corev1.EnvVar{secretKey("TOKEN", "absent", "token", false)}},
			wantErr:   true,
		},
		{
			name:      "unsupported fieldRef",
			container: corev1.Container{Env: []corev1.EnvVar{fieldRef("POD_IP", "status.podIP")}},
			wantErr:   true,
		},
		{
			name: "unsupported valueFrom",
			container: corev1.Container{Env: []corev1.EnvVar{{Name: "MEMORY", ValueFrom: &corev1.EnvVarSource{
				ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory"}}}}},
			wantErr: true,
		},
		{
			name: "envFrom",
			container: corev1.Container{EnvFrom: []corev1.EnvFromSource{{
				ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}},
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := containerEnv(context.Background(), clientset, pod, tt.container)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want error %t", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); !tt.wantErr && diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHostEnvKeepsOnlyPathAndHome(t *testing.T) {
	t.Setenv("KUBECONFIG", "/home/admin/.kube/config")
	t.Setenv("PATH", "/usr/bin")
	t.Setenv("HOME", "/home/admin")
	t.Setenv("PODRUNNER_ONLY", "not for pods")
	want := []string{"KUBECONFIG=/var/lib/podrunner/pods/manager/kubeconfig", "PATH=/usr/bin", "HOME=/home/admin"}
	if diff := cmp.Diff(want, hostEnv("/var/lib/podrunner/pods/manager/kubeconfig")); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
}

func TestInClusterEnv(t *testing.T) {
	for _, tt := range []struct {
		apiServer string
		want      []string
	}{
		{apiServer: "https://127.0.0.1:32764", want: []string{"KUBERNETES_SERVICE_HOST=127.0.0.1", "KUBERNETES_SERVICE_PORT=32764"}},
		{apiServer: "https://api.example", want: []string{"KUBERNETES_SERVICE_HOST=api.example", "KUBERNETES_SERVICE_PORT=443"}},
	} {
		got, err := inClusterEnv(tt.apiServer)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("inClusterEnv(%q) = %v, %v; want %v", tt.apiServer, got, err, tt.want)
		}
	}
	if _, err := inClusterEnv("not a URL"); err == nil {
		t.Error("an address without a host gave an environment; want an error")
	}
}
