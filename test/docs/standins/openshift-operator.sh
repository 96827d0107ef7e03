#!/usr/bin/env bash
# Sourced before docs/migration.md's commands (<!-- test: before: ... -->): what OpenShift's
# secondary-scheduler-operator leaves on a cluster, played on the docs test's bare cluster,
# where this operator is already installed and allows platform (getting-started.md ran
# there): its CRD (operator.openshift.io/v1 SecondaryScheduler, with an open schema), the
# resource and ConfigMap of migration.md's worked example ("The OpenShift form", taken
# from the page), OLM's Subscription and CSV that installed it (their CRDs, with open
# schemas: OLM does not run here), its scheduler (a Deployment of pause pods labelled
# app=secondary-scheduler and owned by the resource, as OpenShift's are) and the
# ClusterRoleBindings it gives that scheduler, with the owner reference to the namespaced
# resource that Kubernetes' garbage collector does not follow. Then it changes to an empty
# working directory, as the page asks (_output/docs/migration-workdir, kept for a look at
# the files the page makes), leaving the checkout in DOCS_CHECKOUT.
set -euo pipefail

namespace=openshift-secondary-scheduler-operator
csv=secondary-scheduler-operator.v1.4.1

open_crd() { # GROUP KIND PLURAL VERSION
  cat <<CRD
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: $3.$1
spec:
  group: $1
  names: {kind: $2, listKind: $2List, plural: $3, singular: $(tr '[:upper:]' '[:lower:]' <<<"$2")}
  scope: Namespaced
  versions:
  - name: $4
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
---
CRD
}
{
  open_crd operator.openshift.io SecondaryScheduler secondaryschedulers v1
  open_crd operators.coreos.com Subscription subscriptions v1alpha1
  open_crd operators.coreos.com ClusterServiceVersion clusterserviceversions v1alpha1
} | kubectl apply -f - >/dev/null
kubectl wait --for=condition=Established --timeout=60s \
  crd/secondaryschedulers.operator.openshift.io crd/subscriptions.operators.coreos.com crd/clusterserviceversions.operators.coreos.com >/dev/null
kubectl create namespace "${namespace}" --dry-run=client -o yaml | kubectl apply -f - >/dev/null

# The page's own objects, as OpenShift's users wrote them.
awk '/^### The OpenShift form/ {page = 1} /^### The same, migrated/ {page = 0}
     page && /^```yaml/ {block = 1; print "---"; next} page && /^```/ {block = 0; next} block' docs/migration.md |
  kubectl apply -f - >/dev/null

kubectl apply -f - >/dev/null <<OLM
apiVersion: operators.coreos.com/v1alpha1
kind: Subscription
metadata:
  name: openshift-secondary-scheduler-operator
  namespace: ${namespace}
spec:
  channel: stable
  name: openshift-secondary-scheduler-operator
  source: redhat-operators
  sourceNamespace: openshift-marketplace
status:
  installedCSV: ${csv}
---
apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: ${csv}
  namespace: ${namespace}
spec:
  displayName: Secondary Scheduler Operator for Red Hat OpenShift
  version: 1.4.1
OLM

uid=$(kubectl -n "${namespace}" get secondaryschedulers.operator.openshift.io cluster -o jsonpath='{.metadata.uid}')
owner="ownerReferences: [{apiVersion: operator.openshift.io/v1, kind: SecondaryScheduler, name: cluster, uid: ${uid}}]"
kubectl apply -f - >/dev/null <<SCHEDULER
apiVersion: apps/v1
kind: Deployment
metadata:
  name: secondary-scheduler
  namespace: ${namespace}
  ${owner}
spec:
  replicas: 1
  selector:
    matchLabels: {app: secondary-scheduler}
  template:
    metadata:
      labels: {app: secondary-scheduler}
    spec:
      containers:
      - name: secondary-scheduler
        image: registry.k8s.io/pause:3.10
SCHEDULER
for role in kube-scheduler volume-scheduler; do
  kubectl apply -f - >/dev/null <<BINDING
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: secondary-scheduler-system-${role}
  ${owner}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:${role}"}
subjects: [{kind: ServiceAccount, name: secondary-scheduler, namespace: ${namespace}}]
BINDING
done
kubectl -n "${namespace}" rollout status deployment/secondary-scheduler --timeout=2m >/dev/null

DOCS_CHECKOUT=$PWD
export DOCS_CHECKOUT
rm -rf _output/docs/migration-workdir
mkdir -p _output/docs/migration-workdir
cd _output/docs/migration-workdir
