#!/usr/bin/env bash
# Run before a page's `kubectl top pods` (<!-- test: before: ... -->): waits until
# metrics-server has the use of each pod of NAMESPACE matching SELECTOR. It has it two
# scrapes (of 15 s each) after a process starts, since CPU use is a rate, and the cluster's
# metrics-server a little after it starts; a reader who runs kubectl top sooner is told
# "metrics not available yet". The docs test's local cluster only.
#
# Usage: test/docs/standins/wait-pod-metrics.sh NAMESPACE SELECTOR
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 NAMESPACE SELECTOR" >&2; exit 2; }
namespace=$1 selector=$2
pods=$(kubectl -n "${namespace}" get pods -l "${selector}" -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort)
[ -n "${pods}" ] || { echo "no pod in ${namespace} matches ${selector}" >&2; exit 1; }
# Until metrics-server has started, the metrics API answers ServiceUnavailable.
measured="" answer=""
for attempt in $(seq 120); do
  if answer=$(kubectl get --raw "/apis/metrics.k8s.io/v1beta1/namespaces/${namespace}/pods" 2>&1); then
    measured=$(jq -r '.items[].metadata.name' <<<"${answer}" | sort)
    [ -z "$(comm -23 <(echo "${pods}") <(echo "${measured}"))" ] && exit 0
  fi
  sleep 1
done
echo "metrics-server has no use of pods ${pods//$'\n'/ } in ${namespace} after 120 s; it has: ${measured//$'\n'/ } (last answer: ${answer})" >&2
exit 1
