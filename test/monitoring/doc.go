// Package monitoring tests the optional monitoring component
// (deploy/kustomize/components/monitoring) as a whole: the alerting rules
// run through Prometheus' own rule unit tests (promtool), every metric the
// rules and the dashboard read is one the binaries register, every alert
// says what it means and where its runbook is (docs/operations.md's alert table and
// runbook anchors are checked by make generate), and the component renders
// on top of the release base with its ServiceMonitors reaching the metrics
// ports. Alerts are only worth shipping if they fire when they should, stay
// quiet when they should, and point someone at what to do.
package monitoring
