// Package hostprocess prepares what a kube-scheduler or a descheduler needs to run as a
// process on the test host instead of in a pod: a kubeconfig carrying a ServiceAccount
// token, and a configuration that points at it (outside a pod there is no in-cluster
// configuration).
package hostprocess

import (
	"fmt"
	"os"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"
)

// WriteKubeconfig writes a kubeconfig for server, trusted through caData or caFile, that
// authenticates with token.
func WriteKubeconfig(path, server string, caData []byte, caFile, token string) error {
	config := clientcmdapi.NewConfig()
	config.Clusters["cluster"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caData, CertificateAuthority: caFile}
	config.AuthInfos["service-account"] = &clientcmdapi.AuthInfo{Token: token}
	config.Contexts["service-account"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: "service-account"}
	config.CurrentContext = "service-account"
	if err := clientcmd.WriteToFile(*config, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}

// PointAtKubeconfig returns a KubeSchedulerConfiguration that reaches the API server
// through kubeconfig, and a kubeconfig (a descheduler's, which names the in-cluster
// address and the token and CA its pod mounts) replaced by kubeconfig's content. Other
// content comes back as it is.
func PointAtKubeconfig(content []byte, kubeconfig string) ([]byte, error) {
	config := map[string]any{}
	if yaml.Unmarshal(content, &config) != nil {
		return content, nil
	}
	switch config["kind"] {
	case "Config":
		replacement, err := os.ReadFile(kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("replace a kubeconfig: %w", err)
		}
		return replacement, nil
	case "KubeSchedulerConfiguration":
	default:
		return content, nil
	}
	connection, _ := config["clientConnection"].(map[string]any)
	if connection == nil {
		connection = map[string]any{}
	}
	connection["kubeconfig"] = kubeconfig
	config["clientConnection"] = connection
	rewritten, err := yaml.Marshal(config)
	if err != nil {
		return nil, fmt.Errorf("rewrite scheduler configuration: %w", err)
	}
	return rewritten, nil
}
