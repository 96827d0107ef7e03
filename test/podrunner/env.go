package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// hostEnv is what a process gets besides its container's env: KUBECONFIG at the pod's
// kubeconfig, where a pod would find its in-cluster configuration, and podrunner's PATH
// and HOME so that binaries run. Nothing else of podrunner's environment, its own
// administrator's KUBECONFIG above all, reaches the process.
func hostEnv(kubeconfig string) []string {
	env := []string{"KUBECONFIG=" + kubeconfig}
	for _, name := range []string{"PATH", "HOME"} {
		if value, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+value)
		}
	}
	return env
}

// inClusterEnv is what the kubelet gives every pod and client-go's in-cluster configuration
// reads, with apiServer's host and port: for a process that sees a ServiceAccount
// directory at its path (whose token and CA the rest of that configuration reads), as a
// descheduler reads its Prometheus token through it. Others keep to their kubeconfig.
func inClusterEnv(apiServer string) ([]string, error) {
	server, err := url.Parse(apiServer)
	if err != nil {
		return nil, fmt.Errorf("the API server's address: %w", err)
	}
	if server.Hostname() == "" {
		return nil, fmt.Errorf("the API server's address %q names no host", apiServer)
	}
	port := server.Port()
	if port == "" {
		port = "443"
	}
	return []string{"KUBERNETES_SERVICE_HOST=" + server.Hostname(), "KUBERNETES_SERVICE_PORT=" + port}, nil
}

// containerEnv resolves the container's env as a kubelet would. A source podrunner cannot
// resolve is an error rather than a missing variable, so that a pod never runs with part
// of its configuration silently dropped.
func containerEnv(ctx context.Context, clientset kubernetes.Interface, pod *corev1.Pod, container corev1.Container) ([]string, error) {
	if len(container.EnvFrom) > 0 {
		return nil, errors.New("envFrom is not supported by podrunner")
	}
	env := make([]string, 0, len(container.Env))
	for _, variable := range container.Env {
		value, set, err := envValue(ctx, clientset, pod, variable)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", variable.Name, err)
		}
		if set {
			env = append(env, variable.Name+"="+value)
		}
	}
	return env, nil
}

// envValue is the value of one variable; set is false when an optional source is missing.
func envValue(ctx context.Context, clientset kubernetes.Interface, pod *corev1.Pod, variable corev1.EnvVar) (value string, set bool, err error) {
	source := variable.ValueFrom
	switch {
	case source == nil:
		return variable.Value, true, nil
	case source.FieldRef != nil:
		value, err := podField(pod, source.FieldRef.FieldPath)
		return value, err == nil, err
	case source.ConfigMapKeyRef != nil:
		ref := source.ConfigMapKeyRef
		configMap, err := clientset.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return unreadableSource(ref.Optional, err)
		}
		return selectKey(configMap.Data, ref.Key, ref.Optional, "ConfigMap "+ref.Name)
	case source.SecretKeyRef != nil:
		ref := source.SecretKeyRef
		secret, err := clientset.CoreV1().Secrets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return unreadableSource(ref.Optional, err)
		}
		return selectKey(secret.Data, ref.Key, ref.Optional, "Secret "+ref.Name)
	default:
		return "", false, errors.New("podrunner supports valueFrom fieldRef, configMapKeyRef and secretKeyRef only")
	}
}

// unreadableSource leaves the variable unset when its optional ConfigMap or Secret does not exist.
func unreadableSource(optional *bool, err error) (string, bool, error) {
	if apierrors.IsNotFound(err) && ptr.Deref(optional, false) {
		return "", false, nil
	}
	return "", false, err
}

// selectKey is key's value in a ConfigMap's or Secret's data; an optional key may be missing.
func selectKey[V string | []byte](data map[string]V, key string, optional *bool, source string) (string, bool, error) {
	value, ok := data[key]
	if !ok && !ptr.Deref(optional, false) {
		return "", false, fmt.Errorf("%s has no key %s", source, key)
	}
	return string(value), ok, nil
}

// podField is the downward API's value of fieldPath; a missing label or annotation is "".
func podField(pod *corev1.Pod, fieldPath string) (string, error) {
	switch fieldPath {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	}
	if key, ok := subscript(fieldPath, "metadata.annotations"); ok {
		return pod.Annotations[key], nil
	}
	if key, ok := subscript(fieldPath, "metadata.labels"); ok {
		return pod.Labels[key], nil
	}
	return "", fmt.Errorf("fieldRef %s is not supported by podrunner", fieldPath)
}

// subscript is KEY in a field path of the form field['KEY'].
func subscript(fieldPath, field string) (string, bool) {
	key, ok := strings.CutPrefix(fieldPath, field+"['")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(key, "']")
}
