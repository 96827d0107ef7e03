// Package desired is the scheduler the operator would run for a SecondaryScheduler: the
// facts gathered (internal/gather), rendered (internal/render), and checked against what
// the scheduler's image can run. The controller applies it; the offline renderer
// (internal/offline) prints it. A failure is a refusal (internal/refusal), with the reason
// status would show.
package desired

import (
	"fmt"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/gather"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// Scheduler renders cr's scheduler from what gathering found. Rendering is pure, so a
// failure comes from an input the API accepted but the scheduler cannot use: the user's
// to fix, a refusal. So is a configuration that enables plugins the image does not have,
// which the scheduler would refuse at start, and one that enables plugins reading kinds the
// cluster does not serve.
func Scheduler(cr *v1.SecondaryScheduler, found *gather.Facts) (*render.Result, error) {
	if err := checkDescheduling(cr, found.Render); err != nil {
		return nil, err
	}
	rendered, err := render.Render(cr, found.Render)
	if err != nil {
		return nil, refusal.New(v1.ReasonInvalidSpec, "the scheduler cannot be configured from this spec: %v; correct the field it names", err)
	}
	where := fmt.Sprintf("profile type %s", cr.EffectiveProfile())
	if found.CustomConfigSource != "" {
		where = "the configuration in " + found.CustomConfigSource
	}
	if err := checkPluginsInImage(rendered, where); err != nil {
		return nil, err
	}
	if err := checkPluginCRDs(rendered.Config, found.Kinds, where); err != nil {
		return nil, err
	}
	if err := checkGangImplementation(cr, rendered, found.Kinds); err != nil {
		return nil, err
	}
	return rendered, nil
}
