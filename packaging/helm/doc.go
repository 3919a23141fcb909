// Package helm holds the tests of the Helm chart in packaging/helm/queen; it has no
// code of its own.
//
// The tests use Helm's Go packages as the helm command does: they lint the chart,
// render it for a matrix of values (the defaults, three replicas, queen-proxy on,
// queen-proxy with monitoring on a cluster that serves monitoring.coreos.com/v1,
// existing Secrets, a persistent spool, settings read from the user's Secrets with
// secretEnv) and decode every rendered object strictly (an unknown or duplicate field
// is an error) into its k8s.io/api or prometheus-operator type. They then check the
// objects against the binaries: each probe GETs a route a broker or queen-proxy
// started by the test serves, each environment variable is a setting of the broker's
// or the proxy's settings table and the whole environment loads without an error;
// values.schema.json refuses replicas outside 1–3; the plain manifests of
// packaging/kubernetes agree with the chart rendered with their values; and the
// chart's copies of the alert rules and the Grafana dashboard are those of
// packaging/monitoring, its list of the broker's settings that of the broker.
package helm
