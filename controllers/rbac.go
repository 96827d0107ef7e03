package controllers

// Every permission the operator holds cluster-wide, in one place; `make manifests` turns
// these markers into config/rbac/role.yaml. docs/security.md justifies each one, and a test
// compares the generated RBAC with an explicit allow-list, so that a new permission is a
// conscious change.
//
// What the operator writes in the namespaces where it runs schedulers (Deployments,
// ConfigMaps, Secrets, ServiceAccounts, Roles, RoleBindings, Leases, PodDisruptionBudgets,
// NetworkPolicies, tokens) is not here:
// config/rbac/scheduler_namespace_role.yaml grants it, bound by a RoleBinding in each
// namespace the cluster admin allows (the operator's own by default). The RoleBinding that
// lets schedulers read the authentication ConfigMap is written in kube-system, which
// config/rbac/kube_system_role.yaml allows. Secrets are never read cluster-wide.

// The resources themselves, in every namespace: a SecondaryScheduler outside the allowed
// namespaces is still read and told, in status, why nothing runs.
// +kubebuilder:rbac:groups=operator.secondary-scheduler.io,resources=secondaryschedulers,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=operator.secondary-scheduler.io,resources=secondaryschedulers/status,verbs=patch
// +kubebuilder:rbac:groups=operator.secondary-scheduler.io,resources=secondaryschedulers/finalizers,verbs=update
// The admission policy lets only holders of update on secondaryschedulers/run remove the
// operator's finalizer (it would otherwise orphan cluster-wide bindings), and the operator
// removes it once it has cleaned up. It gives nothing more: the operator cannot create a
// SecondaryScheduler, and a change of spec is checked against the images and references
// as for anyone.
// +kubebuilder:rbac:groups=operator.secondary-scheduler.io,resources=secondaryschedulers/run,verbs=update
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// A scheduler's ServiceAccount is bound cluster-wide to the scheduler roles. Creating a
// ClusterRoleBinding is bounded by the bind verb below: the operator can bind only these
// roles, which it does not itself hold. It creates and edits no ClusterRole. It deletes
// bindings one by one, each proven its own first (no deletecollection: a delete by label
// would take whatever carries the labels).
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterrolebindings,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=bind,resourceNames=system:kube-scheduler;system:volume-scheduler
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=bind,resourceNames=secondary-scheduler-metrics-reader;cluster-monitoring-view
// The roles of the scheduler-plugins plugins that read more than system:kube-scheduler
// grants (config/rbac/scheduler_plugin_roles.yaml, from internal/schedconfig/pluginneeds.go),
// bound while a scheduler's configuration enables the plugin.
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=bind,resourceNames=secondary-scheduler-plugin-capacityscheduling;secondary-scheduler-plugin-coscheduling
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=bind,resourceNames=secondary-scheduler-plugin-networkoverhead;secondary-scheduler-plugin-noderesourcetopologymatch
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=bind,resourceNames=secondary-scheduler-plugin-preemptiontoleration;secondary-scheduler-plugin-sysched
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=bind,resourceNames=secondary-scheduler-plugin-topologicalsort

// The role of a descheduler (spec.descheduling), config/rbac/descheduler_roles.yaml: bound to
// its ServiceAccount while the resource asks for one.
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=bind,resourceNames=secondary-scheduler-descheduler

// Placement: the nodes the scheduler's pods may run on (their labels, taints, cordoning
// and readiness set the HighlyAvailable replica count) and those of its node pool; and
// whether the PriorityClass its pods ask for exists, since the API server refuses pods of
// a missing class. Neither kind holds anything secret. Load-aware schedulers also compare
// node names with the series they read.
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=priorityclasses,verbs=get;list;watch

// The pods waiting for a scheduler, in every namespace (status.pendingPods): the operator
// lists and watches only pods with no node (the field selector spec.nodeName=, which RBAC
// cannot express) and keeps of each its name, age, scheduler name and the scheduler's
// account of why no node fits it.
// +kubebuilder:rbac:groups="",resources=pods,verbs=list;watch
// Why scheduler-plugins' CapacityScheduling holds a pod (QuotaExceeded): the ElasticQuotas'
// bounds and use, listed while a pod of a scheduler enabling it waits. They hold no secret.
// +kubebuilder:rbac:groups=scheduling.x-k8s.io,resources=elasticquotas,verbs=list

// Load-aware schedulers: Prometheus discovery (reads only), checking a metrics token the endpoint refused, and recording rules in the
// Prometheus' namespace.
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list
// +kubebuilder:rbac:groups=monitoring.coreos.com,resources=prometheuses,verbs=list
// +kubebuilder:rbac:groups=monitoring.coreos.com,resources=prometheusrules,verbs=get;list;create;update;patch;delete
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create

// The admission policy that checks, in the API server, who may create or change a
// SecondaryScheduler (internal/admission), and its binding: the installer ships them, and
// the operator only reads them (its own, by label) to run no scheduler while they are not
// in place. It can create or change no admission policy, binding or webhook: RBAC cannot
// limit create to names, and whoever held that power could change any request the API
// server admits. It writes the policy's parameters, a ConfigMap in its namespace, with
// config/rbac/admission_parameters_role.yaml.
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings,verbs=get;list;watch
