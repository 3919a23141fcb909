package telemetry

import (
	"runtime"

	"github.com/prometheus/client_golang/prometheus"
)

// NewBuildInfo returns the constant queen_build_info{version,revision,goversion} 1,
// which dashboards join on to show what each replica runs.
func NewBuildInfo(version, revision string) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: namespace, Name: "build_info",
		Help: "Always 1; the labels name the version, VCS revision and Go toolchain of the binary: " +
			"join on it to show what each replica runs.",
		ConstLabels: prometheus.Labels{
			"version": version, "revision": revision, "goversion": runtime.Version(),
		},
	}, func() float64 { return 1 })
}
