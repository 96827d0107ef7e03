#!/usr/bin/env bash
# Builds the kube-scheduler of kubernetes-sigs/scheduler-plugins (cmd/scheduler: the in-tree
# plugins plus Trimaran, Coscheduling, NodeResourceTopology, ...) into
# bin/scheduler-plugins/kube-scheduler, and its controller (cmd/controller: keeps PodGroup and
# ElasticQuota status) into bin/scheduler-plugins/controller, from the same checkout, for
# `make test-e2e` (the Trimaran, gang and quota specs) and `make demo`. Binaries whose
# bin/scheduler-plugins/VERSION matches the pins below are reused.
#
# It builds from local checkouts rather than `go install`: cmd/scheduler's go.mod carries
# replace directives (so `go install ...@version` refuses it), and some Go module proxies do
# not serve sigs.k8s.io/scheduler-plugins, github.com/paypal/load-watcher, the
# github.com/k8stopologyawareschedwg/numaplacement v0.1.0 it requires, nor k8s.io/kubernetes
# v1.35.7. So the scheduler-plugins tree is copied into a scratch directory (the checkouts are
# never written to), load-watcher and numaplacement are replaced by their checkouts, and
# k8s.io/kubernetes by KUBERNETES_VERSION; everything else comes from the module proxy.
#
# Usage: SCHEDULER_PLUGINS_SRC=dir LOAD_WATCHER_SRC=dir NUMAPLACEMENT_SRC=dir hack/build-scheduler-plugins.sh
#   (or `make scheduler-plugins` with the same variables). SCHEDULER_PLUGINS_BIN_DIR overrides
#   the output directory (default bin/scheduler-plugins). Delete it to force a rebuild.
set -euo pipefail

# The pins. scheduler-plugins main as of its "Add NodeMetadata scoring plugin (#942)", whose
# go.mod requires k8s.io/* v0.35.7 and k8s.io/kubernetes v1.35.7; the load-watcher it requires;
# for the numaplacement v0.1.0 it requires, numaplacement's main (the pin names a commit, which
# a checkout can be compared with).
SCHEDULER_PLUGINS_COMMIT=903da7df82cb8794dda8f2d510ba1156111662dd
LOAD_WATCHER_TAG=v0.2.4
LOAD_WATCHER_COMMIT=500faeafcdc44d2bcd5a25094e62f71e0ef10a8b
NUMAPLACEMENT_COMMIT=05c4e9728963f568796cf9b27483f4a4ead262fe
# k8s.io/kubernetes (the scheduler's core: framework, in-tree plugins, cmd/kube-scheduler/app)
# in place of the v1.35.7 the tree asks for, which the module proxy may not serve; a patch
# release of the same minor, so the plugins' code compiles against it unchanged. The staging
# modules stay at the tree's v0.35.7 where the proxy serves them: the plugins get the libraries
# they were written against, and k8s.io/kubernetes v1.35.4 builds with them.
KUBERNETES_VERSION=v1.35.4
# A staging module (k8s.io/api, k8s.io/sample-apiserver, ...) the proxy does not serve at the
# tree's version (v0.35.7) is replaced by its twin of KUBERNETES_VERSION.
STAGING_FALLBACK_VERSION="v0.${KUBERNETES_VERSION#v1.}"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out_dir="${SCHEDULER_PLUGINS_BIN_DIR:-${repo_root}/bin/scheduler-plugins}"
binary="${out_dir}/kube-scheduler"
controller="${out_dir}/controller"
version_file="${out_dir}/VERSION"

log() { printf '[scheduler-plugins] %s\n' "$*" >&2; }
warn() { printf '[scheduler-plugins] WARNING: %s\n' "$*" >&2; }

# The lines of VERSION that identify the sources; the binary is reused while they equal these.
pinned_record() {
  printf 'scheduler-plugins %s\n' "${SCHEDULER_PLUGINS_COMMIT}"
  printf 'load-watcher %s %s\n' "${LOAD_WATCHER_TAG}" "${LOAD_WATCHER_COMMIT}"
  printf 'numaplacement %s\n' "${NUMAPLACEMENT_COMMIT}"
  printf 'k8s.io/kubernetes %s\n' "${KUBERNETES_VERSION}"
}
recorded_sources() { grep -E '^(scheduler-plugins|load-watcher|numaplacement|k8s.io/kubernetes) ' "$1"; }

# The CRD manifests of the checkout (every manifests/**/crd.yaml), kept beside the binary at
# their paths in it: the tests install a plugin's CRDs from the checkout the binary was built
# from, at the paths internal/schedconfig's table of plugins names.
manifests_dir="${out_dir}/manifests"
binary_current() {
  [ -x "${binary}" ] && [ -x "${controller}" ] && [ -f "${version_file}" ] &&
    [ "$(recorded_sources "${version_file}" || true)" = "$(pinned_record)" ]
}

# Checked before the sources, so that `make scheduler-plugins` is a no-op once built, even
# without the checkouts at hand.
if binary_current && [ -d "${manifests_dir}" ]; then
  log "reusing ${binary} (built from the pinned sources; delete ${out_dir} to rebuild)"
  exit 0
fi
if [ -x "${binary}" ]; then
  log "${binary} was not built from the pinned sources (see ${version_file}); rebuilding it"
fi

# --- The sources -------------------------------------------------------------------------

usage_sources() {
  cat >&2 <<EOF

This builds kube-scheduler of kubernetes-sigs/scheduler-plugins from local checkouts of three
repositories (the Go module proxy may not serve them). Get them at the pinned versions with:

  git clone https://github.com/kubernetes-sigs/scheduler-plugins
  git -C scheduler-plugins checkout ${SCHEDULER_PLUGINS_COMMIT}
  git clone https://github.com/paypal/load-watcher
  git -C load-watcher checkout ${LOAD_WATCHER_TAG}
  git clone https://github.com/k8stopologyawareschedwg/numaplacement
  git -C numaplacement checkout ${NUMAPLACEMENT_COMMIT}

then pass their directories:

  make scheduler-plugins SCHEDULER_PLUGINS_SRC=\$PWD/scheduler-plugins \\
    LOAD_WATCHER_SRC=\$PWD/load-watcher NUMAPLACEMENT_SRC=\$PWD/numaplacement
EOF
}

missing_sources=()
for var in SCHEDULER_PLUGINS_SRC LOAD_WATCHER_SRC NUMAPLACEMENT_SRC; do
  if [ -z "${!var:-}" ]; then
    missing_sources+=("${var} is not set")
  elif [ ! -d "${!var}" ]; then
    missing_sources+=("${var}=${!var} is not a directory")
  fi
done
if [ ${#missing_sources[@]} -gt 0 ]; then
  for m in "${missing_sources[@]}"; do log "error: ${m}"; done
  usage_sources
  exit 1
fi

# go.mod replaces need absolute paths, and the scratch module lives elsewhere.
sp_src="$(cd "${SCHEDULER_PLUGINS_SRC}" && pwd -P)"
lw_src="$(cd "${LOAD_WATCHER_SRC}" && pwd -P)"
np_src="$(cd "${NUMAPLACEMENT_SRC}" && pwd -P)"

# Fails when dir's go.mod is not the module expected: a wrong directory would otherwise give
# a confusing error deep in the build.
check_module() {
  local var="$1" dir="$2" want="$3" got=""
  [ -f "${dir}/go.mod" ] && got="$(sed -n 's/^module[[:space:]]\{1,\}\([^[:space:]]*\).*/\1/p' "${dir}/go.mod")"
  if [ "${got}" != "${want}" ]; then
    log "error: ${var}=${dir} holds module '${got:-none}', not ${want}"
    usage_sources
    exit 1
  fi
}
check_module SCHEDULER_PLUGINS_SRC "${sp_src}" sigs.k8s.io/scheduler-plugins
check_module LOAD_WATCHER_SRC "${lw_src}" github.com/paypal/load-watcher
check_module NUMAPLACEMENT_SRC "${np_src}" github.com/k8stopologyawareschedwg/numaplacement

# Prints the commit checked out in dir ("-dirty" appended when tracked files are modified), or
# "unverified" when dir is not the top of a git work tree (e.g. an unpacked archive).
source_commit() {
  local dir="$1" top commit
  if ! command -v git >/dev/null 2>&1 ||
    ! top="$(git -C "${dir}" rev-parse --show-toplevel 2>/dev/null)" ||
    [ "$(cd "${top}" && pwd -P)" != "${dir}" ]; then
    echo unverified
    return
  fi
  commit="$(git -C "${dir}" rev-parse HEAD)"
  if [ -n "$(git -C "${dir}" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    commit="${commit}-dirty"
  fi
  echo "${commit}"
}

# A source at another commit than its pin is built anyway (one may try a newer one on
# purpose), with a warning; VERSION records what was used, so such a binary is never reused
# as the pinned one.
check_pin() {
  local name="$1" dir="$2" pin="$3" got="$4"
  if [ "${got}" = unverified ]; then
    warn "${name}: ${dir} is not a git checkout, cannot check it is ${pin}; the binary will be rebuilt next time"
  elif [ "${got}" != "${pin}" ]; then
    warn "${name}: ${dir} is at ${got}, not the pinned ${pin}; building it anyway and recording ${got}"
  fi
}
sp_commit="$(source_commit "${sp_src}")"
lw_commit="$(source_commit "${lw_src}")"
np_commit="$(source_commit "${np_src}")"
check_pin scheduler-plugins "${sp_src}" "${SCHEDULER_PLUGINS_COMMIT}" "${sp_commit}"
check_pin load-watcher "${lw_src}" "${LOAD_WATCHER_COMMIT}" "${lw_commit}"
check_pin numaplacement "${np_src}" "${NUMAPLACEMENT_COMMIT}" "${np_commit}"
keep_crds() {
  rm -rf "${manifests_dir}.new"
  mkdir -p "${manifests_dir}.new"
  (cd "${sp_src}" && find manifests -name crd.yaml -type f -print0 | tar --null -T - -cf -) |
    tar -C "${manifests_dir}.new" --strip-components=1 -xf -
  rm -rf "${manifests_dir}"
  mv "${manifests_dir}.new" "${manifests_dir}"
}
# A binary of the pins from before the CRDs were kept: keep them, without rebuilding.
if binary_current && [ "${sp_commit}" = "${SCHEDULER_PLUGINS_COMMIT}" ]; then
  keep_crds
  log "reusing ${binary}; kept the CRD manifests of ${sp_src} beside it"
  exit 0
fi
lw_ref="${LOAD_WATCHER_TAG}"
if [ "${lw_commit}" != "${LOAD_WATCHER_COMMIT}" ]; then
  lw_ref="$(git -C "${lw_src}" describe --tags --always 2>/dev/null || echo unverified)"
fi

# --- The scratch module ------------------------------------------------------------------

scratch="$(mktemp -d)"
trap 'rm -rf "${scratch}"' EXIT
mod="${scratch}/scheduler-plugins"
mkdir -p "${mod}" "${scratch}/empty"
# A go.work above the sources or the scratch directory must not take part.
export GOWORK=off

log "copying ${sp_src} (without .git) into a scratch module"
tar -C "${sp_src}" --exclude=./.git -cf - . | tar -C "${mod}" -xf -

# The staging version the tree builds with: that of its k8s.io/api replace (or requirement).
tree_staging="$(sed -n 's#^[[:space:]]*\(replace[[:space:]]\{1,\}\)\{0,1\}k8s.io/api[[:space:]]\{1,\}=>[[:space:]]\{1,\}k8s.io/api[[:space:]]\{1,\}\(v0\.[^[:space:]]*\).*#\2#p' "${mod}/go.mod" | head -n1)"
[ -n "${tree_staging}" ] || tree_staging="$(sed -n 's#^[[:space:]]*k8s.io/api[[:space:]]\{1,\}\(v0\.[^[:space:]]*\).*#\1#p' "${mod}/go.mod" | head -n1)"
[ -n "${tree_staging}" ] || { log "error: no k8s.io/api version in ${sp_src}/go.mod"; exit 1; }

# The staging modules the tree replaces with their published version tree_staging.
staging_modules=()
while IFS= read -r m; do staging_modules+=("${m}"); done < <(
  sed -n "s#^[[:space:]]*\(replace[[:space:]]\{1,\}\)\{0,1\}\(k8s.io/[^[:space:]]*\)[[:space:]]\{1,\}=>[[:space:]]\{1,\}\2[[:space:]]\{1,\}${tree_staging//./\\.}[[:space:]]*\$#\2#p" "${mod}/go.mod")

# Which versions of them the proxy lists, one line per module: one `go list` for all, outside
# any module so that the tree's graph, not resolvable yet, is not loaded.
listing="$(cd "${scratch}/empty" && go list -m -e -versions "${staging_modules[@]}")" || listing=""
listed() { printf '%s\n' "${listing}" | awk -v m="$1" '$1 == m { $1 = ""; print $0 " " }'; }

replaces=(
  "-replace=github.com/paypal/load-watcher=${lw_src}"
  "-replace=github.com/k8stopologyawareschedwg/numaplacement=${np_src}"
  "-replace=k8s.io/kubernetes=k8s.io/kubernetes@${KUBERNETES_VERSION}"
)
fallbacks=()
unserved=()
for m in "${staging_modules[@]}"; do
  case "$(listed "${m}")" in
    *" ${tree_staging} "*) ;;
    *" ${STAGING_FALLBACK_VERSION} "*)
      replaces+=("-replace=${m}=${m}@${STAGING_FALLBACK_VERSION}")
      fallbacks+=("${m}")
      ;;
    # Harmless when the module is not in the module graph (the sample-* ones are not); when
    # it is, `go mod tidy` below fails naming it.
    *) unserved+=("${m}") ;;
  esac
done
log "replacing load-watcher and numaplacement by the checkouts, k8s.io/kubernetes by ${KUBERNETES_VERSION}"
[ ${#fallbacks[@]} -eq 0 ] ||
  log "not served at ${tree_staging}, so at ${STAGING_FALLBACK_VERSION}: ${fallbacks[*]}"
[ ${#unserved[@]} -eq 0 ] ||
  log "served at neither, left as they are (not needed unless go mod tidy says so): ${unserved[*]}"

# gitVersion is the Kubernetes release of the scheduler's core, KUBERNETES_VERSION, with the
# scheduler-plugins commit as build metadata. Not scheduler-plugins' own release number
# (its Makefile sets v0.35.x): kube-scheduler derives its binary version from gitVersion
# since 1.31, and with 0.35 it refuses to start ("emulation version 0.35 is not between
# [1.31, 0.35.0]"). Without -X it reports v0.0.0-master+$Format:%H$, which runs (the version
# falls back to 1.35) but says nothing about what was built.
minor="${KUBERNETES_VERSION#v1.}"
minor="${minor%%.*}"
git_version="${KUBERNETES_VERSION}"
tree_state=clean
case "${sp_commit}" in
  unverified) ;;
  *-dirty) git_version="${git_version}+scheduler-plugins.${sp_commit:0:12}.dirty"; tree_state=dirty ;;
  *) git_version="${git_version}+scheduler-plugins.${sp_commit:0:12}" ;;
esac
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags="${ldflags} -X ${pkg}.gitVersion=${git_version} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${minor}"
  [ "${sp_commit}" = unverified ] ||
    ldflags="${ldflags} -X ${pkg}.gitCommit=${sp_commit%-dirty} -X ${pkg}.gitTreeState=${tree_state}"
done

log "building kube-scheduler and the controller ${git_version} (cold: about 11 minutes on 2 cores)"
start="${SECONDS}"
(
  cd "${mod}"
  go mod edit "${replaces[@]}"
  # Resolves the changed graph and records the checksums of the replacements in go.sum.
  go mod tidy
  CGO_ENABLED=0 go build -trimpath -ldflags "${ldflags}" -o "${scratch}/kube-scheduler" ./cmd/scheduler
  # Shares nearly every package with the scheduler, so it adds about a minute.
  CGO_ENABLED=0 go build -trimpath -ldflags "${ldflags}" -o "${scratch}/controller" ./cmd/controller
)

mkdir -p "${out_dir}"
# VERSION goes last, so that an interrupted run never leaves a binary that looks reusable.
rm -f "${version_file}"
mv "${scratch}/kube-scheduler" "${binary}"
mv "${scratch}/controller" "${controller}"
keep_crds
{
  echo "# kube-scheduler and controller of kubernetes-sigs/scheduler-plugins, built by hack/build-scheduler-plugins.sh."
  echo "# They are reused while the next four lines equal the script's pins."
  printf 'scheduler-plugins %s\n' "${sp_commit}"
  printf 'load-watcher %s %s\n' "${lw_ref}" "${lw_commit}"
  printf 'numaplacement %s\n' "${np_commit}"
  printf 'k8s.io/kubernetes %s\n' "${KUBERNETES_VERSION}"
  printf 'k8s.io/* staging %s' "${tree_staging}"
  [ ${#fallbacks[@]} -eq 0 ] || printf ', at %s: %s' "${STAGING_FALLBACK_VERSION}" "${fallbacks[*]}"
  echo
  printf 'gitVersion %s\n' "${git_version}"
  printf 'go %s\n' "$(go env GOVERSION)"
} >"${version_file}"
log "built ${binary} in $((SECONDS - start))s"
