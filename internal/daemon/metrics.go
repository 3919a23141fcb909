package daemon

import (
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/buildinfo"
	"github.com/queenmq/queen/internal/store"
	"github.com/queenmq/queen/internal/telemetry"
)

// newTelemetry builds the process's own metrics registry (never the default one):
// the Go runtime and process collectors, queen_build_info and the broker's families.
// The HTTP server adds its own families to the same registry and serves it.
func newTelemetry(st *store.Store, b *broker.Broker, logger *slog.Logger) (*prometheus.Registry, *telemetry.Telemetry, error) {
	reg := prometheus.NewRegistry()
	if err := registerAll(reg,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		telemetry.NewBuildInfo(buildinfo.Version, buildinfo.Commit),
	); err != nil {
		return nil, nil, err
	}
	tel, err := telemetry.New(reg, telemetry.Options{
		Broker: b, Store: st, Logger: logger.With("component", "telemetry"),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("daemon: metrics: %w", err)
	}
	return reg, tel, nil
}

func registerAll(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("daemon: metrics: %w", err)
		}
	}
	return nil
}
