#!/usr/bin/env bash
# A real node for the local cluster of hack/local-cluster.sh: Debian's containerd and runc,
# CNI's bridge and host-local IPAM from containernetworking-plugins, and a kubelet and
# kube-proxy of the control plane's version (hack/build-control-plane.sh), so that pods run
# as real containers. Its pods resolve Services' cluster names (NAME.NAMESPACE.svc) through
# test/clusterdns, the cluster's DNS, on the node's address. No registry is reachable: the images come from an archive that
# hack/buildimages wrote (IMAGES), imported with ctr, the pause image among them.
#
# This machine runs cgroup v1 and its root lacks CAP_SYS_RESOURCE: the kubelet runs with
# failCgroupV1: false and the cgroupfs driver, and containerd's CRI plugin with
# restrict_oom_score_adj (without it every sandbox fails: runc cannot write the
# sandbox's oom_score_adj). The cluster must have been made with REAL_NODE=true, so that
# the API server's certificate names the addresses pods reach it at.
#
# Usage: hack/real-node.sh up|down|import|address|logs
#   (import: IMAGES into the running node's containerd; address: the node's address)
#   CLUSTER_NAME, OUTPUT_DIR, CONTROL_PLANE_DIR, KUBE_VERSION: as hack/local-cluster.sh
#   NODE_NAME (default real-node), POD_CIDR (default 10.88.0.0/24)
#   IMAGES: an archive of hack/buildimages to import (it must hold PAUSE_IMAGE)
#   PAUSE_IMAGE (default registry.k8s.io/pause:3.10)
#   NETWORK_POLICIES=kube-router: enforce NetworkPolicies on the node, with kube-router's
#   firewall alone (hack/build-control-plane.sh kube-router), as a host process; needs ipset
# Needs root, and the packages containerd, runc, containernetworking-plugins, iptables and curl.
set -euo pipefail

# shellcheck source=hack/local-cluster-env.sh
source "$(dirname "${BASH_SOURCE[0]}")/local-cluster-env.sh"
NODE_NAME="${NODE_NAME:-real-node}"
POD_CIDR="${POD_CIDR:-10.88.0.0/24}"
IMAGES="${IMAGES:-}"
PAUSE_IMAGE="${PAUSE_IMAGE:-registry.k8s.io/pause:3.10}"
NETWORK_POLICIES="${NETWORK_POLICIES:-}"
# The cluster's Service range (hack/local-cluster.sh's).
SERVICE_CIDR="${SERVICE_CIDR:-10.0.0.0/24}"

node_dir="${OUTPUT_DIR}/node"
kubeconfig="${OUTPUT_DIR}/kubeconfig"
socket="${node_dir}/containerd/containerd.sock"
pki="${OUTPUT_DIR}/kwok/clusters/${CLUSTER_NAME}/pki"
log() { printf '[real-node] %s\n' "$*" >&2; }
kubectl() { "${CONTROL_PLANE_DIR}/kubectl" --kubeconfig "${kubeconfig}" "$@"; }
ctr() { command ctr --address "${socket}" --namespace k8s.io "$@"; }

# node_ip is the address the node reports and pods reach the API server at: the one this
# machine sends from on its default route (kubectl logs and exec need one other than
# loopback).
node_ip() { ip -4 route get 1.1.1.1 | sed -n 's/.* src \([0-9.]*\).*/\1/p'; }

# start NAME COMMAND... runs COMMAND in the background with its log and pid in node_dir.
start() {
  local name=$1; shift
  nohup "$@" >"${node_dir}/logs/${name}.log" 2>&1 &
  echo $! >"${node_dir}/${name}.pid"
}

stop() {
  local pidfile="${node_dir}/$1.pid"
  [ -f "${pidfile}" ] || return 0
  local pid; pid=$(cat "${pidfile}")
  kill "${pid}" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "${pid}" 2>/dev/null || break; sleep 0.2; done
  kill -9 "${pid}" 2>/dev/null || true
  rm -f "${pidfile}"
}

# wait_for DESCRIPTION SECONDS COMMAND... waits until COMMAND succeeds.
wait_for() {
  local what=$1 deadline=$((SECONDS + $2)); shift 2
  until "$@" >/dev/null 2>&1; do
    if [ "${SECONDS}" -ge "${deadline}" ]; then log "${what}: not within the time allowed"; return 1; fi
    sleep 1
  done
}

check_prerequisites() {
  [ "$(id -u)" = 0 ] || { log "a node runs containers: run as root"; exit 1; }
  local missing=() tool
  for tool in containerd runc ctr iptables curl; do command -v "${tool}" >/dev/null 2>&1 || missing+=("${tool}"); done
  [ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
  case "${NETWORK_POLICIES}" in
    "") ;;
    kube-router) command -v ipset >/dev/null 2>&1 || missing+=(ipset) ;;
    *) log "NETWORK_POLICIES=${NETWORK_POLICIES}: only kube-router is known"; exit 1 ;;
  esac
  if [ "${#missing[@]}" -gt 0 ]; then
    log "missing: ${missing[*]} (Debian's packages containerd, runc, containernetworking-plugins, iptables, curl, ipset)"; exit 1
  fi
  [ -f "${kubeconfig}" ] || { log "no cluster at ${OUTPUT_DIR}: hack/local-cluster.sh up first (with REAL_NODE=true)"; exit 1; }
}

write_containerd_config() {
  mkdir -p "${node_dir}/containerd" "${node_dir}/cni/net.d" "${node_dir}/logs"
  cat >"${node_dir}/containerd/config.toml" <<CONFIG
version = 2
root = "${node_dir}/containerd/root"
state = "${node_dir}/containerd/state"
[grpc]
  address = "${socket}"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${PAUSE_IMAGE}"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "${node_dir}/cni/net.d"
CONFIG
  cat >"${node_dir}/cni/net.d/10-bridge.conflist" <<CNI
{
  "cniVersion": "1.0.0",
  "name": "${NODE_NAME}",
  "plugins": [
    {"type": "bridge", "bridge": "cni-${NODE_NAME:0:11}", "isGateway": true, "ipMasq": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "${POD_CIDR}"}]], "routes": [{"dst": "0.0.0.0/0"}],
              "dataDir": "${node_dir}/cni/ipam"}},
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "loopback"}
  ]
}
CNI
}

write_kubelet_config() {
  mkdir -p "${node_dir}/kubelet"
  cat >"${node_dir}/kubelet/config.yaml" <<CONFIG
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# cgroup v1 on this machine, without systemd.
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://${socket}
address: $(node_ip)
port: 10250
readOnlyPort: 0
healthzPort: 0
podCIDR: ${POD_CIDR}
failSwapOn: false
podLogsDir: ${node_dir}/kubelet/pod-logs
# Pods ask test/clusterdns first (dnsPolicy ClusterFirst), with the machine's search
# domains after the cluster's.
clusterDNS: [$(node_ip)]
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: ${pki}/ca.crt}
authorization:
  mode: Webhook
# A machine shared with the control plane and the tests: no eviction for its disk or
# memory, which the tests do not exercise and a full disk would turn into lost pods.
evictionHard: {}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
CONFIG
}

up() {
  check_prerequisites
  local components=(kubelet kube-proxy)
  [ -z "${NETWORK_POLICIES}" ] || components+=(kube-router)
  CONTROL_PLANE_DIR="${CONTROL_PLANE_DIR}" KUBE_VERSION="${KUBE_VERSION}" "${repo_root}/hack/build-control-plane.sh" "${components[@]}"
  stop_network_policies; stop kubelet; stop kube-proxy; stop clusterdns; stop containerd
  (cd "${repo_root}" && go build -o bin/clusterdns ./test/clusterdns)
  write_containerd_config
  write_kubelet_config
  # Pods' traffic is routed through the node and to Services by kube-proxy's rules.
  sysctl -qw net.ipv4.ip_forward=1
  modprobe br_netfilter 2>/dev/null || true
  start containerd containerd --config "${node_dir}/containerd/config.toml"
  wait_for "containerd's socket" 30 ctr version
  if [ -n "${IMAGES}" ]; then
    log "importing ${IMAGES}"
    ctr images import "${IMAGES}" >/dev/null
  fi
  # Not grep -q: it would stop reading at the first match, ctr then dies of SIGPIPE, and
  # pipefail fails the pipeline (so in every script here).
  ctr images ls -q | grep -x "${PAUSE_IMAGE}" >/dev/null || { log "containerd lacks ${PAUSE_IMAGE}: give IMAGES an archive that holds it (hack/buildimages -pause)"; exit 1; }
  start clusterdns "${repo_root}/bin/clusterdns" --kubeconfig "${kubeconfig}" --listen "$(node_ip):53"
  if ! wait_for "the cluster's DNS serving" 30 grep serving "${node_dir}/logs/clusterdns.log"; then
    tail -n 20 "${node_dir}/logs/clusterdns.log" >&2
    exit 1
  fi
  start kubelet "${CONTROL_PLANE_DIR}/kubelet" --config "${node_dir}/kubelet/config.yaml" --kubeconfig "${kubeconfig}" \
    --hostname-override "${NODE_NAME}" --node-ip "$(node_ip)" --root-dir "${node_dir}/kubelet/root" --cert-dir "${node_dir}/kubelet/pki"
  start kube-proxy "${CONTROL_PLANE_DIR}/kube-proxy" --kubeconfig "${kubeconfig}" --hostname-override "${NODE_NAME}" \
    --proxy-mode iptables --cluster-cidr "${POD_CIDR}" --metrics-bind-address 127.0.0.1:10249 --healthz-bind-address 127.0.0.1:10256
  if ! wait_for "kube-proxy healthy" 60 curl -sf http://127.0.0.1:10256/healthz; then
    tail -n 20 "${node_dir}/logs/kube-proxy.log" >&2
    exit 1
  fi
  if ! wait_for "node ${NODE_NAME} Ready" 120 kubectl wait --for condition=Ready "node/${NODE_NAME}" --timeout 5s; then
    tail -n 20 "${node_dir}/logs/kubelet.log" >&2
    exit 1
  fi
  [ -z "${NETWORK_POLICIES}" ] || start_network_policies
  log "node ${NODE_NAME} is Ready at $(node_ip); logs in ${node_dir}/logs"
}

# start_network_policies runs kube-router's NetworkPolicy firewall for the node's pods, and
# nothing else of it (no routes, no Service proxy: CNI's bridge and kube-proxy do those).
# It admits traffic from the node's own addresses to its pods whatever the policies say
# (the kubelet's probes), and filters pod to pod traffic across the bridge. NODE_NAME
# first: it looks the Node up by that, then by the machine's host name, then by the flag.
# Ready once its chain in FORWARD exists, which it makes at its first sync.
start_network_policies() {
  start kube-router env NODE_NAME="${NODE_NAME}" "${CONTROL_PLANE_DIR}/kube-router" --kubeconfig "${kubeconfig}" \
    --hostname-override "${NODE_NAME}" --run-firewall=true --run-router=false --run-service-proxy=false \
    --run-loadbalancer=false --service-cluster-ip-range "${SERVICE_CIDR}" --health-port=0 --metrics-port=0 -v=1
  if ! wait_for "kube-router's NetworkPolicy firewall" 60 iptables -S KUBE-ROUTER-FORWARD; then
    tail -n 20 "${node_dir}/logs/kube-router.log" >&2
    exit 1
  fi
}

# stop_network_policies stops kube-router and removes what it leaves, which it does not
# itself (v2.1.0's --cleanup-config removes none of its firewall, then flushes IPVS): its
# jumps in INPUT, FORWARD and OUTPUT, its chains and its ipsets, each by its own prefix.
stop_network_policies() {
  stop kube-router
  local iptables chain rule chains
  for iptables in iptables ip6tables; do
    command -v "${iptables}" >/dev/null 2>&1 || continue
    for chain in INPUT FORWARD OUTPUT; do
      "${iptables}" -t filter -S "${chain}" 2>/dev/null | { grep -- '--comment "kube-router netpol' || true; } | sed 's/^-A /-D /' |
        while read -r rule; do eval "${iptables} -t filter ${rule}" || true; done
    done
    chains=$("${iptables}" -t filter -S 2>/dev/null | awk '/^-N (KUBE-ROUTER-(INPUT|FORWARD|OUTPUT)|KUBE-POD-FW-|KUBE-NWPLCY-)/ {print $2}')
    for chain in ${chains}; do "${iptables}" -t filter -F "${chain}" || true; done
    for chain in ${chains}; do "${iptables}" -t filter -X "${chain}" || true; done
  done
  if command -v ipset >/dev/null 2>&1; then
    local set
    for set in $(ipset list -n 2>/dev/null | { grep -E '^(inet6:)?(KUBE-SRC-|KUBE-DST-|TMP-)' || true; }); do ipset destroy "${set}" || true; done
  fi
}

# pod_network_namespaces lists the network namespaces made for this node's pods: those
# with an address of POD_CIDR, and those containerd's CRI plugin recorded for its sandboxes
# (CNI took down their interfaces, but containerd stopped before it removed them).
pod_network_namespaces() {
  local prefix="${POD_CIDR%.*}." namespace
  for namespace in $(ip netns list 2>/dev/null | awk '/^cni-/ {print $1}'); do
    if ip netns exec "${namespace}" ip -4 -o addr show 2>/dev/null | grep " inet ${prefix//./\\.}" >/dev/null; then echo "${namespace}"; fi
  done
  if [ -d "${node_dir}/containerd/root" ]; then
    grep -rhoa 'cni-[0-9a-f]\{8\}-[0-9a-f]\{4\}-[0-9a-f]\{4\}-[0-9a-f]\{4\}-[0-9a-f]\{12\}' "${node_dir}/containerd/root" 2>/dev/null || true
  fi
}

no_tasks() { [ -z "$(ctr tasks ls -q 2>/dev/null)" ]; }

down() {
  # The kubelet stops the node's pods itself first, so that CNI takes down their networks;
  # cordoned first, so that no replacement of theirs lands on it meanwhile.
  if [ -f "${node_dir}/kubelet.pid" ] && [ -f "${kubeconfig}" ]; then
    kubectl cordon "${NODE_NAME}" >/dev/null 2>&1 || true
    kubectl delete pods --all-namespaces --field-selector "spec.nodeName=${NODE_NAME}" --grace-period 1 --wait=false >/dev/null 2>&1 || true
    wait_for "the node's containers stopped" 60 no_tasks || true
  fi
  stop_network_policies; stop kubelet; stop kube-proxy; stop clusterdns
  # What is left, containerd is told to end; then the shims of its tasks go with it.
  if [ -S "${socket}" ]; then
    local id
    for id in $(ctr tasks ls -q 2>/dev/null); do
      ctr tasks kill -s SIGKILL "${id}" >/dev/null 2>&1 || true
      ctr tasks delete --force "${id}" >/dev/null 2>&1 || true
    done
  fi
  stop containerd
  pkill -KILL -f "containerd-shim-runc-v2 .*-address ${socket}" 2>/dev/null || true
  local namespace
  for namespace in $(pod_network_namespaces | sort -u); do ip netns delete "${namespace}" 2>/dev/null || true; done
  # The kubelet's volumes and containerd's mounts outlive their processes.
  { grep -o " ${node_dir}/[^ ]*" /proc/mounts || true; } | sort -r | while read -r mount; do umount -l "${mount}" 2>/dev/null || true; done
  "${CONTROL_PLANE_DIR}/kube-proxy" --cleanup >/dev/null 2>&1 || true
  # The kubelet's own chains, which kube-proxy's cleanup leaves.
  iptables -D INPUT -j KUBE-FIREWALL 2>/dev/null || true
  iptables -D OUTPUT -j KUBE-FIREWALL 2>/dev/null || true
  local table chain
  for table in filter nat mangle; do
    for chain in KUBE-FIREWALL KUBE-KUBELET-CANARY KUBE-IPTABLES-HINT; do
      iptables -t "${table}" -F "${chain}" 2>/dev/null && iptables -t "${table}" -X "${chain}" 2>/dev/null || true
    done
  done
  ip link delete "cni-${NODE_NAME:0:11}" 2>/dev/null || true
  if [ -f "${kubeconfig}" ]; then kubectl delete node "${NODE_NAME}" --ignore-not-found --timeout 10s >/dev/null 2>&1 || true; fi
  rm -rf "${node_dir}"
  log "node ${NODE_NAME} stopped"
}

# import_images imports IMAGES into the running node's containerd: an image built again
# under the same name replaces the one there, and runs in the containers started after.
import_images() {
  [ -S "${socket}" ] || { log "no node runs at ${node_dir}: hack/real-node.sh up first"; exit 1; }
  [ -n "${IMAGES}" ] || { log "give IMAGES an archive of hack/buildimages to import"; exit 1; }
  ctr images import "${IMAGES}" >/dev/null
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  import) import_images ;;
  address) node_ip ;;
  logs) echo "${node_dir}/logs" ;;
  *) echo "usage: $0 up|down|import|address|logs" >&2; exit 2 ;;
esac
