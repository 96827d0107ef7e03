#!/usr/bin/env bash
# `make demo`: a local cluster, the operator and a bin-packing SecondaryScheduler placing
# real pods. `make demo-down` stops it all.
#
# Usage: hack/demo.sh up|down
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

stop_process() {
  local pidfile="${OUTPUT_DIR}/$1.pid"
  if [ -f "${pidfile}" ]; then
    kill "$(cat "${pidfile}")" 2>/dev/null || true
    rm -f "${pidfile}"
  fi
}

start_process() {
  local name="$1"; shift
  stop_process "${name}"
  nohup "$@" >"${OUTPUT_DIR}/${name}.log" 2>&1 &
  echo $! >"${OUTPUT_DIR}/${name}.pid"
}

up() {
  log "Building the control plane into bin/ (the first time takes several minutes; later runs reuse it)"
  "${repo_root}/hack/build-control-plane.sh"
  log "Starting a local cluster (kwok, binary runtime)"
  "${repo_root}/hack/local-cluster.sh" up
  log "Building and starting the operator and podrunner (runs scheduler pods as processes)"
  mkdir -p "${repo_root}/bin"
  (cd "${repo_root}" && go build -o bin/manager . && go build -o bin/podrunner ./test/podrunner)
  start_process podrunner "${repo_root}/bin/podrunner" --kubeconfig "${kubeconfig}" \
    --work-dir "${OUTPUT_DIR}/podrunner" --binaries "scheduler-plugins=${SCHEDULER_PLUGINS_BINARY:-${CONTROL_PLANE_DIR}/kube-scheduler},kube-scheduler=${CONTROL_PLANE_DIR}/kube-scheduler"
  start_process operator "${repo_root}/bin/manager" --kubeconfig "${kubeconfig}" \
    --metrics-bind-address=0 --health-probe-bind-address=0 --scheduler-namespaces=demo
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

down() {
  stop_process operator
  stop_process podrunner
  "${repo_root}/hack/local-cluster.sh" down
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
