#!/usr/bin/env bash
# Run before a page's `kubectl logs --previous` (<!-- test: before: ... -->), which needs a
# container that exited: crashes the process of each pod of NAMESPACE matching SELECTOR
# once, as a fault would (SIGKILL: on the real node to the container's task, through the
# node's containerd; on podrunner's node to the pid podrunner keeps for the pod), then
# waits until each pod has restarted and is ready again. The docs test's local cluster only.
#
# Usage: test/docs/standins/crash-once.sh NAMESPACE SELECTOR
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 NAMESPACE SELECTOR" >&2; exit 2; }
namespace=$1 selector=$2
pods_dir=_output/secondary-scheduler/podrunner/pods
containerd_socket=_output/secondary-scheduler/node/containerd/containerd.sock
pods=$(kubectl -n "${namespace}" get pods -l "${selector}" -o jsonpath='{range .items[*]}{.metadata.name}_{.metadata.uid}_{.status.containerStatuses[0].containerID}{"\n"}{end}')
[ -n "${pods}" ] || { echo "no pod in ${namespace} matches ${selector}" >&2; exit 1; }
for pod in ${pods}; do
  IFS=_ read -r name uid container <<<"${pod}"
  case "${container}" in
    containerd://*) ctr --address "${containerd_socket}" --namespace k8s.io tasks kill --signal SIGKILL "${container#containerd://}" ;;
    podrunner://*) kill -KILL "$(cat "${pods_dir}/${namespace}_${name}_${uid:0:8}/pid")" ;;
    *) echo "pod ${namespace}/${name} has no running container to crash (its container ID: '${container}')" >&2; exit 1 ;;
  esac
done
for pod in ${pods}; do
  name=${pod%%_*}
  for attempt in $(seq 120); do
    state=$(kubectl -n "${namespace}" get pod "${name}" -o jsonpath='{.status.containerStatuses[0].restartCount} {.status.containerStatuses[0].ready}')
    [ "${state}" != "0 true" ] && [ "${state##* }" = true ] && break
    sleep 1
  done
  [ "${state##* }" = true ] && [ "${state%% *}" -ge 1 ] || { echo "pod ${namespace}/${name} did not restart and become ready: ${state}" >&2; exit 1; }
done
