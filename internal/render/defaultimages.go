package render

import (
	"slices"
	"sort"
)

// DefaultSchedulerImages is every image SchedulerImage may pick by default (one
// scheduler-plugins release per known Kubernetes minor version), newest first. An
// installation that mirrors images (OLM's relatedImages) needs each of them.
func DefaultSchedulerImages() []string {
	minors := make([]int, 0, len(schedulerPluginsReleases))
	for minor := range schedulerPluginsReleases {
		minors = append(minors, minor)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(minors)))
	images := make([]string, 0, len(minors))
	for _, minor := range minors {
		images = append(images, schedulerPluginsRepository+":"+schedulerPluginsReleases[minor])
	}
	return slices.Clip(images)
}

// NewestKnownMinor is the newest Kubernetes minor version that a scheduler-plugins
// release is known for: the version the offline renderer assumes when told none.
func NewestKnownMinor() int { return newestKnownMinor }
