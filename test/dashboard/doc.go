// Package dashboard holds the tests of the Grafana dashboard the project ships
// (config/grafana/secondary-schedulers.json), and reads it for the end-to-end suite.
//
// Grafana shows a broken query as an empty panel, which looks like a quiet cluster: a
// typo, a metric renamed in the operator, a panel that forgets the namespace filter and
// mixes in the cluster's own kube-scheduler are all found by nobody until an outage. The
// tests here find them first: promtool parses every query, every metric a query names is
// documented in docs/monitoring.md (the contract of names and labels the operator keeps),
// every query of a series that carries namespace and secondary_scheduler filters by the
// dashboard's variables, and every panel says what it shows. The end-to-end suite uses
// MetricNames to check that a real scrape of the operator and a scheduler returns every
// metric the dashboard queries.
package dashboard
