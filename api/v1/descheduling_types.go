package v1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeschedulingMode says whether the descheduler evicts.
// +kubebuilder:validation:Enum=Evict;DryRun
type DeschedulingMode string

const (
	// DeschedulingEvict evicts the pods the descheduler chooses, through the Eviction API.
	DeschedulingEvict DeschedulingMode = "Evict"
	// DeschedulingDryRun evicts nothing: status.descheduling says what would be evicted.
	DeschedulingDryRun DeschedulingMode = "DryRun"
)

// The defaults and bounds of spec.descheduling.
const (
	// DefaultDeschedulingBandPercent is band.belowPercent and band.abovePercent when they
	// are not set.
	DefaultDeschedulingBandPercent int32 = 10
	// DeschedulingWindow is the window over which both the scheduler (TargetLoadPacking's
	// load-watcher, avg_over_time over 15m) and the descheduler read a node's CPU use. A
	// node a cycle relieved still reads hot until the window has passed: a shorter interval
	// would evict from it again.
	DeschedulingWindow = 15 * time.Minute
	// DefaultDeschedulingInterval is descheduling.interval when it is not set.
	DefaultDeschedulingInterval = DeschedulingWindow
	// DefaultMaxEvictionsPerNode and DefaultMaxEvictionsPerCycle are the eviction limits
	// when they are not set.
	DefaultMaxEvictionsPerNode  int32 = 1
	DefaultMaxEvictionsPerCycle int32 = 5
)

// Descheduling runs a descheduler beside a load-aware scheduler, so that nodes stay near
// the scheduler's aim as their load drifts after placement: it evicts pods this scheduler
// placed from nodes whose measured CPU use is above the band around that aim, while nodes
// below the band exist to take them, and the scheduler places them again. Both read the
// same series from the same Prometheus over the same window (docs/descheduling.md gives
// the arithmetic). Only with profile TargetLoadPacking (the aim is its target) or
// LoadVariationRiskBalancing (the aim is the nodes' mean use).
type Descheduling struct {
	// Mode is Evict (the default) or DryRun, which evicts nothing and reports in
	// status.descheduling what it would evict.
	// +optional
	Mode DeschedulingMode `json:"mode,omitempty"`

	// Band is how far from the scheduler's aim a node's CPU use must be before pods move:
	// they are evicted from nodes above aim + abovePercent, only while some node is below
	// aim - belowPercent. In percentage points of a node's CPU; the defaults are 10 each.
	// +optional
	Band *DeschedulingBand `json:"band,omitempty"`

	// Interval between two descheduling cycles (default 15m). It must not be shorter than
	// the 15-minute window over which the scheduler and the descheduler average a node's
	// use: a node relieved by a cycle would still read hot in the next, and lose pods
	// again. A shorter one is refused with reason DeschedulingFightsScheduler.
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// MaxEvictionsPerNode is the most pods evicted from one node in a cycle (default 1).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=20
	// +optional
	MaxEvictionsPerNode *int32 `json:"maxEvictionsPerNode,omitempty"`

	// MaxEvictionsPerCycle is the most pods evicted in a cycle, all nodes together
	// (default 5).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	MaxEvictionsPerCycle *int32 `json:"maxEvictionsPerCycle,omitempty"`
}

// DeschedulingBand is the band around a scheduler's aim, in percentage points of a node's
// CPU.
type DeschedulingBand struct {
	// BelowPercent: a node takes evicted pods while its use is at least this far below the
	// aim (default 10).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=99
	// +optional
	BelowPercent *int32 `json:"belowPercent,omitempty"`

	// AbovePercent: pods are evicted from a node whose use is more than this above the aim
	// (default 10).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=99
	// +optional
	AbovePercent *int32 `json:"abovePercent,omitempty"`
}

// EffectiveMode is Mode, or its default Evict.
func (d *Descheduling) EffectiveMode() DeschedulingMode {
	if d.Mode == "" {
		return DeschedulingEvict
	}
	return d.Mode
}

// EffectiveBand is the band's below and above points, defaults filled in.
func (d *Descheduling) EffectiveBand() (below, above int32) {
	below, above = DefaultDeschedulingBandPercent, DefaultDeschedulingBandPercent
	if d.Band != nil && d.Band.BelowPercent != nil {
		below = *d.Band.BelowPercent
	}
	if d.Band != nil && d.Band.AbovePercent != nil {
		above = *d.Band.AbovePercent
	}
	return below, above
}

// EffectiveInterval is Interval, or DefaultDeschedulingInterval.
func (d *Descheduling) EffectiveInterval() time.Duration {
	if d.Interval == nil {
		return DefaultDeschedulingInterval
	}
	return d.Interval.Duration
}

// EffectiveEvictionLimits are the most evictions per node and per cycle, defaults filled in.
func (d *Descheduling) EffectiveEvictionLimits() (perNode, perCycle int32) {
	perNode, perCycle = DefaultMaxEvictionsPerNode, DefaultMaxEvictionsPerCycle
	if d.MaxEvictionsPerNode != nil {
		perNode = *d.MaxEvictionsPerNode
	}
	if d.MaxEvictionsPerCycle != nil {
		perCycle = *d.MaxEvictionsPerCycle
	}
	return perNode, perCycle
}

// DeschedulingStatus is what the descheduler of spec.descheduling runs with.
type DeschedulingStatus struct {
	// Deployment is the descheduler's Deployment, as namespace/name.
	Deployment string `json:"deployment"`
	// Mode is Evict or DryRun.
	Mode DeschedulingMode `json:"mode"`
	// ReceiveBelowPercent and EvictAbovePercent are the bounds of a node's CPU use the
	// descheduler compares with: pods are evicted from nodes above EvictAbovePercent while
	// nodes below ReceiveBelowPercent exist. Points from the nodes' mean use when
	// RelativeToMean is true (LoadVariationRiskBalancing), percentages of a node's CPU
	// otherwise.
	ReceiveBelowPercent int32 `json:"receiveBelowPercent"`
	EvictAbovePercent   int32 `json:"evictAbovePercent"`
	// +optional
	RelativeToMean bool `json:"relativeToMean,omitempty"`
	// ReadyReplicas counts the descheduler's ready pods, of which one leads.
	ReadyReplicas int32 `json:"readyReplicas"`
	// Replicas is how many pods its Deployment runs.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
}
