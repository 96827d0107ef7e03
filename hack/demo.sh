#!/usr/bin/env bash
# `make demo`: a local cluster with a real node (hack/real-node.sh: containerd, runc, a
# kubelet and kube-proxy; it needs root), the operator installed from dist/install.yaml
# running there as a pod, and a bin-packing SecondaryScheduler whose pod runs there too,
# placing workloads on kwok's fake nodes. `make demo-down` stops it all.
#
# `make demo-prometheus` adds a Prometheus for the load-aware profiles, fed by
# hack/demoload with each node's load made up from the pods bound to it, which pods reach
# through the Service prometheus in namespace demo.
#
# `make demo-operator SCHEDULER_NAMESPACES=...` builds the operator's image again and rolls
# its pods, allowing those namespaces.
#
# `hack/demo.sh bare` starts the same cluster without the CRD and the operator, for an
# installer to install them as on a reader's cluster (the docs tests run
# docs/getting-started.md there). `hack/demo.sh kube-prometheus` then plays kube-prometheus
# there (test/kubeprometheus: the Prometheus Operator's API, Prometheus k8s in namespace
# monitoring with its Services, a real Prometheus behind them).
#
# Usage: hack/demo.sh up|prometheus|operator|bare|kube-prometheus|down
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KUBE_VERSION="${KUBE_VERSION:-v1.37.2}"
CONTROL_PLANE_DIR="${CONTROL_PLANE_DIR:-${repo_root}/bin/k8s/${KUBE_VERSION}}"
# The scheduler-plugins image runs the kube-scheduler `make scheduler-plugins` built, when
# there is one; else the in-tree kube-scheduler (below).
if [ -z "${SCHEDULER_PLUGINS_BINARY:-}" ] && [ -x "${repo_root}/bin/scheduler-plugins/kube-scheduler" ]; then
  SCHEDULER_PLUGINS_BINARY="${repo_root}/bin/scheduler-plugins/kube-scheduler"
fi
export CLUSTER_NAME="${CLUSTER_NAME:-secondary-scheduler}"
export OUTPUT_DIR="${OUTPUT_DIR:-${repo_root}/_output/${CLUSTER_NAME}}"
kubeconfig="${OUTPUT_DIR}/kubeconfig"
kubectl() { "${CONTROL_PLANE_DIR}/kubectl" --kubeconfig "${kubeconfig}" "$@"; }
log() { printf '\n==> %s\n' "$*" >&2; }

# stop_process stops a process start_process started and waits until it is gone, so that
# its successor finds the port, the data directory's lock or the leader's Lease free.
stop_process() {
  local pidfile="${OUTPUT_DIR}/$1.pid" pid i
  if [ -f "${pidfile}" ]; then
    pid="$(cat "${pidfile}")"
    kill "${pid}" 2>/dev/null || true
    for i in $(seq 1 100); do
      kill -0 "${pid}" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "${pid}" 2>/dev/null || true
    rm -f "${pidfile}"
  fi
}

start_process() {
  local name="$1"; shift
  stop_process "${name}"
  nohup "$@" >"${OUTPUT_DIR}/${name}.log" 2>&1 &
  echo $! >"${OUTPUT_DIR}/${name}.pid"
}

# The namespaces where the demo's operator runs schedulers (its --scheduler-namespaces
# flag): `make demo-operator SCHEDULER_NAMESPACES=demo,platform` changes them. What the
# operator was last configured with is kept in operator.env, so that a restart changes
# only what it is given.
operator_settings="${OUTPUT_DIR}/operator.env"
SCHEDULER_NAMESPACES="${SCHEDULER_NAMESPACES:-}"

# The ClusterRoles metrics tokens may be bound to (--metrics-token-cluster-roles); empty
# for the operator's default, cluster-monitoring-view.
METRICS_TOKEN_CLUSTER_ROLES="${METRICS_TOKEN_CLUSTER_ROLES:-}"

# The operator runs as dist/install.yaml installs it: its Deployment in this namespace.
operator_namespace=secondary-scheduler-operator
operator_deployment=secondary-scheduler-operator-controller-manager

# cluster_up starts the cluster with a real node (hack/real-node.sh: containerd, runc, a
# kubelet and kube-proxy; it needs root), where pods run as containers: the operator's,
# its schedulers', and any of the pause image. Workloads run on kwok's fake nodes. The node
# can pull nothing, so it holds the images of `make images`, built from this checkout: the
# operator's under dist/install.yaml's name, and every scheduler-plugins release image the
# operator knows, its default among them (scheduler-plugins' kube-scheduler once
# `make scheduler-plugins` built it, else Kubernetes' in its place, which runs every profile
# but the load-aware ones), and the descheduler's.
cluster_up() {
  log "Building the control plane into bin/ (the first time takes several minutes; later runs reuse it)"
  "${repo_root}/hack/build-control-plane.sh"
  # And the descheduler, whose image spec.descheduling runs (docs/descheduling.md).
  "${repo_root}/hack/build-control-plane.sh" kubelet kube-proxy descheduler
  log "Starting a local cluster (kwok, binary runtime)"
  APPLY_CRD=false REAL_NODE=true "${repo_root}/hack/local-cluster.sh" up
  build_images
  (cd "${repo_root}" && go build -o bin/kubectl-secondary_scheduler ./cmd/kubectl-secondary_scheduler)
  log "Starting the real node (containerd, kubelet, kube-proxy)"
  IMAGES="${repo_root}/bin/images.tar" "${repo_root}/hack/real-node.sh" up
}

build_images() {
  log "Building the images the real node runs (make images: bin/images.tar)"
  make -C "${repo_root}" --no-print-directory images SCHEDULER_PLUGINS_BINARY="${SCHEDULER_PLUGINS_BINARY:-}" >"${OUTPUT_DIR}/images.log" 2>&1 ||
    { tail -n 20 "${OUTPUT_DIR}/images.log" >&2; exit 1; }
}

# install_operator installs the operator as a cluster admin does (dist/install.yaml and,
# for spec.routing, dist/routing.yaml), allowing it SCHEDULER_NAMESPACES, with the flags
# configure_operator sets already in place (kubectl's kustomize adds them to the Deployment's
# arguments, which dist/install.yaml leaves without them), so that its pods start once.
install_operator() {
  allow_namespaces
  local kustomization="${OUTPUT_DIR}/install"
  mkdir -p "${kustomization}"
  cp "${repo_root}/dist/install.yaml" "${kustomization}/install.yaml"
  {
    printf 'resources: [install.yaml]\npatches:\n- target: {kind: Deployment, name: %s}\n  patch: |-\n' "${operator_deployment}"
    local flag
    for flag in "${operator_flags[@]}"; do
      printf '    - {op: add, path: /spec/template/spec/containers/0/args/-, value: "%s"}\n' "${flag}"
    done
  } >"${kustomization}/kustomization.yaml"
  kubectl apply --server-side -k "${kustomization}" >/dev/null
  kubectl apply --server-side -f "${repo_root}/dist/routing.yaml" >/dev/null
  kubectl -n "${operator_namespace}" rollout status deployment "${operator_deployment}" --timeout=180s >/dev/null
}

# allow_namespaces allows the operator SCHEDULER_NAMESPACES as docs/getting-started.md does
# (its per-namespace role bound in each; the namespaces in its --scheduler-namespaces flag,
# which operator_flags holds), and records the settings for operator_restart.
allow_namespaces() {
  SCHEDULER_NAMESPACES="${SCHEDULER_NAMESPACES:-demo}"
  printf 'SCHEDULER_NAMESPACES=%q\nMETRICS_TOKEN_CLUSTER_ROLES=%q\n' "${SCHEDULER_NAMESPACES}" "${METRICS_TOKEN_CLUSTER_ROLES}" >"${operator_settings}"
  local namespace
  for namespace in ${SCHEDULER_NAMESPACES//,/ }; do
    kubectl create namespace "${namespace}" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
    kubectl -n "${namespace}" create rolebinding secondary-scheduler-operator-scheduler-namespace \
      --clusterrole=secondary-scheduler-operator-scheduler-namespace \
      --serviceaccount="${operator_namespace}:${operator_deployment}" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  done
  operator_flags=("--scheduler-namespaces=${SCHEDULER_NAMESPACES}")
  if [ -n "${METRICS_TOKEN_CLUSTER_ROLES}" ]; then
    operator_flags+=("--metrics-token-cluster-roles=${METRICS_TOKEN_CLUSTER_ROLES}")
  fi
}

# configure_operator allows the running operator SCHEDULER_NAMESPACES, sets its flags
# (--metrics-token-cluster-roles too) and rolls its pods, so that they also run the
# operator's image as the real node holds it now.
configure_operator() {
  allow_namespaces
  # The Deployment's arguments, but those two flags, then the two with their values. No
  # argument of dist/install.yaml holds a quote or a backslash.
  local argument arguments=()
  while read -r argument; do
    case "${argument}" in
      --scheduler-namespaces=* | --metrics-token-cluster-roles=* | "") ;;
      *) arguments+=("\"${argument}\"") ;;
    esac
  done < <(kubectl -n "${operator_namespace}" get deployment "${operator_deployment}" \
    -o jsonpath='{range .spec.template.spec.containers[0].args[*]}{@}{"\n"}{end}')
  for argument in "${operator_flags[@]}"; do
    arguments+=("\"${argument}\"")
  done
  local joined
  joined=$(IFS=,; echo "${arguments[*]}")
  kubectl -n "${operator_namespace}" patch deployment "${operator_deployment}" --type=json -p "[
    {\"op\": \"replace\", \"path\": \"/spec/template/spec/containers/0/args\", \"value\": [${joined}]},
    {\"op\": \"add\", \"path\": \"/spec/template/metadata/annotations/kubectl.kubernetes.io~1restartedAt\", \"value\": \"$(date -u +%Y-%m-%dT%H:%M:%SZ)\"}]" >/dev/null
  kubectl -n "${operator_namespace}" rollout status deployment "${operator_deployment}" --timeout=180s >/dev/null
}

# operator_restart is `make demo-operator`: the operator's image built again from the
# checkout and imported into the node, then configured and rolled.
operator_restart() {
  if [ ! -f "${kubeconfig}" ]; then
    echo "no demo cluster is running: run make demo first" >&2
    exit 1
  fi
  local given_namespaces="${SCHEDULER_NAMESPACES}" given_roles="${METRICS_TOKEN_CLUSTER_ROLES}"
  if [ -f "${operator_settings}" ]; then
    # shellcheck source=/dev/null
    . "${operator_settings}"
  fi
  SCHEDULER_NAMESPACES="${given_namespaces:-${SCHEDULER_NAMESPACES}}"
  METRICS_TOKEN_CLUSTER_ROLES="${given_roles:-${METRICS_TOKEN_CLUSTER_ROLES}}"
  log "Restarting the operator, running schedulers in namespaces ${SCHEDULER_NAMESPACES}${METRICS_TOKEN_CLUSTER_ROLES:+, metrics tokens bound to ${METRICS_TOKEN_CLUSTER_ROLES}}"
  build_images
  IMAGES="${repo_root}/bin/images.tar" "${repo_root}/hack/real-node.sh" import
  configure_operator
}

# bare is a cluster as a reader's is before installing: no CRD, no operator, and the real
# node, where an installer's pods run: dist/install.yaml's operator, then its schedulers.
bare() {
  cluster_up
  log "The cluster is up without the operator: install it, for example with kubectl apply --server-side -f dist/install.yaml"
  printf 'export KUBECONFIG=%s\nexport PATH=%s:$PATH\n' "${kubeconfig}" "${CONTROL_PLANE_DIR}"
}

# KUBE_PROMETHEUS_SUBNET is the subnet of kube-prometheus' test host: its Prometheus
# serves on 10.213.SUBNET.2:9090.
KUBE_PROMETHEUS_SUBNET="${KUBE_PROMETHEUS_SUBNET:-251}"

kube_prometheus_up() {
  if [ ! -f "${kubeconfig}" ]; then
    echo "no local cluster is running: run hack/demo.sh bare (or make demo) first" >&2
    exit 1
  fi
  [ "$(id -u)" = 0 ] || { echo "kube-prometheus' Prometheus runs on a network namespace of its own, which needs root" >&2; exit 1; }
  command -v prometheus >/dev/null || { echo "prometheus is not on PATH: install it (Debian and Ubuntu: apt-get install prometheus)" >&2; exit 1; }
  log "Playing kube-prometheus: the Prometheus Operator's API, Prometheus k8s in monitoring, a real Prometheus behind its Services"
  (cd "${repo_root}" && go build -o bin/demoload ./hack/demoload && go build -o bin/kubeprometheus ./test/kubeprometheus)
  mkdir -p "${OUTPUT_DIR}/kube-prometheus"
  start_process kube-prometheus "${repo_root}/bin/kubeprometheus" --kubeconfig "${kubeconfig}" --demoload "${repo_root}/bin/demoload" \
    --work-dir "${OUTPUT_DIR}/kube-prometheus" --subnet "${KUBE_PROMETHEUS_SUBNET}"
  local address="http://10.213.${KUBE_PROMETHEUS_SUBNET}.2:9090"
  wait_for_node_load "${address}" "${OUTPUT_DIR}/kube-prometheus.log and ${OUTPUT_DIR}/kube-prometheus/"
  log "kube-prometheus' Prometheus at ${address} (Service prometheus-operated.monitoring.svc:9090) records every node's load"
}

# wait_for_node_load waits for a minute until the Prometheus at $1 has load-watcher's
# series, and fails pointing at the logs $2 otherwise.
wait_for_node_load() {
  local i
  for i in $(seq 1 60); do
    if promtool query instant "$1" 'instance:node_cpu:ratio' 2>/dev/null | grep 'instance=' >/dev/null; then
      return
    fi
    sleep 1
  done
  echo "Prometheus at $1 did not report the nodes' load within 60 s; see $2" >&2
  exit 1
}

up() {
  # The demo's cluster runs metrics-server, for kubectl top; the bare one does not need it.
  METRICS_SERVER=true cluster_up
  log "Installing the operator (dist/install.yaml), running schedulers in namespace demo"
  install_operator
  log "Creating the SecondaryScheduler bin-packing in namespace demo"
  kubectl -n demo apply -f "${repo_root}/config/samples/operator_v1_secondaryscheduler_binpacking.yaml"
  kubectl -n demo wait --for=condition=Available secondaryscheduler/bin-packing --timeout=180s
  log "Creating workloads: 6 pods for the bin-packing scheduler, 4 for the default one"
  kubectl -n demo apply -f "${repo_root}/hack/demo-workload.yaml"
  kubectl -n demo wait --for=condition=Available deployment --all --timeout=180s >/dev/null
  log "kubectl get pods -n ${operator_namespace} -o wide   (the operator, on the real node)"
  kubectl -n "${operator_namespace}" get pods -o wide
  log "kubectl get secondaryschedulers -n demo"
  kubectl -n demo get secondaryschedulers
  log "kubectl get pods -n demo -o wide   (the scheduler on the real node; bin-packing fills fake nodes, the default scheduler spreads)"
  kubectl -n demo get pods -o wide --sort-by=.spec.nodeName
  cat <<HELP

The cluster is still running. Use it with:
  export KUBECONFIG=${kubeconfig}
  export PATH=${CONTROL_PLANE_DIR}:\$PATH
  kubectl -n demo describe secondaryscheduler bin-packing
  kubectl -n ${operator_namespace} logs deployment/${operator_deployment}
The real node's containerd, kubelet and kube-proxy log to $("${repo_root}/hack/real-node.sh" logs)
Stop it with: make demo-down
HELP
}

# The Prometheus of `make demo-prometheus`: Debian's prometheus package (or any prometheus
# on PATH), a process of this machine on port 9090 of its every address, scraping demoload
# every 5 s. Pods reach it as a Service of the cluster, prometheus in namespace demo, whose
# endpoint is the real node's address (a Prometheus outside the cluster, as many are).
DEMO_PROMETHEUS_PORT=9090
DEMO_LOAD_ADDRESS="${DEMO_LOAD_ADDRESS:-127.0.0.1:9100}"
# The same Prometheus over TLS behind a bearer-token check, as kube-rbac-proxy serves it on
# many clusters, on port 9091 of the Service; its CA is written beside Prometheus' data.
DEMO_PROMETHEUS_PROXY_PORT=9091

prometheus_up() {
  if [ ! -f "${kubeconfig}" ]; then
    echo "no demo cluster is running: run make demo first" >&2
    exit 1
  fi
  command -v prometheus >/dev/null || { echo "prometheus is not on PATH: install it (Debian and Ubuntu: apt-get install prometheus)" >&2; exit 1; }
  log "Starting demoload (each node's load from its pods) on ${DEMO_LOAD_ADDRESS}, and Prometheus behind a token check on port ${DEMO_PROMETHEUS_PROXY_PORT}"
  (cd "${repo_root}" && go build -o bin/demoload ./hack/demoload)
  mkdir -p "${OUTPUT_DIR}/prometheus"
  start_process demoload "${repo_root}/bin/demoload" --kubeconfig "${kubeconfig}" --listen "${DEMO_LOAD_ADDRESS}" \
    --rbac-proxy-listen ":${DEMO_PROMETHEUS_PROXY_PORT}" --rbac-proxy-upstream "http://127.0.0.1:${DEMO_PROMETHEUS_PORT}" \
    --rbac-proxy-ca-file "${OUTPUT_DIR}/prometheus/ca.crt"
  log "Starting Prometheus on port ${DEMO_PROMETHEUS_PORT}"
  cat >"${OUTPUT_DIR}/prometheus/prometheus.yml" <<CONFIG
global: {scrape_interval: 5s, evaluation_interval: 5s}
scrape_configs:
- job_name: node-load
  # The series carry instance=<node name>, as load-watcher needs: keep it.
  honor_labels: true
  static_configs: [{targets: ['${DEMO_LOAD_ADDRESS}']}]
CONFIG
  start_process prometheus prometheus --config.file="${OUTPUT_DIR}/prometheus/prometheus.yml" \
    --storage.tsdb.path="${OUTPUT_DIR}/prometheus/data" --web.listen-address=":${DEMO_PROMETHEUS_PORT}"
  wait_for_node_load "http://127.0.0.1:${DEMO_PROMETHEUS_PORT}" "${OUTPUT_DIR}/prometheus.log and ${OUTPUT_DIR}/demoload.log"
  local node_address
  node_address=$("${repo_root}/hack/real-node.sh" address)
  kubectl -n demo apply -f - >/dev/null <<SERVICE
apiVersion: v1
kind: Service
metadata:
  name: prometheus
spec:
  ports:
  - {name: web, port: ${DEMO_PROMETHEUS_PORT}}
  - {name: https, port: ${DEMO_PROMETHEUS_PROXY_PORT}}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: prometheus
  labels: {kubernetes.io/service-name: prometheus}
addressType: IPv4
endpoints: [{addresses: ["${node_address}"]}]
ports:
- {name: web, port: ${DEMO_PROMETHEUS_PORT}}
- {name: https, port: ${DEMO_PROMETHEUS_PROXY_PORT}}
SERVICE
  log "Prometheus has every node's load; give load-aware schedulers metrics.address: http://prometheus.demo.svc:${DEMO_PROMETHEUS_PORT}, or https://prometheus.demo.svc:${DEMO_PROMETHEUS_PROXY_PORT} with a token of a user who may get prometheuses/api in monitoring and the CA in ${OUTPUT_DIR}/prometheus/ca.crt"
}

down() {
  # The extender docs/demo.md starts as a process here, if it still runs.
  stop_process extender
  stop_process kube-prometheus
  stop_process prometheus
  stop_process demoload
  # What a demo of before the real node started, if it still runs.
  stop_process operator
  stop_process podrunner
  if [ -d "${OUTPUT_DIR}/node" ]; then
    "${repo_root}/hack/real-node.sh" down
  fi
  "${repo_root}/hack/local-cluster.sh" down
}

case "${1:-}" in
  up) up ;;
  prometheus) prometheus_up ;;
  operator) operator_restart ;;
  bare) bare ;;
  kube-prometheus) kube_prometheus_up ;;
  down) down ;;
  *) echo "usage: $0 up|prometheus|operator|bare|kube-prometheus|down" >&2; exit 2 ;;
esac
