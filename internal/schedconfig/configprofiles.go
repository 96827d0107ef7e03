package schedconfig

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	schedulerconfigv1 "k8s.io/kube-scheduler/config/v1"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
)

// MaxProfiles is the number of profiles a configuration may have. Each profile's name is
// a claim the operator publishes in status.schedulerNames, which holds at most 64.
const MaxProfiles = 64

// maxProfileNameLength is the limit of spec.schedulerName. A profile's name is a claim
// compared with other resources' spec.schedulerName, so it obeys the same rule.
const maxProfileNameLength = 63

// ProfileNames returns the scheduler names the profiles of a configuration that Parse
// accepted claim, sorted and without duplicates. A profile without a schedulerName is
// left out (Parse refuses it).
func ProfileNames(config *schedulerconfigv1.KubeSchedulerConfiguration) []string {
	if config == nil {
		return nil
	}
	names := make([]string, 0, len(config.Profiles))
	for _, profile := range config.Profiles {
		if profile.SchedulerName != nil && *profile.SchedulerName != "" {
			names = append(names, *profile.SchedulerName)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

func checkProfiles(config *schedulerconfigv1.KubeSchedulerConfiguration, schedulerName, source string) error {
	nameHint := "a name of its own, the one pods give in spec.schedulerName"
	if schedulerName != "" {
		nameHint = schedulerName
	}
	if len(config.Profiles) == 0 {
		return refusal.New(v1.ReasonNoProfile,
			"the configuration in %s has no profiles; add one with schedulerName: %s (without profiles kube-scheduler would run a default-scheduler profile)",
			source, nameHint)
	}
	if len(config.Profiles) > MaxProfiles {
		return refusal.New(v1.ReasonInvalidConfig,
			"the configuration in %s has %d profiles; at most %d are accepted, as each profile's schedulerName is a name this SecondaryScheduler claims: "+
				"remove profiles or split them over several SecondarySchedulers",
			source, len(config.Profiles), MaxProfiles)
	}
	firstIndex := make(map[string]int, len(config.Profiles))
	for i, profile := range config.Profiles {
		if profile.SchedulerName == nil || *profile.SchedulerName == "" {
			return refusal.New(v1.ReasonDefaultSchedulerClaimed,
				"profile %d in %s has no schedulerName, which kube-scheduler reads as %s, the cluster's own scheduler; set schedulerName: %s",
				i, source, v1.DefaultSchedulerName, nameHint)
		}
		name := *profile.SchedulerName
		if name == v1.DefaultSchedulerName {
			return refusal.New(v1.ReasonDefaultSchedulerClaimed,
				"profile %d in %s is named %s, which belongs to the cluster's own scheduler; name it %s",
				i, source, v1.DefaultSchedulerName, nameHint)
		}
		if reasons := invalidName(name); len(reasons) > 0 {
			return refusal.New(v1.ReasonInvalidConfig,
				"profile %d in %s has schedulerName %q, which is not a valid scheduler name (%s); use at most %d lower-case letters, digits, '-' and '.', starting and ending with a letter or digit",
				i, source, shorten(name), strings.Join(reasons, "; "), maxProfileNameLength)
		}
		if first, seen := firstIndex[name]; seen {
			return refusal.New(v1.ReasonInvalidConfig,
				"profiles %d and %d in %s are both named %s; kube-scheduler refuses two profiles with one schedulerName: rename or merge one",
				first, i, source, name)
		}
		firstIndex[name] = i
	}
	if _, found := firstIndex[schedulerName]; schedulerName != "" && !found {
		return refusal.New(v1.ReasonProfileNotFound,
			"no profile in %s has schedulerName %s (found: %s); name one profile %s, or set the SecondaryScheduler's spec.schedulerName",
			source, schedulerName, strings.Join(ProfileNames(config), ", "), schedulerName)
	}
	return nil
}

func invalidName(name string) []string {
	reasons := validation.IsDNS1123Subdomain(name)
	if len(name) > maxProfileNameLength {
		reasons = append(reasons, validation.MaxLenError(maxProfileNameLength))
	}
	return reasons
}
