package daemon

import (
	"context"
	"log/slog"
	"time"

	"github.com/queenmq/queen/internal/buildinfo"
	"github.com/queenmq/queen/internal/config"
	"github.com/queenmq/queen/internal/tracing"
)

// tracerFlushTimeout bounds the export of the spans still buffered at a stop.
const tracerFlushTimeout = 5 * time.Second

// newTracer starts the span exporter the OTEL_* settings ask for; nil (tracing off)
// unless OTEL_TRACES_EXPORTER=otlp.
func newTracer(ctx context.Context, cfg *config.Config, logger *slog.Logger) (*tracing.Tracer, error) {
	tc := cfg.Tracing
	if !tc.Enabled() {
		logger.Info("tracing", "exporter", "none")
		return nil, nil
	}
	o := tc.Effective()
	endpoint, isBase := tc.Traces.Endpoint, false
	if endpoint == "" {
		endpoint, isBase = tc.OTLP.Endpoint, true
	}
	t, err := tracing.New(ctx, tracing.Options{
		Endpoint: endpoint, EndpointIsBase: isBase, Protocol: o.Protocol, Headers: o.Headers,
		Timeout: o.Timeout, Gzip: o.Compression == "gzip", CAFile: o.Certificate,
		ClientCert: o.ClientCert, ClientKey: o.ClientKey,
		Sampler: tc.Sampler, SamplerRatio: tc.SamplerRatio,
		ServiceName: tc.ServiceName, Version: buildinfo.Version, Resource: tc.Resource,
		BatchDelay: tc.BatchDelay, BatchTimeout: tc.BatchTimeout, BatchQueue: tc.BatchQueue, BatchSize: tc.BatchSize,
	})
	if err != nil {
		return nil, err
	}
	logger.Info("tracing", "exporter", "otlp", "protocol", o.Protocol, "endpoint", endpoint,
		"sampler", tc.Sampler, "ratio", tc.SamplerRatio)
	return t, nil
}

// flushTracer exports the spans still buffered and stops the exporter.
func flushTracer(t *tracing.Tracer, logger *slog.Logger) {
	if t == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), tracerFlushTimeout)
	defer cancel()
	if err := t.Shutdown(ctx); err != nil {
		logger.Warn("tracing: spans not exported at stop", "err", err)
	}
}
