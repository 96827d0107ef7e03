#!/usr/bin/env bash
# Builds the Kubernetes control plane used by envtest, the e2e cluster and `make demo`,
# at pinned versions, into bin/k8s/<version>/. Binaries already present are reused.
#
# kube-apiserver & co. and etcd cannot be `go install`ed: their go.mod files carry replace
# directives. So each is built from a small throwaway module outside this project's go.mod:
# one that requires k8s.io/kubernetes, kwok and metrics-server and replaces every staging
# module with its published v0.N.M twin, and one that requires go.etcd.io/etcd/server/v3
# (its main package is the root). Both take the operator's go.mod as a floor for their
# modules' versions, so that the tests share their compiled packages (tidy_at_operator_floor).
#
# Usage: hack/build-control-plane.sh [component...]
#   components: kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok kwokctl
#   metrics-server (default: all of them), and kubelet and kube-proxy, for a real node
#   (hack/real-node.sh), and descheduler (spec.descheduling's, at DESCHEDULER_VERSION) and
#   kube-router (the real node's NetworkPolicy enforcement, at KUBE_ROUTER_VERSION), which
#   only those build
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-v1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-v3.7.0}"
KWOK_VERSION="${KWOK_VERSION:-v0.8.0}"
METRICS_SERVER_VERSION="${METRICS_SERVER_VERSION:-v0.9.0}"
# The descheduler the operator runs for spec.descheduling by default
# (internal/render's DefaultDeschedulerImage names the same release).
DESCHEDULER_VERSION="${DESCHEDULER_VERSION:-v0.36.0}"
# The network plugin's half that enforces NetworkPolicies on the real node (hack/real-node.sh
# runs its firewall alone, beside CNI's bridge), the only release the module proxy serves.
KUBE_ROUTER_VERSION="${KUBE_ROUTER_VERSION:-v2.1.0}"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out_dir="${CONTROL_PLANE_DIR:-${repo_root}/bin/k8s/${KUBE_VERSION}}"
mkdir -p "${out_dir}"
# One build at a time per directory: make test builds the control plane beside the job that
# generates the manifests, which needs kubectl. The second waits, then reuses what the
# first built, instead of compiling the same packages beside it and writing the same file.
exec 8>"${out_dir}/.build.lock"
flock 8

log() { printf '[control-plane] %s\n' "$*" >&2; }

wanted=("$@")
[ ${#wanted[@]} -gt 0 ] || wanted=(kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok kwokctl metrics-server)

want() { local c; for c in "${wanted[@]}"; do [ "$c" = "$1" ] && return 0; done; return 1; }
missing() { [ ! -x "${out_dir}/$1" ]; }

scratch="$(mktemp -d)"
trap 'rm -rf "${scratch}"' EXIT

# The Kubernetes commands, kwok, kwokctl and metrics-server are built in one module, so
# that each package of the Kubernetes libraries they share is compiled once, at the control
# plane's version: kwok and metrics-server pin older ones of their own, and built apart they
# compiled about 2,300 packages again (7 of a cold build's 20 minutes). The module always
# lists every command, whichever are missing, so that its versions are the same on every
# call. Against the Kubernetes commands built alone this moves one module the commands use
# (github.com/go-errors/errors, kubectl's, 1.4.2 to 1.5.1), and the operator's floor moves
# others to the newer versions the operator requires (x/net, gRPC, ...). kwok and
# metrics-server build against the control plane's libraries, which the e2e suite and the
# docs test run.
# metrics-server v0.8.0 cannot: its generated OpenAPI definitions predate the model names
# the 1.37 libraries look up, and it panics at start; v0.9.0 (built on 0.36) serves.
readonly module_commands=(kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy kwok kwokctl metrics-server)

package_of() {
  case "$1" in
    kwok | kwokctl) echo "sigs.k8s.io/kwok/cmd/$1" ;;
    metrics-server) echo "sigs.k8s.io/metrics-server/cmd/metrics-server" ;;
    *) echo "k8s.io/kubernetes/cmd/$1" ;;
  esac
}

# operator_requirements prints the operator's go.mod requirements, PATH VERSION a line:
# every module whose packages the operator's build and tests compile.
operator_requirements() {
  go -C "${repo_root}" run ./hack/gomodfloor -floor go.mod -list
}

# tidy_at_operator_floor PACKAGE... resolves the module in the current directory, that
# builds PACKAGE..., with the operator's go.mod as a floor for every module (hack/gomodfloor):
# the operator's Makefile builds with -trimpath, as this script does, so each package of a
# module that both select at one version (the Kubernetes libraries, x/net, gRPC, protobuf,
# ...) is compiled once, here, and the operator's tests reuse it from the build cache
# (about 1,200 of their 1,500 packages; etcd's x/net, gRPC & co. are the control plane's).
# A module the packages need at another version than go.mod's (always newer, by the floor)
# is named: raising it in go.mod shares its packages too.
tidy_at_operator_floor() {
  local output differing
  go -C "${repo_root}" run ./hack/gomodfloor -floor go.mod "${PWD}/go.mod"
  if ! output="$(go mod tidy 2>&1)"; then printf '%s\n' "${output}" >&2; return 1; fi
  differing="$(go list -deps -f '{{with .Module}}{{.Path}} {{with .Replace}}{{.Version}}{{else}}{{.Version}}{{end}}{{end}}' "$@" | sort -u |
    awk 'NR == FNR { want[$1] = $2; next } ($1 in want) && want[$1] != $2 { print "  " $1 " " $2 " (go.mod: " want[$1] ")" }' \
      <(operator_requirements) -)"
  if [ -n "${differing}" ]; then
    log "$* need other versions than the operator's go.mod of these modules, whose packages the tests then compile again (raise them in go.mod to share them):"
    printf '%s\n' "${differing}" >&2
  fi
}

build_control_plane_module() {
  local missing_commands=() c
  for c in "${module_commands[@]}"; do
    if want "$c" && missing "$c"; then missing_commands+=("$c"); fi
  done
  [ ${#missing_commands[@]} -gt 0 ] || return 0
  log "building ${missing_commands[*]} (Kubernetes ${KUBE_VERSION}, kwok ${KWOK_VERSION}, metrics-server ${METRICS_SERVER_VERSION}; cold: many minutes on 2 cores)"

  local mod="${scratch}/control-plane"
  mkdir -p "${mod}"
  local staging_version="v0.${KUBE_VERSION#v1.}"
  (
    cd "${mod}"
    go mod init control-plane-build >/dev/null 2>&1
    go mod edit -require="k8s.io/kubernetes@${KUBE_VERSION}" -require="sigs.k8s.io/kwok@${KWOK_VERSION}" \
      -require="sigs.k8s.io/metrics-server@${METRICS_SERVER_VERSION}"
    # k8s.io/kubernetes replaces its staging modules with local paths; mirror those
    # replaces with the published versions so the module graph resolves. A replace without
    # a version on its left also holds kwok's and metrics-server's requirements to them.
    local kube_mod
    kube_mod="$(go mod download -json "k8s.io/kubernetes@${KUBE_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')"
    local staging
    for staging in $(sed -n 's#^[[:space:]]*\(k8s.io/[^ ]*\) => ./staging/.*#\1#p' "${kube_mod}"); do
      go mod edit -replace="${staging}=${staging}@${staging_version}"
    done
    # Blank imports make `go mod tidy` resolve exactly what these commands need.
    { echo "//go:build tools"; echo; echo "package tools"; echo; echo "import ("
      for c in "${module_commands[@]}"; do echo "	_ \"$(package_of "$c")\""; done
      echo ")"; } > tools.go
    local packages=()
    for c in "${module_commands[@]}"; do packages+=("$(package_of "$c")"); done
    tidy_at_operator_floor "${packages[@]}"
    local minor="${KUBE_VERSION#v1.}"; minor="${minor%%.*}"
    local kube_ldflags="-s -w" pkg
    # Without these the binaries report v0.0.0 and clients' version checks get confused.
    for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      kube_ldflags="${kube_ldflags} -X ${pkg}.gitVersion=${KUBE_VERSION} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${minor}"
    done
    # One go build for all but metrics-server, whose version is read from client-go's (as
    # its own Makefile sets it): it links in a second build, from the packages the first
    # compiled.
    local pkgs=() server=false
    for c in "${missing_commands[@]}"; do
      if [ "$c" = metrics-server ]; then server=true; else pkgs+=("$(package_of "$c")"); fi
    done
    if [ ${#pkgs[@]} -gt 0 ]; then
      log "go build ${pkgs[*]}"
      CGO_ENABLED=0 go build -trimpath -ldflags "${kube_ldflags}" -o "${out_dir}/" "${pkgs[@]}"
    fi
    if [ "${server}" = true ]; then
      log "go build metrics-server"
      CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X k8s.io/client-go/pkg/version.gitVersion=${METRICS_SERVER_VERSION}" \
        -o "${out_dir}/metrics-server" "$(package_of metrics-server)"
    fi
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
    tidy_at_operator_floor go.etcd.io/etcd/server/v3
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "${out_dir}/etcd" go.etcd.io/etcd/server/v3
  )
}

# build_descheduler builds sigs.k8s.io/descheduler in a module of its own, as etcd. `go
# install ...@VERSION` refuses it: its go.mod replaces k8s.io/kube-openapi, because
# kubevirt.io/client-go, which it requires, asks for a kube-openapi v0.31.0 that the module
# proxy does not serve. The module here replaces it the same way, with the version the
# operator's go.mod selects, and builds against the operator's Kubernetes libraries (the
# floor), which the control plane's commands share.
build_descheduler() {
  want descheduler && missing descheduler || return 0
  log "building descheduler ${DESCHEDULER_VERSION}"
  local mod="${scratch}/descheduler"
  mkdir -p "${mod}"
  (
    cd "${mod}"
    go mod init descheduler-build >/dev/null 2>&1
    go mod edit -require="sigs.k8s.io/descheduler@${DESCHEDULER_VERSION}"
    local openapi
    openapi="$(operator_requirements | awk '$1 == "k8s.io/kube-openapi" { print $2 }')"
    go mod edit -replace="k8s.io/kube-openapi=k8s.io/kube-openapi@${openapi}"
    printf '//go:build tools\n\npackage tools\n\nimport _ "sigs.k8s.io/descheduler/cmd/descheduler"\n' > tools.go
    tidy_at_operator_floor sigs.k8s.io/descheduler/cmd/descheduler
    # Its Makefile's version stamp, vDATE-VERSION, without which it reports no version and
    # warns that it cannot compare its minor with the cluster's; DATE is the release's.
    local released stamp
    released="$(go list -m -f '{{.Time.Format "20060102"}}' "sigs.k8s.io/descheduler@${DESCHEDULER_VERSION}")"
    stamp="v${released}-${DESCHEDULER_VERSION}"
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X sigs.k8s.io/descheduler/pkg/version.version=${stamp}" \
      -o "${out_dir}/descheduler" sigs.k8s.io/descheduler/cmd/descheduler
  )
}

# build_kube_router installs kube-router as its own go.mod pins it (no replace directive):
# a test tool, which shares no package with the tests.
build_kube_router() {
  want kube-router && missing kube-router || return 0
  log "building kube-router ${KUBE_ROUTER_VERSION}"
  GOBIN="${out_dir}" CGO_ENABLED=0 go install -trimpath \
    -ldflags "-s -w -X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=${KUBE_ROUTER_VERSION}" \
    "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router@${KUBE_ROUTER_VERSION}"
}

build_etcd
build_descheduler
build_kube_router
build_control_plane_module
log "ready in ${out_dir}"
