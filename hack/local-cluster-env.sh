# Sourced by hack/local-cluster.sh and hack/real-node.sh: where the local cluster and its
# control plane are, so that a node finds the cluster it joins. Each may be set beforehand.
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KUBE_VERSION="${KUBE_VERSION:-v1.37.2}"
CONTROL_PLANE_DIR="${CONTROL_PLANE_DIR:-${repo_root}/bin/k8s/${KUBE_VERSION}}"
CLUSTER_NAME="${CLUSTER_NAME:-secondary-scheduler}"
OUTPUT_DIR="${OUTPUT_DIR:-${repo_root}/_output/${CLUSTER_NAME}}"
