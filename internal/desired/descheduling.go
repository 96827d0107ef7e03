package desired

import (
	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// checkDescheduling refuses, before anything is rendered, a spec.descheduling that would
// fight its scheduler or never act (render.Thresholds says which), with its own reason.
func checkDescheduling(cr *v1.SecondaryScheduler) error {
	if cr.Spec.Descheduling == nil {
		return nil
	}
	_, err := render.Thresholds(cr)
	return err
}
