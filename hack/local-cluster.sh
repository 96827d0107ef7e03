#!/usr/bin/env bash
# A whole Kubernetes cluster on this machine, for the e2e tests and `make demo`:
# kwokctl's binary runtime runs etcd, kube-apiserver, kube-controller-manager, the default
# kube-scheduler and kwok, all built by hack/build-control-plane.sh, plus fake nodes that
# kwok keeps Ready. The scheduler pods run as containers on a real node (hack/real-node.sh;
# make demo, the docs test, the e2e specs of a real node) or as processes through
# test/podrunner (the other e2e specs, the benchmarks).
#
# Usage: hack/local-cluster.sh up|down|kubeconfig|audit-log|logs
#   (audit-log: where the API server's audit log is; logs: the directory of the cluster's
#   component logs, which down deletes)
#   CLUSTER_NAME (default secondary-scheduler), OUTPUT_DIR (default _output/<name>),
#   FAKE_NODES (default 4; 0 for none), FAKE_NODE_CPU (default 4), FAKE_NODE_MEMORY (default 16Gi),
#   APPLY_CRD (default true; false leaves installing the CRDs to the test, as an installer would)
#   KUBE_APISERVER_ARGS (space-separated key=value flags added to kube-apiserver's, for a
#   cluster that lacks an API, as an older one does)
#   KUBE_CONTROLLER_MANAGER_ARGS (the same for kube-controller-manager's)
#   METRICS_SERVER (default false; true runs metrics-server, for kubectl top: it reads the
#   scheduler pods' use from podrunner, which measures their processes)
#   REAL_NODE (default false; true names in the API server's certificate the addresses a
#   pod of a real node reaches it at, for hack/real-node.sh)
#   WORKLOAD_API (default false; true serves the Workload API, scheduling.k8s.io/v1beta1,
#   as a 1.37 cluster that opted in does: the feature gate GenericWorkload on for every
#   component, the API group version on in kube-apiserver)
set -euo pipefail

# shellcheck source=hack/local-cluster-env.sh
source "$(dirname "${BASH_SOURCE[0]}")/local-cluster-env.sh"
FAKE_NODES="${FAKE_NODES:-4}"
FAKE_NODE_CPU="${FAKE_NODE_CPU:-4}"
FAKE_NODE_MEMORY="${FAKE_NODE_MEMORY:-16Gi}"
APPLY_CRD="${APPLY_CRD:-true}"
KUBE_APISERVER_ARGS="${KUBE_APISERVER_ARGS:-}"
KUBE_CONTROLLER_MANAGER_ARGS="${KUBE_CONTROLLER_MANAGER_ARGS:-}"
METRICS_SERVER="${METRICS_SERVER:-false}"
REAL_NODE="${REAL_NODE:-false}"
WORKLOAD_API="${WORKLOAD_API:-false}"

export KWOK_WORKDIR="${OUTPUT_DIR}/kwok"
kubeconfig="${OUTPUT_DIR}/kubeconfig"
logs_dir="${KWOK_WORKDIR}/clusters/${CLUSTER_NAME}/logs"
kwokctl="${CONTROL_PLANE_DIR}/kwokctl"
kubectl() { "${CONTROL_PLANE_DIR}/kubectl" --kubeconfig "${kubeconfig}" "$@"; }
log() { printf '[local-cluster] %s\n' "$*" >&2; }

fake_nodes() {
  local i
  for i in $(seq 1 "${FAKE_NODES}"); do
    cat <<NODE
---
apiVersion: v1
kind: Node
metadata:
  name: fake-${i}
  annotations:
    kwok.x-k8s.io/node: fake
  labels:
    kubernetes.io/hostname: fake-${i}
    kubernetes.io/os: linux
    type: kwok
spec:
  # Keeps the scheduler pods (which tolerate nothing) on a node where they really run
  # (podrunner's, or a real one); workloads tolerate it and select type=kwok.
  taints:
  - key: kwok.x-k8s.io/node
    value: fake
    effect: NoSchedule
status:
  allocatable: {cpu: "${FAKE_NODE_CPU}", memory: ${FAKE_NODE_MEMORY}, pods: "110"}
  capacity: {cpu: "${FAKE_NODE_CPU}", memory: ${FAKE_NODE_MEMORY}, pods: "110"}
NODE
  done
}

# wait_condition CONDITION OBJECT waits up to two minutes for OBJECT's CONDITION to be
# True. kubectl wait fails at once, rather than waits, when it reads an object that the
# API server has not given any condition yet (".status.conditions accessor error: <nil>
# is of the type <nil>"; one fresh cluster in three here for a CRD) or does not show yet
# (NotFound); so it is tried again, and at the deadline once more to show why.
wait_condition() {
  local deadline=$((SECONDS + 120))
  until kubectl wait --for condition="$1" "$2" --timeout 5s >/dev/null 2>&1; do
    if [ "${SECONDS}" -ge "${deadline}" ]; then
      kubectl wait --for condition="$1" "$2" --timeout 5s >/dev/null
      return
    fi
    sleep 1
  done
}

# wait_metrics_api waits until the aggregator finds metrics-server serving the metrics API:
# until then kubectl top fails, and so does every namespace deletion (its discovery of the
# API's kinds fails). A metrics-server that exited shows here, with its log, and not later
# as a namespace stuck in Terminating.
wait_metrics_api() {
  if ! wait_condition Available apiservice/v1beta1.metrics.k8s.io; then
    log "metrics-server does not serve the metrics API; the end of its log:"
    tail -n 20 "${logs_dir}/metrics-server.log" >&2 || true
    return 1
  fi
}

# forget_discovery removes kubectl's cache of the API's discovery for the cluster's
# address. kubectl keeps it per address for hours, and every cluster of this name listens
# at the same one: a cluster made anew would be read through its predecessor's kinds, so
# that a kind name another group also served there (OpenShift's SecondaryScheduler, say)
# would be looked up in that group, and not be found.
forget_discovery() {
  local server
  server=$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')
  # kubectl names the directory after the address without its scheme, each character
  # other than a letter, digit, _, ., /, ( or ) made an underscore.
  server=${server#https://}
  server=${server#http://}
  rm -rf "${KUBECACHEDIR:-${HOME}/.kube/cache}/discovery/$(sed -E 's#[^[:alnum:]_./()]#_#g' <<<"${server}")"
}

# metrics_server_config writes, and names, the kwokctl options that make the metrics API
# from hack/metrics-server (kwokctl would download metrics-server's release manifest) with
# this control plane's kubectl. kwokctl takes them as absolute paths.
metrics_server_config() {
  local config="${OUTPUT_DIR}/kwokctl-metrics-server.yaml"
  cat >"${config}" <<CONFIG
apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokctlConfiguration
options:
  kubectlBinary: ${CONTROL_PLANE_DIR}/kubectl
  metricsServerManifests:
  - ${repo_root}/hack/metrics-server
CONFIG
  echo "${config}"
}

# real_node_config writes, and names, the kwokctl options a real node needs: the API
# server's certificate names the kubernetes Service's address (the first of the default
# service range, 10.0.0.0/24), which in-cluster clients dial, and the machine's own, which
# kube-proxy sends the Service's traffic to; and the API server reaches a kubelet (for
# kubectl logs and exec) at the address the node reports, not at its name, which no DNS
# here resolves, with the admin's certificate, which the kubelet trusts (its client CA is
# the cluster's).
real_node_config() {
  local config="${OUTPUT_DIR}/kwokctl-real-node.yaml" machine
  machine=$(ip -4 route get 1.1.1.1 | sed -n 's/.* src \([0-9.]*\).*/\1/p')
  cat >"${config}" <<CONFIG
apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokctlConfiguration
options:
  kubeApiserverCertSANs: [10.0.0.1, ${machine}]
componentsPatches:
- name: kube-apiserver
  extraArgs:
  - key: kubelet-preferred-address-types
    value: InternalIP,Hostname
  - key: kubelet-client-certificate
    value: ${KWOK_WORKDIR}/clusters/${CLUSTER_NAME}/pki/admin.crt
  - key: kubelet-client-key
    value: ${KWOK_WORKDIR}/clusters/${CLUSTER_NAME}/pki/admin.key
CONFIG
  echo "${config}"
}

# KWOKCTL_LOCK serializes making clusters on this machine: kwokctl picks each component's
# port by trying it free, then starts the component, and two clusters made at once (make
# test runs the e2e suite beside the docs test) could pick the same port in between.
KWOKCTL_LOCK="${KWOKCTL_LOCK:-${TMPDIR:-/tmp}/secondary-scheduler-kwokctl.lock}"

up() {
  "${repo_root}/hack/build-control-plane.sh"
  mkdir -p "${OUTPUT_DIR}"
  # Held on file descriptor 9 until the cluster's components listen; kwokctl runs without it,
  # so that the components it starts do not hold it on.
  exec 9>"${KWOKCTL_LOCK}"
  flock 9
  if "${kwokctl}" get clusters 2>/dev/null | grep -x "${CLUSTER_NAME}" >/dev/null; then
    log "cluster ${CLUSTER_NAME} exists; starting it"
    "${kwokctl}" start cluster --name "${CLUSTER_NAME}" >/dev/null 9>&-
  else
    log "creating cluster ${CLUSTER_NAME}"
    local extra_args=() arg
    for arg in ${KUBE_APISERVER_ARGS}; do
      extra_args+=(--extra-args "kube-apiserver=${arg}")
    done
    for arg in ${KUBE_CONTROLLER_MANAGER_ARGS}; do
      extra_args+=(--extra-args "kube-controller-manager=${arg}")
    done
    if [ "${WORKLOAD_API}" = true ]; then
      extra_args+=(--kube-feature-gates GenericWorkload=true --kube-runtime-config scheduling.k8s.io/v1beta1=true)
    fi
    if [ "${METRICS_SERVER}" = true ]; then
      extra_args+=(--enable metrics-server --metrics-server-binary "${CONTROL_PLANE_DIR}/metrics-server"
        --config "$(metrics_server_config)")
      # The aggregation layer proxies the metrics API to metrics-server with the admin's
      # certificate (kwokctl's --proxy-client-cert-file). Trusting that certificate's
      # name, from the cluster's CA, for the request headers lets metrics-server
      # authorize the user the request is for, as on a real cluster. It also lets
      # kube-scheduler, which delegates authentication, stop logging every 10 s that the
      # request-header CA is missing, which a reader of its log would take for a fault.
      #
      # metrics-server is given the same CAs and headers as files and flags. Otherwise it
      # reads them from the API server once, as it starts, and exits if that fails:
      # kwokctl may start it before the API server serves, and does not restart it.
      local pki="${KWOK_WORKDIR}/clusters/${CLUSTER_NAME}/pki" component setting
      extra_args+=(--extra-args "metrics-server=client-ca-file=${pki}/ca.crt")
      for component in kube-apiserver metrics-server; do
        for setting in client-ca-file="${pki}/ca.crt" allowed-names=kwok-admin username-headers=X-Remote-User \
          group-headers=X-Remote-Group extra-headers-prefix=X-Remote-Extra-; do
          extra_args+=(--extra-args "${component}=requestheader-${setting}")
        done
      done
    fi
    if [ "${REAL_NODE}" = true ]; then
      extra_args+=(--config "$(real_node_config)")
    fi
    "${kwokctl}" create cluster --name "${CLUSTER_NAME}" --runtime binary "${extra_args[@]}" \
      --config "${repo_root}/hack/kwokctl-config.yaml" \
      --kube-audit-policy "${repo_root}/hack/audit-policy.yaml" \
      --kubeconfig "${kubeconfig}" \
      --etcd-binary "${CONTROL_PLANE_DIR}/etcd" \
      --kube-apiserver-binary "${CONTROL_PLANE_DIR}/kube-apiserver" \
      --kube-controller-manager-binary "${CONTROL_PLANE_DIR}/kube-controller-manager" \
      --kube-scheduler-binary "${CONTROL_PLANE_DIR}/kube-scheduler" \
      --kwok-controller-binary "${CONTROL_PLANE_DIR}/kwok" \
      --wait 2m >/dev/null 9>&-
  fi
  exec 9>&-
  forget_discovery
  # A cluster made earlier with metrics-server, and started again, has its APIService.
  if [ "${METRICS_SERVER}" = true ] || kubectl get apiservice v1beta1.metrics.k8s.io >/dev/null 2>&1; then
    wait_metrics_api
  fi
  # kubectl apply refuses an empty input ("no objects passed to apply").
  if [ "${FAKE_NODES}" -gt 0 ]; then
    fake_nodes | kubectl apply -f - >/dev/null
  fi
  if [ "${APPLY_CRD}" = true ]; then
    kubectl apply --server-side -f "${repo_root}/config/crd/bases" >/dev/null
    wait_condition Established crd/secondaryschedulers.operator.secondary-scheduler.io
    wait_condition Established crd/routingtables.operator.secondary-scheduler.io
  fi
  log "cluster ${CLUSTER_NAME} is up with ${FAKE_NODES} fake nodes; KUBECONFIG=${kubeconfig}"
}

down() {
  if [ -x "${kwokctl}" ]; then
    "${kwokctl}" delete cluster --name "${CLUSTER_NAME}" >/dev/null 2>&1 || true
  fi
  log "cluster ${CLUSTER_NAME} deleted"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  kubeconfig) echo "${kubeconfig}" ;;
  audit-log) echo "${logs_dir}/audit.log" ;;
  logs) echo "${logs_dir}" ;;
  *) echo "usage: $0 up|down|kubeconfig|audit-log|logs" >&2; exit 2 ;;
esac
