package hostprocess

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPointAtKubeconfig(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := WriteKubeconfig(kubeconfig, "https://127.0.0.1:6443", []byte("CA"), "", "pod-token"); err != nil {
		t.Fatal(err)
	}
	written, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, content string
		want          func(got string) bool
	}{
		{name: "a descheduler's kubeconfig is the process's", content: "apiVersion: v1\nkind: Config\nusers:\n- name: d\n  user: {tokenFile: /var/run/secrets/x/token}\n",
			want: func(got string) bool { return got == string(written) }},
		{name: "a scheduler's configuration points at it", content: "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n",
			want: func(got string) bool { return strings.Contains(got, "kubeconfig: "+kubeconfig) }},
		{name: "a policy stays", content: "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n",
			want: func(got string) bool { return got == "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n" }},
		{name: "what is no YAML stays", content: "-----BEGIN CERTIFICATE-----\n",
			want: func(got string) bool { return got == "-----BEGIN CERTIFICATE-----\n" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PointAtKubeconfig([]byte(tt.content), kubeconfig)
			if err != nil {
				t.Fatal(err)
			}
			if !tt.want(string(got)) {
				t.Errorf("got:\n%s", got)
			}
		})
	}
}
