#!/usr/bin/env bash
# Builds the Kubernetes control plane used by envtest, the e2e cluster and `make demo`,
# at pinned versions, into bin/k8s/<version>/. Binaries already present are reused.
#
# kube-apiserver & co. and etcd cannot be `go install`ed: their go.mod files carry replace
# directives. So each is built from a small throwaway module outside this project's go.mod:
# one that requires k8s.io/kubernetes and replaces every staging module with its published
# v0.N.M twin, and one that requires go.etcd.io/etcd/server/v3 (its main package is the root).
#
# Usage: hack/build-control-plane.sh [component...]
#   components: kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok kwokctl
#   metrics-server (default: all of them), and kubelet and kube-proxy, for a real node
#   (hack/real-node.sh), which only that builds
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-v1.37.0}"
ETCD_VERSION="${ETCD_VERSION:-v3.7.0}"
KWOK_VERSION="${KWOK_VERSION:-v0.8.0}"
METRICS_SERVER_VERSION="${METRICS_SERVER_VERSION:-v0.8.0}"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out_dir="${CONTROL_PLANE_DIR:-${repo_root}/bin/k8s/${KUBE_VERSION}}"
mkdir -p "${out_dir}"

log() { printf '[control-plane] %s\n' "$*" >&2; }

wanted=("$@")
[ ${#wanted[@]} -gt 0 ] || wanted=(kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok kwokctl metrics-server)

want() { local c; for c in "${wanted[@]}"; do [ "$c" = "$1" ] && return 0; done; return 1; }
missing() { [ ! -x "${out_dir}/$1" ]; }

scratch="$(mktemp -d)"
trap 'rm -rf "${scratch}"' EXIT

build_kubernetes() {
  local components=()
  for c in kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy; do
    if want "$c" && missing "$c"; then components+=("$c"); fi
  done
  [ ${#components[@]} -gt 0 ] || return 0
  log "building ${components[*]} ${KUBE_VERSION} (cold: several minutes on 2 cores)"

  local mod="${scratch}/kubernetes"
  mkdir -p "${mod}"
  local staging_version="v0.${KUBE_VERSION#v1.}"
  (
    cd "${mod}"
    go mod init control-plane-build >/dev/null 2>&1
    go mod edit -require="k8s.io/kubernetes@${KUBE_VERSION}"
    # k8s.io/kubernetes replaces its staging modules with local paths; mirror those
    # replaces with the published versions so the module graph resolves.
    local kube_mod
    kube_mod="$(go mod download -json "k8s.io/kubernetes@${KUBE_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')"
    local staging
    for staging in $(sed -n 's#^[[:space:]]*\(k8s.io/[^ ]*\) => ./staging/.*#\1#p' "${kube_mod}"); do
      go mod edit -replace="${staging}=${staging}@${staging_version}"
    done
    local pkgs=() c
    for c in "${components[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/${c}"); done
    # Blank imports make `go mod tidy` resolve exactly what these commands need.
    { echo "//go:build tools"; echo; echo "package tools"; echo; echo "import ("
      for p in "${pkgs[@]}"; do echo "	_ \"${p}\""; done; echo ")"; } > tools.go
    go mod tidy >/dev/null
    local minor="${KUBE_VERSION#v1.}"; minor="${minor%%.*}"
    local ldflags="-s -w"
    local pkg
    # Without these the binaries report v0.0.0 and clients' version checks get confused.
    for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      ldflags="${ldflags} -X ${pkg}.gitVersion=${KUBE_VERSION} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${minor}"
    done
    # One go build for all of them: they share most of their packages, and their links run
    # side by side.
    log "go build ${components[*]}"
    CGO_ENABLED=0 go build -trimpath -ldflags "${ldflags}" -o "${out_dir}/" "${pkgs[@]}"
  )
}

build_etcd() {
  want etcd && missing etcd || return 0
  log "building etcd ${ETCD_VERSION}"
  local mod="${scratch}/etcd"
  mkdir -p "${mod}"
  (
    cd "${mod}"
    go mod init etcd-build >/dev/null 2>&1
    go mod edit -require="go.etcd.io/etcd/server/v3@${ETCD_VERSION}"
    printf '//go:build tools\n\npackage tools\n\nimport _ "go.etcd.io/etcd/server/v3"\n' > tools.go
    go mod tidy >/dev/null
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "${out_dir}/etcd" go.etcd.io/etcd/server/v3
  )
}

build_kwok() {
  local c
  for c in kwok kwokctl; do
    want "$c" && missing "$c" || continue
    log "installing ${c} ${KWOK_VERSION}"
    GOBIN="${out_dir}" CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/${c}@${KWOK_VERSION}"
  done
}

# metrics-server serves kubectl top; kwokctl runs it as a process of the cluster
# (hack/local-cluster.sh with METRICS_SERVER=true). Its version is read from client-go's,
# as its own Makefile sets it.
build_metrics_server() {
  want metrics-server && missing metrics-server || return 0
  log "installing metrics-server ${METRICS_SERVER_VERSION}"
  GOBIN="${out_dir}" CGO_ENABLED=0 go install -trimpath \
    -ldflags "-s -w -X k8s.io/client-go/pkg/version.gitVersion=${METRICS_SERVER_VERSION}" \
    "sigs.k8s.io/metrics-server/cmd/metrics-server@${METRICS_SERVER_VERSION}"
}

build_etcd
build_kubernetes
build_kwok
build_metrics_server
log "ready in ${out_dir}"
