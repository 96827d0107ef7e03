#!/usr/bin/env bash
# make test runs its suites in phases through this script: each argument is a job of make
# targets, run in order, and the jobs run at the same time, each line of their output
# prefixed with the job's name (its first target). It waits for every job, then fails
# naming those that failed, so that one failing suite neither hides another's result nor
# leaves its processes behind.
#
# Suites run at the same time when they share nothing: envtest's API servers and the e2e
# suite's clusters listen on ports of their own, and only one suite at a time runs a real
# node (kube-proxy's rules are the machine's). The suites mostly wait on their clusters, so
# running them side by side uses the second core that one alone leaves idle.
#
# Usage: hack/make-parallel.sh '[nice:] TARGET [TARGET...]' ...
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

pids=()
names=()
for job in "$@"; do
  read -r -a targets <<<"${job}"
  # A job that starts with nice: runs at the lowest CPU priority (nice 19, a weight of 15
  # against a suite's 1024): what no test's deadline depends on (lint, say) then takes
  # mostly the cycles the suites leave idle.
  priority=()
  if [ "${targets[0]}" = nice: ]; then
    priority=(nice -n 19)
    targets=("${targets[@]:1}")
  fi
  name="${targets[0]}"
  (
    set +e
    "${priority[@]}" make --no-print-directory "${targets[@]}" 2>&1 | while IFS= read -r line; do printf '[%s] %s\n' "${name}" "${line}"; done
    exit "${PIPESTATUS[0]}"
  ) &
  pids+=("$!")
  names+=("${name}")
done

failed=()
for i in "${!pids[@]}"; do
  if ! wait "${pids[$i]}"; then
    failed+=("${names[$i]}")
  fi
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "failed: ${failed[*]}" >&2
  exit 1
fi
