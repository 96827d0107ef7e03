package main

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestRewritePaths(t *testing.T) {
	mounts := hostMounts{
		"/etc/kubernetes/extenders/gpu/ca":     "/data/pods/volumes/extender-gpu-ca",
		"/etc/kubernetes/extenders/gpu/client": "/data/pods/volumes/extender-gpu-client",
		"/etc/kubernetes":                      "/data/pods/volumes/config",
		"/data":                                "/data/pods/volumes/data",
	}
	got := string(mounts.rewritePaths([]byte(`caFile: /etc/kubernetes/extenders/gpu/ca/ca.crt
certFile: /etc/kubernetes/extenders/gpu/client/tls.crt
other: /etc/kubernetes/scheduler/config.yaml
scratch: /data/x
untouched: /etc/kubernetesx/y
`)))
	want := `caFile: /data/pods/volumes/extender-gpu-ca/ca.crt
certFile: /data/pods/volumes/extender-gpu-client/tls.crt
other: /data/pods/volumes/config/scheduler/config.yaml
scratch: /data/pods/volumes/data/x
untouched: /etc/kubernetesx/y
`
	if got != want {
		t.Errorf("rewritePaths:\n%s\nwant:\n%s", got, want)
	}
}

// TestProjectedVolumeFiles: a projected volume's ConfigMap and Secret sources are written
// as their items, as the kubelet writes them; its token source is podrunner's kubeconfig.
func TestProjectedVolumeFiles(t *testing.T) {
	clientset := fake.NewClientset(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "ca"}, Data: map[string]string{"ca.crt": "CA", "other": "x"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "token"}, Data: map[string][]byte{"token": []byte("T")}},
	)
	p := &podProcess{runner: &runner{clientset: clientset}, pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "descheduler-0"}}}
	volume := corev1.Volume{Name: "prometheus-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "api-token"}},
		{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "token"}}},
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "ca"},
			Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
	}}}}
	files, err := p.volumeFiles(context.Background(), volume)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{"token": []byte("T"), "ca.crt": []byte("CA")}
	if diff := cmp.Diff(want, files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	volume.Projected.Sources[1].Secret.Name = "missing"
	// NotFound, which supervise waits out, as the kubelet leaves the pod waiting.
	if _, err := p.volumeFiles(context.Background(), volume); !apierrors.IsNotFound(err) {
		t.Errorf("a projected Secret that is missing: %v; want NotFound", err)
	}
}
