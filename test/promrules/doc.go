// Package promrules holds the tests of the alert rules the operator ships
// (bindata/assets/monitoring/alert-rules.yaml, copied to config/prometheus): promtool
// checks and evaluates them against the unit tests in alerts_test.yaml, and Go tests keep
// them joined to what they refer to: the copy in config/prometheus, a runbook per alert in
// docs/runbooks.md that covers the reasons the operator reports, and every metric they
// read documented in docs/monitoring.md. An alert that never fires, or fires with a dead
// link, is found here rather than during an outage.
package promrules
