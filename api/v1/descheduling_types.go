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
	// LoadWatcherWindow is the longest window over which scheduler-plugins' load-watcher
	// averages a node's use (avg_over_time over 15m), the one TargetLoadPacking scores by.
	LoadWatcherWindow = 15 * time.Minute
	// DeschedulingWindow is the window over which both the scheduler and the descheduler
	// read a node's CPU use: load-watcher's. A node a cycle relieved still reads hot until
	// the window has passed: a shorter interval would evict from it again.
	DeschedulingWindow = LoadWatcherWindow
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

	// What the operator read, about every minute, of the descheduler's own metrics (the
	// cycles and evictions of the last hour) and of the nodes' use, by the descheduler's
	// query. Absent until it could.

	// CyclesLastHour counts the descheduling cycles of the last hour, failed ones
	// included (a cycle fails, evicting nothing, while a node has no fresh sample).
	// +optional
	CyclesLastHour int32 `json:"cyclesLastHour,omitempty"`
	// LastCycleSeen is when the operator first saw the newest of those cycles done: it
	// ended at most a minute or so before.
	// +optional
	LastCycleSeen *metav1.Time `json:"lastCycleSeen,omitempty"`
	// EvictionsLastHour counts the pods evicted in the last hour; in mode DryRun, the
	// pods the descheduler would have evicted, and evicted none of.
	// +optional
	EvictionsLastHour int32 `json:"evictionsLastHour,omitempty"`
	// EvictedFrom are the nodes of those evictions, most first, at most 10.
	// +optional
	// +listType=atomic
	EvictedFrom []NodeEvictions `json:"evictedFrom,omitempty"`
	// CountedSince is when the operator began reading, when that is within the hour (it
	// started since, or descheduling did): the counts hold each descheduler process it
	// read, from the process's start when that was within the hour, and nothing of one
	// that ended before.
	// +optional
	CountedSince *metav1.Time `json:"countedSince,omitempty"`
	// NodesAboveBand are the nodes whose use is above EvictAbovePercent, most used
	// first, at most 10; NodesAboveBandCount counts them all.
	// +optional
	// +listType=atomic
	NodesAboveBand []string `json:"nodesAboveBand,omitempty"`
	// +optional
	NodesAboveBandCount int32 `json:"nodesAboveBandCount,omitempty"`
	// NodesWithoutFreshMetrics counts the nodes that have no fresh sample: while there is
	// one, a cycle evicts nothing (the failsafe).
	// +optional
	NodesWithoutFreshMetrics int32 `json:"nodesWithoutFreshMetrics,omitempty"`
	// Unread says what the operator could not read, when it could not.
	// +optional
	Unread string `json:"unread,omitempty"`
}

// NodeEvictions counts the evictions from one node.
type NodeEvictions struct {
	// Node is the node's name.
	Node string `json:"node"`
	// Pods counts the pods evicted from it.
	Pods int32 `json:"pods"`
}
