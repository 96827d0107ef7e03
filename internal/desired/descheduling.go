package desired

import (
	"net/url"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/usertext"
)

// checkDescheduling refuses, before anything is rendered, a spec.descheduling that would
// fight its scheduler or never act (render.Thresholds says which), and one whose
// descheduler could not read the scheduler's Prometheus, each with its own reason.
func checkDescheduling(cr *v1.SecondaryScheduler, facts render.Facts) error {
	if cr.Spec.Descheduling == nil {
		return nil
	}
	if _, err := render.Thresholds(cr); err != nil {
		return err
	}
	return checkDeschedulerReachesPrometheus(render.PrometheusURL(cr, facts), facts.TrustedCA != nil)
}

// checkDeschedulerReachesPrometheus refuses an HTTPS Prometheus that the descheduler's
// client (pkg/descheduler/client/client.go of sigs.k8s.io/descheduler v0.36.0) cannot
// verify, as found with the real binary. It always presents a token (the scheduler's, or
// a placeholder: render's deschedulerNoToken), and with one:
//   - it trusts only the CA file at the ServiceAccount path, where the operator mounts the
//     scheduler's caBundle: without one, no certificate verifies;
//   - it verifies the certificate for the URL's host *with its port* ("x509: certificate
//     is valid for localhost, not localhost:9395"): an address with a port never verifies.
func checkDeschedulerReachesPrometheus(address string, caBundle bool) error {
	parsed, err := url.Parse(address)
	if err != nil || parsed.Scheme != "https" {
		return nil // http, or an address the scheduler's own checks refuse
	}
	switch {
	case parsed.Port() != "":
		return refusal.New(v1.ReasonDeschedulerCannotReadPrometheus,
			"the descheduler of spec.descheduling reads %s over HTTPS, and its Prometheus client verifies the certificate "+
				"for the host with its port (%s), which no certificate names: give profile.metrics.address without a port, through "+
				"a Service that serves Prometheus on 443, or remove spec.descheduling", usertext.Cut(address, 200), parsed.Host)
	case !caBundle:
		return refusal.New(v1.ReasonDeschedulerCannotReadPrometheus,
			"the descheduler of spec.descheduling reads %s over HTTPS, and its Prometheus client trusts only the CA "+
				"bundle it is given, none without profile.metrics.caBundle: name the ConfigMap of the CA that signed Prometheus' "+
				"certificate in profile.metrics.caBundle, or remove spec.descheduling", usertext.Cut(address, 200))
	}
	return nil
}
