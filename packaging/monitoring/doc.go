// Package monitoring holds the Prometheus alerting rules (queen-alerts.yml), their
// promtool unit tests (queen-alerts.test.yml) and the Grafana dashboard
// (queen-dashboard.json) that the deb and rpm packages install under
// /usr/share/queen/monitoring/. It has no Go code of its own: its tests run promtool on
// the rules, check that every alert is tested and documented, and check, against a live
// broker's /metrics/prometheus, that every metric the rules and the dashboard query is
// one the broker exports. With -monitoring.screenshot=DIR (make monitoring-screenshot)
// a test also draws the dashboard's panels from their own queries, run by a real
// Prometheus scraping a broker under load, into the picture docs/observability.md
// shows. docs/observability.md ("Alerts", "Grafana dashboard") says how to use the
// files.
package monitoring
