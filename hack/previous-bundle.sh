#!/usr/bin/env bash
# Keeps the bundle of a release as the fixture of the upgrade e2e spec
# (test/e2e/testdata/previous-bundle), with the commit it was built from, which the spec
# builds the previous operator from. Run it when a release replaces the previous one.
#
# Usage: hack/previous-bundle.sh COMMIT VERSION   (VERSION without a leading v)
set -euo pipefail

commit="${1:?usage: $0 COMMIT VERSION}"
version="${2:?usage: $0 COMMIT VERSION}"
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
fixture="${repo_root}/test/e2e/testdata"
commit="$(git -C "${repo_root}" rev-parse --verify "${commit}^{commit}")"

source_dir="$(mktemp -d)"
trap 'rm -rf "${source_dir}"' EXIT
git -C "${repo_root}" archive "${commit}" | tar -x -C "${source_dir}"
# The release's own generator, on the release's own config/.
(cd "${source_dir}" && go run ./hack/bundlegen -root . -version "${version}" \
  -image "ghcr.io/secondary-scheduler/secondary-scheduler-operator:v${version}")

rm -rf "${fixture}/previous-bundle"
cp -r "${source_dir}/bundle" "${fixture}/previous-bundle"
echo "${commit}" > "${fixture}/previous-bundle.commit"
echo "previous bundle: v${version} from ${commit}"
