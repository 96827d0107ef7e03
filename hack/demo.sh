#!/usr/bin/env bash
# `make demo`: a local cluster, the operator and a bin-packing SecondaryScheduler placing
# real pods. `make demo-down` stops it all.
#
# `make demo-prometheus` adds a Prometheus on loopback for the load-aware profiles, fed by
# hack/demoload with each node's load made up from the pods bound to it.
#
# `make demo-operator SCHEDULER_NAMESPACES=...` restarts the operator, allowing those
# namespaces.
#
# `hack/demo.sh bare` starts the same cluster without the CRD and the operator, for an
# installer to install them as on a reader's cluster (the docs tests run
# docs/getting-started.md there). `hack/demo.sh kube-prometheus` then plays kube-prometheus
# there (test/kubeprometheus: the Prometheus Operator's API, Prometheus k8s in namespace
# monitoring with its Services, a real Prometheus behind them); it needs root.
#
# Usage: hack/demo.sh up|prometheus|operator|bare|kube-prometheus|down
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KUBE_VERSION="${KUBE_VERSION:-v1.37.0}"
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
# flag): `make demo-operator SCHEDULER_NAMESPACES=demo,platform` restarts it with more.
# What the operator was last started with is kept in operator.env, so that a restart
# changes only what it is given.
operator_settings="${OUTPUT_DIR}/operator.env"
SCHEDULER_NAMESPACES="${SCHEDULER_NAMESPACES:-}"

# The ClusterRoles metrics tokens may be bound to (--metrics-token-cluster-roles); empty
# for the operator's default, cluster-monitoring-view.
METRICS_TOKEN_CLUSTER_ROLES="${METRICS_TOKEN_CLUSTER_ROLES:-}"

# The demo's operator runs as a process of this host, in this namespace as far as the
# API goes: it writes its admission policy's parameters there.
operator_namespace=secondary-scheduler-operator

start_operator() {
  SCHEDULER_NAMESPACES="${SCHEDULER_NAMESPACES:-demo}"
  # As an installation does: the admission policies the installer ships (config/admission
  # reads its parameters in the default namespace, operator_namespace; config/routing is
  # dist/routing.yaml, for spec.routing).
  kubectl create namespace "${operator_namespace}" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  kubectl apply --server-side -k "${repo_root}/config/admission" >/dev/null
  kubectl apply --server-side -k "${repo_root}/config/routing" >/dev/null
  printf 'SCHEDULER_NAMESPACES=%q\nMETRICS_TOKEN_CLUSTER_ROLES=%q\n' "${SCHEDULER_NAMESPACES}" "${METRICS_TOKEN_CLUSTER_ROLES}" >"${operator_settings}"
  POD_NAMESPACE="${operator_namespace}" start_process operator "${repo_root}/bin/manager" --kubeconfig "${kubeconfig}" \
    --metrics-bind-address=0 --health-probe-bind-address=0 --scheduler-namespaces="${SCHEDULER_NAMESPACES}" \
    ${METRICS_TOKEN_CLUSTER_ROLES:+--metrics-token-cluster-roles="${METRICS_TOKEN_CLUSTER_ROLES}"}
}

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
  (cd "${repo_root}" && go build -o bin/manager .)
  start_operator
}

# cluster_up starts the cluster and podrunner, which runs the pods of the scheduler images
# as kube-scheduler processes and those of the operator's image as the manager built
# here, under their pods' ServiceAccount tokens.
cluster_up() {
  log "Building the control plane into bin/ (the first time takes several minutes; later runs reuse it)"
  "${repo_root}/hack/build-control-plane.sh"
  log "Starting a local cluster (kwok, binary runtime)"
  "${repo_root}/hack/local-cluster.sh" up
  log "Building and starting podrunner (runs scheduler and operator pods as processes)"
  mkdir -p "${repo_root}/bin"
  (cd "${repo_root}" && go build -o bin/manager . && go build -o bin/kubectl-secondary_scheduler ./cmd/kubectl-secondary_scheduler && go build -o bin/podrunner ./test/podrunner && go build -o bin/pause ./test/pause)
  start_process podrunner "${repo_root}/bin/podrunner" --kubeconfig "${kubeconfig}" --work-dir "${OUTPUT_DIR}/podrunner" \
    --binaries "secondary-scheduler-operator=${repo_root}/bin/manager,scheduler-plugins=${SCHEDULER_PLUGINS_BINARY:-${CONTROL_PLANE_DIR}/kube-scheduler},kube-scheduler=${CONTROL_PLANE_DIR}/kube-scheduler,registry.k8s.io/pause=${repo_root}/bin/pause"
}

# bare is a cluster as a reader's is before installing: no CRD, no operator. An installer
# (dist/install.yaml) runs the operator there as a pod, which podrunner runs.
bare() {
  export APPLY_CRD=false
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
  log "Starting the operator"
  start_operator
  log "Creating the SecondaryScheduler bin-packing in namespace demo"
  kubectl create namespace demo --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  kubectl -n demo apply -f "${repo_root}/config/samples/operator_v1_secondaryscheduler_binpacking.yaml"
  kubectl -n demo wait --for=condition=Available secondaryscheduler/bin-packing --timeout=180s
  log "Creating workloads: 6 pods for the bin-packing scheduler, 4 for the default one"
  kubectl -n demo apply -f "${repo_root}/hack/demo-workload.yaml"
  kubectl -n demo wait --for=condition=Available deployment --all --timeout=180s >/dev/null
  log "kubectl get secondaryschedulers -n demo"
  kubectl -n demo get secondaryschedulers
  log "kubectl get pods -n demo -o wide   (bin-packing fills nodes; the default scheduler spreads)"
  kubectl -n demo get pods -o wide --sort-by=.spec.nodeName
  cat <<HELP

The cluster is still running. Use it with:
  export KUBECONFIG=${kubeconfig}
  export PATH=${CONTROL_PLANE_DIR}:\$PATH
  kubectl -n demo describe secondaryscheduler bin-packing
Logs: ${OUTPUT_DIR}/operator.log, ${OUTPUT_DIR}/podrunner.log, ${OUTPUT_DIR}/podrunner/pods/*/process.log
Stop it with: make demo-down
HELP
}

# The Prometheus of `make demo-prometheus`: Debian's prometheus package (or any prometheus
# on PATH) on loopback, scraping demoload every 5 s; the schedulers of the demo run as host
# processes, so they reach it at the same address as the operator.
DEMO_PROMETHEUS_ADDRESS="${DEMO_PROMETHEUS_ADDRESS:-127.0.0.1:9090}"
DEMO_LOAD_ADDRESS="${DEMO_LOAD_ADDRESS:-127.0.0.1:9100}"
# The same Prometheus over TLS behind a bearer-token check, as kube-rbac-proxy serves it on
# many clusters; its CA is written beside Prometheus' data.
DEMO_PROMETHEUS_PROXY_ADDRESS="${DEMO_PROMETHEUS_PROXY_ADDRESS:-127.0.0.1:9091}"

prometheus_up() {
  if [ ! -f "${kubeconfig}" ]; then
    echo "no demo cluster is running: run make demo first" >&2
    exit 1
  fi
  command -v prometheus >/dev/null || { echo "prometheus is not on PATH: install it (Debian and Ubuntu: apt-get install prometheus)" >&2; exit 1; }
  log "Starting demoload (each node's load from its pods) on ${DEMO_LOAD_ADDRESS}, and Prometheus behind a token check on ${DEMO_PROMETHEUS_PROXY_ADDRESS}"
  (cd "${repo_root}" && go build -o bin/demoload ./hack/demoload)
  mkdir -p "${OUTPUT_DIR}/prometheus"
  start_process demoload "${repo_root}/bin/demoload" --kubeconfig "${kubeconfig}" --listen "${DEMO_LOAD_ADDRESS}" \
    --rbac-proxy-listen "${DEMO_PROMETHEUS_PROXY_ADDRESS}" --rbac-proxy-upstream "http://${DEMO_PROMETHEUS_ADDRESS}" \
    --rbac-proxy-ca-file "${OUTPUT_DIR}/prometheus/ca.crt"
  log "Starting Prometheus on ${DEMO_PROMETHEUS_ADDRESS}"
  cat >"${OUTPUT_DIR}/prometheus/prometheus.yml" <<CONFIG
global: {scrape_interval: 5s, evaluation_interval: 5s}
scrape_configs:
- job_name: node-load
  # The series carry instance=<node name>, as load-watcher needs: keep it.
  honor_labels: true
  static_configs: [{targets: ['${DEMO_LOAD_ADDRESS}']}]
CONFIG
  start_process prometheus prometheus --config.file="${OUTPUT_DIR}/prometheus/prometheus.yml" \
    --storage.tsdb.path="${OUTPUT_DIR}/prometheus/data" --web.listen-address="${DEMO_PROMETHEUS_ADDRESS}"
  wait_for_node_load "http://${DEMO_PROMETHEUS_ADDRESS}" "${OUTPUT_DIR}/prometheus.log and ${OUTPUT_DIR}/demoload.log"
  log "Prometheus at http://${DEMO_PROMETHEUS_ADDRESS} has every node's load; give load-aware schedulers metrics.address: http://${DEMO_PROMETHEUS_ADDRESS}, or https://${DEMO_PROMETHEUS_PROXY_ADDRESS} with a token of a user who may get prometheuses/api in monitoring and the CA in ${OUTPUT_DIR}/prometheus/ca.crt"
}

down() {
  # The extender docs/demo.md starts as a process here, if it still runs.
  stop_process extender
  stop_process kube-prometheus
  stop_process prometheus
  stop_process demoload
  stop_process operator
  stop_process podrunner
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
