package controllers

import (
	"fmt"
	"strings"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/schedconfig"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/usertext"
)

// maxNamedPlugins bounds how many plugins a message names.
const maxNamedPlugins = 10

// checkPluginsInImage refuses a configuration that enables out-of-tree plugins
// (scheduler-plugins' Trimaran, or any plugin Kubernetes does not have) with Kubernetes'
// own kube-scheduler image, which has the in-tree plugins only: that scheduler would
// refuse to start ("plugin ... does not exist"). It accepts any other image, whose plugins
// the operator cannot know, and a configuration of in-tree plugins only.
func checkPluginsInImage(cr *v1.SecondaryScheduler, rendered *render.Result, customConfigSource string) error {
	if rendered.Image.Kind != render.KubeSchedulerImage {
		return nil
	}
	config, err := schedconfig.Parse([]byte(rendered.SchedulerConfig), "", "the rendered configuration")
	if err != nil {
		// Not reached: the user's part was parsed before rendering, the rest is the operator's.
		return refusal.New(v1.ReasonInvalidSpec,
			"the rendered scheduler configuration cannot be read back: %v", err)
	}
	missing := schedconfig.OutOfTreePlugins(config)
	if len(missing) == 0 {
		return nil
	}
	where := fmt.Sprintf("profile type %s", cr.EffectiveProfile())
	if customConfigSource != "" {
		where = "the configuration in " + customConfigSource
	}
	return refusal.New(v1.ReasonPluginsNotInImage,
		"spec.schedulerImage %s is Kubernetes' own kube-scheduler, which has the in-tree plugins only, but %s enables %s, "+
			"which it does not have: it would refuse to start. Use an image that has them, such as scheduler-plugins' %s "+
			"(or leave spec.schedulerImage empty for the default), or enable only in-tree plugins",
		usertext.Cut(rendered.Image.Reference, 200), where, pluginList(missing), render.DefaultSchedulerImages()[0])
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
