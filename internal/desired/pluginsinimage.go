package desired

import (
	"fmt"
	"strings"

	schedulerconfigv1 "k8s.io/kube-scheduler/config/v1"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/schedconfig"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/usertext"
)

// maxNamedPlugins bounds how many plugins a message names.
const maxNamedPlugins = 10

// checkPluginsInImage refuses, before rollout, a configuration the scheduler would refuse
// to start with: with an image of a kind the operator knows, one that enables a plugin no
// kube-scheduler has ("plugin ... does not exist", checkPluginsExist) or that its plugins
// or kube-scheduler's validation refuse (checkStart); with
// Kubernetes' own kube-scheduler image, which has the in-tree plugins only, one that
// enables out-of-tree plugins (scheduler-plugins' Trimaran). It accepts any plugin with
// any other image, whose plugins the operator cannot know.
func checkPluginsInImage(rendered *render.Result, where string) error {
	// With an image of unknown kind the operator cannot know its plugins: anything goes.
	if rendered.Image.Kind == render.OtherImage {
		return nil
	}
	config := rendered.Config
	if err := checkPluginsExist(config, where); err != nil {
		return err
	}
	if err := checkStart(config, rendered.Image, where); err != nil {
		return err
	}
	missing := schedconfig.OutOfTreePlugins(config)
	if rendered.Image.Kind != render.KubeSchedulerImage || len(missing) == 0 {
		return nil
	}
	return refusal.New(v1.ReasonPluginsNotInImage,
		"spec.schedulerImage %s is Kubernetes' own kube-scheduler, which has the in-tree plugins only, but %s enables %s, "+
			"which it does not have: it would refuse to start. Use an image that has them, such as scheduler-plugins' %s "+
			"(or leave spec.schedulerImage empty for the default), or enable only in-tree plugins",
		usertext.Cut(rendered.Image.Reference, 200), where, pluginList(missing), render.DefaultSchedulerImages()[0])
}

// checkPluginsExist refuses a configuration that enables a plugin no kube-scheduler the
// operator knows has, in-tree or scheduler-plugins', such as a misspelt one: the scheduler
// would refuse to start, and its pods crash until the name is fixed. The nearest real
// name is suggested.
func checkPluginsExist(config *schedulerconfigv1.KubeSchedulerConfiguration, where string) error {
	unknown := schedconfig.UnknownPlugins(config, true)
	if len(unknown) == 0 {
		return nil
	}
	suggestions := make([]string, 0, len(unknown))
	for _, name := range unknown[:min(len(unknown), maxNamedPlugins)] {
		if nearest := schedconfig.NearestPlugin(name, true); nearest != "" {
			suggestions = append(suggestions, fmt.Sprintf("%s for %s", nearest, usertext.Cut(name, 100)))
		}
	}
	hint := "check the spelling against the plugins of Kubernetes and of scheduler-plugins"
	if len(suggestions) > 0 {
		hint = "did you mean " + strings.Join(suggestions, ", ") + "?"
	}
	return refusal.New(v1.ReasonInvalidConfig,
		"%s enables plugin %s, which neither Kubernetes' kube-scheduler nor scheduler-plugins' has: the scheduler would refuse to start; %s",
		where, pluginList(unknown), hint)
}

// checkStart refuses a configuration that kube-scheduler would refuse at start for another
// reason than a missing plugin: a plugin enabled at an extension point it does not
// implement, a profile without exactly one queue sort plugin or without a bind plugin,
// profiles with different queue sorts, and the rest of schedconfig.StartProblems, all
// listed at once.
func checkStart(config *schedulerconfigv1.KubeSchedulerConfiguration, image render.Image, where string) error {
	scheduler := schedconfig.Scheduler{SchedulerPlugins: image.Kind == render.SchedulerPluginsImage, KubernetesMinor: image.KubernetesMinor}
	problems := schedconfig.StartProblems(config, scheduler)
	if len(problems) == 0 {
		return nil
	}
	return refusal.New(v1.ReasonInvalidConfig, "%s would make kube-scheduler refuse to start: %s",
		where, strings.Join(problems, "; "))
}

// pluginList names plugins for a message, at most maxNamedPlugins of them.
func pluginList(names []string) string {
	shown := make([]string, 0, min(len(names), maxNamedPlugins))
	for _, name := range names[:min(len(names), maxNamedPlugins)] {
		shown = append(shown, usertext.Cut(name, 100))
	}
	list := strings.Join(shown, ", ")
	if len(names) > maxNamedPlugins {
		list += fmt.Sprintf(" and %d more", len(names)-maxNamedPlugins)
	}
	return list
}
