package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RoutingTableName is the name of the one RoutingTable: the parameters that the routing
// policy's binding, which the installer ships, names (paramRef).
const RoutingTableName = "secondary-scheduler-operator-routing"

// The bounds of a RoutingTable, which the CRD's schema enforces (the markers below say the
// same numbers; a test compares them with the generated CRD). They bound what the routing
// policy's CEL evaluates for each pod created; a route that exceeds one is refused
// (InvalidSpec) before it reaches the table.
const (
	// MaxRoutes is how many routes a RoutingTable carries at most.
	MaxRoutes = 64
	// MaxNeverRoutedNamespaces is how many namespaces a RoutingTable names as never
	// routed at most: the operator's and those where schedulers run.
	MaxNeverRoutedNamespaces = 256
	// MaxRouteSelectorLabels is how many matchLabels a route's selector has at most.
	MaxRouteSelectorLabels = 16
	// MaxRouteSelectorRequirements is how many matchExpressions a route's selector has at
	// most.
	MaxRouteSelectorRequirements = 16
	// MaxRouteSelectorValues is how many values a requirement of a route's selector lists
	// at most.
	MaxRouteSelectorValues = 32
	// MaxRouteTolerations is how many tolerations a route adds at most, as spec.routing
	// allows.
	MaxRouteTolerations = 16
)

// RoutingTable is what the routing policy routes: the routes of every SecondaryScheduler
// that the operator decided to carry (spec.routing of each, its scheduler name and mode),
// and the namespaces whose pods are never routed. The operator writes one, named
// secondary-scheduler-operator-routing, and nothing else writes it; the routing policy
// (a MutatingAdmissionPolicy the installer ships, fixed) reads it as its parameters, so
// that the operator needs no right to create or change an admission policy.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
type RoutingTable struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec holds the routes.
	Spec RoutingTableSpec `json:"spec"`

	// Status says which generation of the table the routing policy was last seen
	// applying, and its routes.
	// +optional
	Status *RoutingTableStatus `json:"status,omitempty"`
}

// RoutingTableStatus is what the operator observed of the routing policy applying the
// table: the API server reads the policy's parameters through a watch of its own, so a
// table written is in effect a moment later, and the operator reports a route Routed only
// once its probe (a pod created in dry run, which the policy annotates with the table's
// generation) shows it.
type RoutingTableStatus struct {
	// ObservedGeneration is the generation of the table that the routing policy was last
	// seen applying; 0 before it was seen applying any.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Routes are the routes of that generation: each one's owner, generation and mode.
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=secondaryScheduler
	// +optional
	Routes []RouteInEffect `json:"routes,omitempty"`
}

// RouteInEffect is a route that the routing policy was seen applying.
type RouteInEffect struct {
	// SecondaryScheduler is the route's owner, as namespace/name.
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=317
	SecondaryScheduler string `json:"secondaryScheduler"`

	// Generation is the owner's metadata.generation whose spec.routing this route is.
	// +kubebuilder:validation:Minimum=0
	Generation int64 `json:"generation"`

	// Mode is the route's mode, Enforce or Audit.
	Mode RoutingMode `json:"mode"`

	// Digest identifies what the route does, whatever its generation: a hash of the
	// route as the table carries it, without its generation, so that an edit of the
	// SecondaryScheduler that leaves spec.routing alone leaves the route in effect.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Digest string `json:"digest,omitempty"`
}

// RoutingTableSpec holds the routes the routing policy applies.
type RoutingTableSpec struct {
	// Routes are the routes carried, at most one per SecondaryScheduler, in the order of
	// their owners' namespace/name. No two may select one pod (the operator refuses the
	// newer of two that may); the policy takes the first that selects a pod.
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=secondaryScheduler
	// +optional
	Routes []TableRoute `json:"routes,omitempty"`

	// NeverRoutedNamespaces are namespaces whose pods no route changes, besides
	// kube-system, kube-public and kube-node-lease, which the policy leaves alone itself:
	// the operator's and those where schedulers run.
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=set
	// +optional
	NeverRoutedNamespaces []string `json:"neverRoutedNamespaces,omitempty"`
}

// TableRoute is one SecondaryScheduler's route, as the routing policy applies it.
type TableRoute struct {
	// SecondaryScheduler is the route's owner, as namespace/name.
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=317
	SecondaryScheduler string `json:"secondaryScheduler"`

	// Generation is the owner's metadata.generation whose spec.routing this route is.
	// +kubebuilder:validation:Minimum=0
	Generation int64 `json:"generation"`

	// SchedulerName is the name routed pods get (mode Enforce), or the value of the label
	// a pod gets (both modes); a label value, so at most 63 characters.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	SchedulerName string `json:"schedulerName"`

	// Mode is Enforce (set the scheduler name, the tolerations and the label
	// routing.secondary-scheduler.io/scheduler) or Audit (only the label
	// routing.secondary-scheduler.io/would-route-to).
	Mode RoutingMode `json:"mode"`

	// NamespaceSelector selects the namespaces whose new pods the route takes; empty
	// selects every namespace.
	// +optional
	NamespaceSelector RouteSelector `json:"namespaceSelector,omitempty"`

	// PodSelector selects the pods the route takes by their labels; absent or empty
	// selects every pod.
	// +optional
	PodSelector *RouteSelector `json:"podSelector,omitempty"`

	// IncludeDaemonSetPods routes DaemonSet pods too.
	// +optional
	IncludeDaemonSetPods bool `json:"includeDaemonSetPods,omitempty"`

	// Tolerations are appended to the tolerations of the pods routed (mode Enforce).
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	Tolerations []RouteToleration `json:"tolerations,omitempty"`
}

// RouteSelector is a label selector with a label selector's meaning (matchLabels and
// every requirement of matchExpressions must hold), bounded so that the routing policy's
// evaluation is.
type RouteSelector struct {
	// MatchLabels are labels that must have these values.
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(key, size(key) <= 317)",message="a label key has at most 317 characters"
	// +optional
	MatchLabels map[string]LabelValue `json:"matchLabels,omitempty"`

	// MatchExpressions are requirements that must all hold.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	MatchExpressions []RouteSelectorRequirement `json:"matchExpressions,omitempty"`
}

// LabelValue is the value of a label.
// +kubebuilder:validation:MaxLength=63
type LabelValue string

// RouteSelectorRequirement is a requirement of a label selector, as
// metav1.LabelSelectorRequirement.
type RouteSelectorRequirement struct {
	// Key is the label's key.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	Key string `json:"key"`

	// Operator is In, NotIn, Exists or DoesNotExist.
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist
	Operator metav1.LabelSelectorOperator `json:"operator"`

	// Values are the values In and NotIn name; none for Exists and DoesNotExist.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=atomic
	// +optional
	Values []string `json:"values,omitempty"`
}

// RouteToleration is a toleration added to the pods routed, with the fields of a pod's
// toleration (corev1.Toleration), bounded.
type RouteToleration struct {
	// Key is the taint key tolerated; empty, with operator Exists, tolerates every taint.
	// +kubebuilder:validation:MaxLength=317
	// +optional
	Key string `json:"key,omitempty"`

	// Operator is Equal (the default) or Exists.
	// +kubebuilder:validation:Enum=Equal;Exists
	// +optional
	Operator string `json:"operator,omitempty"`

	// Value is the taint value tolerated, with operator Equal.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Value string `json:"value,omitempty"`

	// Effect is the taint effect tolerated; empty tolerates every effect.
	// +kubebuilder:validation:Enum=NoSchedule;PreferNoSchedule;NoExecute
	// +optional
	Effect string `json:"effect,omitempty"`

	// TolerationSeconds is how long a NoExecute taint is tolerated.
	// +optional
	TolerationSeconds *int64 `json:"tolerationSeconds,omitempty"`
}

// +kubebuilder:object:root=true

// RoutingTableList is a list of RoutingTables.
type RoutingTableList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the RoutingTables.
	Items []RoutingTable `json:"items"`
}
