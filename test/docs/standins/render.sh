#!/usr/bin/env bash
# Runs in place of docs/migration.md's docker step (<!-- test: instead: ... -->), in the
# page's working directory: the same render, by the binary the operator's image runs
# (bin/kubectl-secondary_scheduler, built from the checkout by the test's cluster), instead
# of docker run.
set -euo pipefail
KUBE_VERSION=$(kubectl version -o json | jq -r '.serverVersion.major + "." + (.serverVersion.minor | sub("[^0-9]+$"; ""))')
"${DOCS_CHECKOUT}/bin/kubectl-secondary_scheduler" render -f secondaryscheduler.json -f scheduler-config.json \
  --kubernetes-version "$KUBE_VERSION" --scheduler-namespaces platform > rendered.yaml
