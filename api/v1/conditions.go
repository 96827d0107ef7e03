package v1

// ConditionType is the type of a condition in SecondarySchedulerStatus.Conditions.
type ConditionType string

const (
	// ConditionAvailable is True while at least one scheduler pod is ready to schedule.
	ConditionAvailable ConditionType = "Available"
	// ConditionProgressing is True while the scheduler's Deployment rolls out a change.
	ConditionProgressing ConditionType = "Progressing"
	// ConditionDegraded is True when the desired state cannot be reached; the reason says
	// why and the message what to fix. The last good scheduler keeps running meanwhile.
	ConditionDegraded ConditionType = "Degraded"
	// ConditionReconciling is True while the operator is still bringing the scheduler to
	// the current generation (rolling out, waiting for a leader, waiting for pods to stop).
	// It follows the kstatus convention, which kubectl wait, Flux and other tools read:
	// Reconciling=True means "in progress".
	ConditionReconciling ConditionType = "Reconciling"
	// ConditionStalled is True when the operator cannot make progress without a change
	// from the user (the same problem Degraded reports). kstatus reads Stalled=True as
	// "failed".
	ConditionStalled ConditionType = "Stalled"
)

// ConditionReason is the machine-readable reason of a condition. Events on the
// SecondaryScheduler reuse the same reasons.
type ConditionReason string

// Reasons of the Available condition.
const (
	// ReasonSchedulerReady: a scheduler pod of the current configuration is ready and
	// holds the scheduler's Lease.
	ReasonSchedulerReady ConditionReason = "SchedulerReady"
	// ReasonServingPreviousConfiguration: a ready pod of an earlier configuration holds
	// the scheduler's Lease and schedules, as that configuration says, while the current
	// one rolls out or cannot (Progressing and Degraded say which).
	ReasonServingPreviousConfiguration ConditionReason = "ServingPreviousConfiguration"
	// ReasonNoReadyScheduler: no scheduler pod is ready yet, or none is left.
	ReasonNoReadyScheduler ConditionReason = "NoReadyScheduler"
	// ReasonSchedulerNotDeployed: no scheduler Deployment exists (yet).
	ReasonSchedulerNotDeployed ConditionReason = "SchedulerNotDeployed"
	// ReasonNoLeader: scheduler pods are ready but none holds the scheduler's Lease, so
	// none schedules yet.
	ReasonNoLeader ConditionReason = "NoLeader"
)

// Reasons of the Progressing condition.
const (
	// ReasonHandingOver: pods of the current configuration are ready, but a pod of an
	// older one still holds the scheduler's Lease and schedules until it stops.
	ReasonHandingOver ConditionReason = "HandingOver"
	// ReasonRollingOut: the Deployment is rolling out a new configuration or image.
	ReasonRollingOut ConditionReason = "RollingOut"
	// ReasonRolloutComplete: every replica runs the current configuration.
	ReasonRolloutComplete ConditionReason = "RolloutComplete"
)

// Reasons shared by all conditions for management states other than Managed.
const (
	// ReasonUnmanaged: managementState is Unmanaged; the operator leaves the objects alone.
	ReasonUnmanaged ConditionReason = "Unmanaged"
	// ReasonRemoved: managementState is Removed; the operator deleted the scheduler.
	ReasonRemoved ConditionReason = "Removed"
)

// ReasonNotChecked is the reason of MetricsAvailable, ExtendersAvailable and Descheduling
// while the operator does not check what they report: it checks the metrics, extenders and
// descheduler of a configuration it applies, and applies none while the spec is refused
// (Degraded says why) or managementState is Unmanaged, though the scheduler keeps running.
// They are Unknown meanwhile, their message saying what the last check found.
const ReasonNotChecked ConditionReason = "NotChecked"

// Reasons of the Degraded condition.
const (
	// ReasonAsExpected: nothing is wrong.
	ReasonAsExpected ConditionReason = "AsExpected"
	// ReasonConfigMapNotFound: spec.schedulerConfig names a ConfigMap that does not exist.
	ReasonConfigMapNotFound ConditionReason = "ConfigMapNotFound"
	// ReasonConfigKeyMissing: the ConfigMap has no config.yaml key.
	ReasonConfigKeyMissing ConditionReason = "ConfigKeyMissing"
	// ReasonConfigNotYAML: config.yaml is not valid YAML.
	ReasonConfigNotYAML ConditionReason = "ConfigNotYAML"
	// ReasonNotKubeSchedulerConfiguration: config.yaml is YAML but not a KubeSchedulerConfiguration.
	ReasonNotKubeSchedulerConfiguration ConditionReason = "NotKubeSchedulerConfiguration"
	// ReasonUnsupportedConfigVersion: config.yaml uses an apiVersion that current
	// kube-schedulers no longer serve (v1beta1 to v1beta3).
	ReasonUnsupportedConfigVersion ConditionReason = "UnsupportedConfigVersion"
	// ReasonInvalidConfig: config.yaml has unknown or duplicate fields, or wrongly typed values.
	ReasonInvalidConfig ConditionReason = "InvalidConfig"
	// ReasonNoProfile: the configuration has no profile.
	ReasonNoProfile ConditionReason = "NoProfile"
	// ReasonProfileNotFound: no profile's schedulerName is the SecondaryScheduler's scheduler name.
	ReasonProfileNotFound ConditionReason = "ProfileNotFound"
	// ReasonDefaultSchedulerClaimed: a profile is named default-scheduler (explicitly, or by
	// leaving schedulerName empty), which belongs to the cluster's own scheduler.
	ReasonDefaultSchedulerClaimed ConditionReason = "DefaultSchedulerClaimed"
	// ReasonSchedulerNameConflict: an older SecondaryScheduler already uses this scheduler name.
	ReasonSchedulerNameConflict ConditionReason = "SchedulerNameConflict"
	// ReasonApplyFailed: the API server refused an object of the scheduler.
	ReasonApplyFailed ConditionReason = "ApplyFailed"
	// ReasonDiscoveryFailed: the operator could not read the cluster's Kubernetes version.
	ReasonDiscoveryFailed ConditionReason = "DiscoveryFailed"
	// ReasonNamespaceNotAllowed: the SecondaryScheduler is in a namespace where the cluster
	// admin has not allowed the operator to run schedulers; nothing is created.
	ReasonNamespaceNotAllowed ConditionReason = "NamespaceNotAllowed"
	// ReasonClusterRoleNotAllowed: profile.metrics.serviceAccountToken.clusterRole is not one
	// of the ClusterRoles the cluster admin allows metrics tokens to be bound to.
	ReasonClusterRoleNotAllowed ConditionReason = "ClusterRoleNotAllowed"
	// ReasonConfigTooLarge: config.yaml is larger than the operator accepts.
	ReasonConfigTooLarge ConditionReason = "ConfigTooLarge"
	// ReasonInvalidImage: spec.schedulerImage is not a valid image reference.
	ReasonInvalidImage ConditionReason = "InvalidImage"
	// ReasonInvalidSpec: the spec passed the API's validation but cannot be turned into a
	// scheduler (the message says which field and why).
	ReasonInvalidSpec ConditionReason = "InvalidSpec"
	// ReasonPriorityClassNotFound: spec.priorityClassName names a PriorityClass that does
	// not exist, so the API server would refuse the scheduler's pods; the running
	// scheduler is left as it is.
	ReasonPriorityClassNotFound ConditionReason = "PriorityClassNotFound"
	// ReasonAdmissionPolicyMissing: the operator's admission policies, which check at
	// admission that whoever creates or changes a SecondaryScheduler may run schedulers and
	// read what it names, are not in place as the operator renders them, so the operator
	// applies nothing: the scheduler keeps running as it was.
	ReasonAdmissionPolicyMissing ConditionReason = "AdmissionPolicyMissing"
	// ReasonCreatedBeforeAdmissionPolicy: the SecondaryScheduler was created before the
	// operator's admission policies were in place, so nobody checked that its author may
	// run schedulers; the operator runs nothing for it until a cluster admin recreates it.
	ReasonCreatedBeforeAdmissionPolicy ConditionReason = "CreatedBeforeAdmissionPolicy"
	// ReasonImageNotAllowed: an image of the spec is not among those the operator's
	// --allowed-scheduler-images allows. The admission policy refuses such a spec; the
	// operator checks again before it renders, for a spec admitted while the policy's
	// parameters said otherwise. The running scheduler is left as it is.
	ReasonImageNotAllowed ConditionReason = "ImageNotAllowed"
)

// Reasons of Degraded while the scheduler runs as specified but cannot do its job well.
const (
	// ReasonNoSchedulableNodes: no node may run the scheduler's own pods (none is Ready,
	// schedulable, matching nodeSelector and required affinity, with its taints tolerated).
	ReasonNoSchedulableNodes ConditionReason = "NoSchedulableNodes"
	// ReasonNodePoolEmpty: spec.nodePool matches no node, so the scheduler can place no pod.
	ReasonNodePoolEmpty ConditionReason = "NodePoolEmpty"
)

// Reasons of the Reconciling condition when it is False.
const (
	// ReasonReconciled: the scheduler runs the current generation as specified.
	ReasonReconciled ConditionReason = "Reconciled"
)

// Reasons of Available (False) and Degraded (True) when no pod of the scheduler's current
// configuration is ready and its pods tell why; seen within seconds, long before the
// Deployment's progress deadline. The message quotes the kubelet or the scheduler.
const (
	// ReasonImagePullFailed: the kubelet cannot pull the scheduler image (ErrImagePull,
	// ImagePullBackOff, InvalidImageName).
	ReasonImagePullFailed ConditionReason = "ImagePullFailed"
	// ReasonSchedulerCrashing: the scheduler's container exits and is restarted
	// (CrashLoopBackOff); the message has its exit code and its last log lines.
	ReasonSchedulerCrashing ConditionReason = "SchedulerCrashing"
	// ReasonSchedulerCannotStart: the kubelet cannot create or start the scheduler's
	// container (CreateContainerConfigError, CreateContainerError, or a binary that
	// cannot run).
	ReasonSchedulerCannotStart ConditionReason = "SchedulerCannotStart"
	// ReasonSchedulerUnschedulable: no node can take the scheduler's own pod; the message
	// has the default scheduler's reasons.
	ReasonSchedulerUnschedulable ConditionReason = "SchedulerUnschedulable"
	// ReasonPodCreationFailed: the API server refuses the scheduler's pods (a ResourceQuota
	// exceeded, Pod Security admission, a webhook), so its Deployment creates none; the
	// message quotes the refusal.
	ReasonPodCreationFailed ConditionReason = "PodCreationFailed"
)

// ReasonPluginsNotInImage means the configuration enables plugins that the scheduler image
// does not have (out-of-tree plugins with Kubernetes' own kube-scheduler image, which has
// the in-tree ones only): the scheduler would refuse to start, so nothing is applied and
// the running scheduler is left as it is. A Degraded reason.
const ReasonPluginsNotInImage ConditionReason = "PluginsNotInImage"

// ReasonPluginCRDMissing means the configuration enables a plugin that reads a custom
// resource whose CustomResourceDefinition the cluster does not serve (Coscheduling's
// PodGroups, CapacityScheduling's ElasticQuotas, ...): the scheduler would fail to start or
// wait forever for it, so nothing is applied and the running scheduler is left as it is.
// The message names the CRD and the command that installs it. A Degraded reason.
const ReasonPluginCRDMissing ConditionReason = "PluginCRDMissing"

// ReasonDeschedulingFightsScheduler means spec.descheduling would work against its
// scheduler: an interval shorter than the window over which both read a node's use (a
// relieved node would still read hot, and lose pods again), or a band that reaches beyond 0
// or 100 % around the target (nothing would ever move). Nothing is applied and the running
// scheduler and descheduler are left as they are. A Degraded reason.
const ReasonDeschedulingFightsScheduler ConditionReason = "DeschedulingFightsScheduler"

// ReasonDeschedulerCannotReadPrometheus means the descheduler of spec.descheduling could
// not verify the scheduler's HTTPS Prometheus: with a token its client trusts only the
// caBundle and checks the certificate for the host with its port; without one, only the
// system's roots. Nothing is applied and what runs is kept. A Degraded reason.
const ReasonDeschedulerCannotReadPrometheus ConditionReason = "DeschedulerCannotReadPrometheus"

// ReasonWorkloadAPIMissing means spec.gang asks for Kubernetes' GangScheduling
// (implementation Workload) and the cluster does not serve its API,
// scheduling.k8s.io/v1beta1 PodGroups: nothing is applied and the running scheduler is left
// as it is. A Degraded reason.
const ReasonWorkloadAPIMissing ConditionReason = "WorkloadAPIMissing"

// ReasonImageVersionSkew is the reason of the Warning Event emitted when the scheduler image
// becomes one outside Kubernetes' version-skew policy for the cluster (built for a
// Kubernetes newer than the cluster's, or more than one minor version older);
// status.imageSource and the Available message say so as long as it is.
const ReasonImageVersionSkew ConditionReason = "ImageVersionSkew"

// ReasonEditUndone is the reason of the Warning Event emitted when the operator writes
// back a field of the scheduler's objects that someone else changed (kubectl scale, edit,
// label): its message names the field, who changed it, and the spec field to set instead,
// or says that the operator owns the field.
const ReasonEditUndone ConditionReason = "EditUndone"

// ReasonRolloutStalled means the scheduler's Deployment exceeded its progress deadline, for
// example because its pods crash or cannot be placed.
const ReasonRolloutStalled ConditionReason = "RolloutStalled"

// ReasonObjectNameTaken means an object the scheduler needs already exists under the
// same name and belongs to someone else; the operator does not take it over.
const ReasonObjectNameTaken ConditionReason = "ObjectNameTaken"

// ConditionMetricsAvailable is True when the metrics a load-aware scheduler reads are
// served for every node; only load-aware profiles with a Prometheus provider have it.
const ConditionMetricsAvailable ConditionType = "MetricsAvailable"

// Reasons of the MetricsAvailable condition. When metrics are not available, Degraded
// carries the same reason: a load-aware scheduler without them scores every node 0.
const (
	// ReasonTokenSecretNotFound means profile.metrics.tokenSecretRef names a missing Secret.
	ReasonTokenSecretNotFound ConditionReason = "TokenSecretNotFound"
	// ReasonTokenKeyMissing means the token Secret has no non-empty key token.
	ReasonTokenKeyMissing ConditionReason = "TokenKeyMissing"
	// ReasonPrometheusNotFound means no address was given and discovery found no Prometheus.
	ReasonPrometheusNotFound ConditionReason = "PrometheusNotFound"
	// ReasonMetricsAvailable means every node the scheduler places pods on (its node
	// pool's, or every node) has the series load-watcher reads.
	ReasonMetricsAvailable ConditionReason = "MetricsAvailable"
	// ReasonPrometheusUnreachable means the Prometheus endpoint could not be queried.
	ReasonPrometheusUnreachable ConditionReason = "PrometheusUnreachable"
	// ReasonUnauthorized means the endpoint refused the scheduler's credentials.
	ReasonUnauthorized ConditionReason = "Unauthorized"
	// ReasonRecordingRuleMissing means a series load-watcher reads does not exist.
	ReasonRecordingRuleMissing ConditionReason = "RecordingRuleMissing"
	// ReasonNodeLabelMismatch means some nodes have no series whose instance label is their name.
	ReasonNodeLabelMismatch ConditionReason = "NodeLabelMismatch"
	// ReasonCABundleNotFound means the ConfigMap of profile.metrics.caBundle (or OpenShift's
	// openshift-service-ca.crt) does not exist.
	ReasonCABundleNotFound ConditionReason = "CABundleNotFound"
	// ReasonCABundleInvalid means the CA bundle's key is missing or holds no PEM certificate.
	ReasonCABundleInvalid ConditionReason = "CABundleInvalid"
	// ReasonTokenRequestFailed means the API server refused a token for the scheduler's
	// metrics ServiceAccount.
	ReasonTokenRequestFailed ConditionReason = "TokenRequestFailed"
	// ReasonRecordingRulesNotInstalled means installRecordingRules is set but no Prometheus
	// Operator Prometheus (or no PrometheusRule kind) was found to install them for.
	ReasonRecordingRulesNotInstalled ConditionReason = "RecordingRulesNotInstalled"
)

// Reasons of the MetricsAvailable condition (and of Degraded) about the age of the data
// and about addresses that cannot be queried.
const (
	// ReasonMetricsStale means the provider answers, but the newest sample of a series
	// load-watcher reads is older than profile.metrics.staleAfter for some node: a
	// recording rule or a scrape stopped. scheduler-plugins' Trimaran keeps scoring with
	// such data (and with the last data it fetched, once none is left) without a word.
	ReasonMetricsStale ConditionReason = "MetricsStale"
	// ReasonMetricsAddressInvalid means a metrics address is not a usable http(s) URL: an
	// unresolved placeholder such as ${PROM_URL}, text that is no URL, or a URL holding
	// credentials. Load-watcher would fail every query, and every node would score alike.
	ReasonMetricsAddressInvalid ConditionReason = "MetricsAddressInvalid"
	// ReasonMetricsProbing means the metrics have not been probed yet at this address,
	// with these credentials and nodes: a probe runs, and its result follows within the
	// probe timeout. MetricsAvailable is Unknown meanwhile.
	ReasonMetricsProbing ConditionReason = "MetricsProbing"
)

// Reasons of the Events, and of Degraded, about the failsafe of
// profile.metrics.whenUnavailable: ScoreByRequests.
const (
	// ReasonScoringByRequests means the metrics have been unusable for longer than
	// profile.metrics.staleAfter, so the scheduler now scores nodes by their requests (the
	// equivalent in-tree scoring) until the metrics have been healthy for resumeAfter.
	ReasonScoringByRequests ConditionReason = "ScoringByRequests"
	// ReasonLoadAwareScoringResumed means the metrics have been healthy for resumeAfter,
	// so the scheduler scores nodes by their measured load again.
	ReasonLoadAwareScoringResumed ConditionReason = "LoadAwareScoringResumed"
)

// ConditionPodsPending is True when pods that name one of the scheduler's names have
// waited longer than spec.pendingPodThreshold for a node; the reason says why, when the
// operator can tell, and the message names some of them and what to do.
const ConditionPodsPending ConditionType = "PodsPending"

// Reasons of the PodsPending condition.
const (
	// ReasonNoPodsPending: no pod naming the scheduler has waited longer than the threshold.
	ReasonNoPodsPending ConditionReason = "NoPodsPending"
	// ReasonSchedulerNotRunning: pods wait because the scheduler is not Available (the
	// Available condition says why).
	ReasonSchedulerNotRunning ConditionReason = "SchedulerNotRunning"
	// ReasonPodsUnschedulable: the scheduler runs and found no node for them; the message
	// quotes its summary.
	ReasonPodsUnschedulable ConditionReason = "PodsUnschedulable"
	// ReasonPodsNotScheduled: the scheduler runs, but has neither placed them nor said why.
	ReasonPodsNotScheduled ConditionReason = "PodsNotScheduled"
	// ReasonGangWaiting: they belong to a gang (a PodGroup of Coscheduling or of the
	// Workload API), whose pods bind all together or not at all: they wait for the rest of
	// the gang to exist and fit; the message quotes the scheduler's (its gang plugin's) own
	// account.
	ReasonGangWaiting ConditionReason = "GangWaiting"
	// ReasonQuotaExceeded: scheduler-plugins' CapacityScheduling holds them to their
	// namespace's ElasticQuota: placing the oldest would take the quota beyond its max, or
	// every quota's use beyond the sum of their mins; the message gives the figures.
	ReasonQuotaExceeded ConditionReason = "QuotaExceeded"
	// ReasonSchedulerNotProvided is the reason of a Warning Event on a pod that has waited
	// (by default 2m) for a scheduler name no SecondaryScheduler provides; the Event lists
	// the names that are provided.
	ReasonSchedulerNotProvided ConditionReason = "SchedulerNotProvided"
)

// ConditionDescheduling is True while the descheduler of spec.descheduling runs (a ready
// replica, which leads), and so evicts or, in mode DryRun, reports; the reason says why it
// does not. It is absent without spec.descheduling.
const ConditionDescheduling ConditionType = "Descheduling"

// Reasons of the Descheduling condition.
const (
	// ReasonDeschedulerReady: the descheduler runs, in mode Evict.
	ReasonDeschedulerReady ConditionReason = "DeschedulerReady"
	// ReasonDeschedulerDryRun: the descheduler runs in mode DryRun: it evicts nothing.
	ReasonDeschedulerDryRun ConditionReason = "DeschedulerDryRun"
	// ReasonDeschedulerNotReady: no pod of the descheduler is ready yet; the message says
	// what its Deployment reports.
	ReasonDeschedulerNotReady ConditionReason = "DeschedulerNotReady"
	// ReasonDeschedulerRollingOut: pods of an earlier policy or mode of the descheduler
	// still run, and act as it said, until its Deployment replaces them.
	ReasonDeschedulerRollingOut ConditionReason = "DeschedulerRollingOut"
	// ReasonDeschedulerPaused: the descheduler is paused (no pod runs) while the scheduler
	// scores nodes by their requests (the failsafe) or is not yet serving its current
	// configuration: a pod evicted then could be placed back on the node it left.
	ReasonDeschedulerPaused ConditionReason = "DeschedulerPaused"
	// ReasonSchedulerNamePolicyMissing: the admission policy that labels pods with their
	// scheduler's name, by which the descheduler selects its scheduler's pods, is not in
	// place as the installer ships it (dist/routing.yaml): the descheduler runs, but finds no
	// pod it may evict.
	ReasonSchedulerNamePolicyMissing ConditionReason = "SchedulerNamePolicyMissing"
)

// ConditionRouting is True while new pods are routed to the scheduler (spec.routing in
// mode Enforce, carried by the routing table that the API server's routing policy
// reads); the reason says why they are not. It is absent without spec.routing.
const ConditionRouting ConditionType = "Routing"

// Reasons of the Routing condition.
const (
	// ReasonRouted: the routing policy sets the scheduler name of the new pods selected.
	ReasonRouted ConditionReason = "Routed"
	// ReasonAuditing: the route is in mode Audit: the policy only labels the pods it
	// would route (routing.secondary-scheduler.io/would-route-to).
	ReasonAuditing ConditionReason = "Auditing"
	// ReasonRoutingPolicyPending: the route is accepted, but the routing table does not
	// carry it yet (the message says what it carries).
	ReasonRoutingPolicyPending ConditionReason = "RoutingPolicyPending"
	// ReasonRoutingPolicyMissing: the route is accepted, but the routing policy and its
	// binding, which the installer ships and the operator never writes, are missing or
	// differ from what the installer ships, so no pod is provably routed; a cluster admin
	// applies them.
	ReasonRoutingPolicyMissing ConditionReason = "RoutingPolicyMissing"
	// ReasonFailedOver: the scheduler has not been Available for spec.routing.failoverAfter,
	// so new pods go to the default scheduler until it is back.
	ReasonFailedOver ConditionReason = "FailedOver"
	// ReasonSchedulerNotAvailable: the scheduler is not Available and was not while the
	// route routed pods (it has not run yet, or its resource was refused before it ran),
	// so the route sends it no pod; new pods are routed once it is Available.
	ReasonSchedulerNotAvailable ConditionReason = "SchedulerNotAvailable"
	// ReasonRoutingConflict: an older SecondaryScheduler's route may select the same
	// pods; the message names it.
	ReasonRoutingConflict ConditionReason = "RoutingConflict"
	// ReasonRoutingUnsupported: the cluster serves no MutatingAdmissionPolicy
	// (admissionregistration.k8s.io/v1, Kubernetes 1.36 and later).
	ReasonRoutingUnsupported ConditionReason = "RoutingUnsupported"
	// ReasonNotRouting: the operator runs no scheduler for this resource (its
	// managementState, or a refusal that Available tells), so it routes nothing to it.
	ReasonNotRouting ConditionReason = "NotRouting"
)

// ConditionExtendersAvailable is True when the operator's last probe reached every
// extender of the scheduler (spec.extenders and a Custom configuration's own) over the
// transport the scheduler uses, TLS included; status.extenders tells each. It is absent
// when the scheduler has no extender.
const ConditionExtendersAvailable ConditionType = "ExtendersAvailable"

// Reasons of extenders: the ExtendersAvailable condition's, and refusals of their
// configuration (Degraded, nothing rolled out).
const (
	// ReasonExtendersReachable: every extender answered the operator's last probe, or, in
	// the scheduler's pod, is ready in the leading pod.
	ReasonExtendersReachable ConditionReason = "ExtendersReachable"
	// ReasonExtendersProbing: an extender has not been probed yet.
	ReasonExtendersProbing ConditionReason = "ExtendersProbing"
	// ReasonExtenderUnreachable: an extender that is not ignorable did not answer, so
	// every pod the scheduler calls it for fails scheduling and stays Pending; Degraded
	// says so too.
	ReasonExtenderUnreachable ConditionReason = "ExtenderUnreachable"
	// ReasonIgnorableExtenderUnreachable: an ignorable extender did not answer; the
	// scheduler places pods without it.
	ReasonIgnorableExtenderUnreachable ConditionReason = "IgnorableExtenderUnreachable"
	// ReasonExtenderTLSFailed: an extender answered, but its TLS handshake failed (its
	// certificate is not signed by the CA given, or is for another name, or it refused the
	// client certificate).
	ReasonExtenderTLSFailed ConditionReason = "ExtenderTLSFailed"
	// ReasonExtenderNotReady: the extender container in the scheduler's pod is not ready.
	ReasonExtenderNotReady ConditionReason = "ExtenderNotReady"
	// ReasonInvalidExtender: an extender's configuration would be refused by
	// kube-scheduler, or should not run (the message says which field and why).
	ReasonInvalidExtender ConditionReason = "InvalidExtender"
	// ReasonExtenderSecretNotFound: a Secret or ConfigMap that an extender's tls names
	// does not exist, lacks the key, or is a Secret without the label
	// operator.secondary-scheduler.io/extender-tls-for naming this SecondaryScheduler.
	ReasonExtenderSecretNotFound ConditionReason = "ExtenderSecretNotFound"
	// ReasonExtenderCertificateInvalid: an extender's CA bundle or client certificate
	// does not parse as PEM, or the key does not match the certificate.
	ReasonExtenderCertificateInvalid ConditionReason = "ExtenderCertificateInvalid"
)
