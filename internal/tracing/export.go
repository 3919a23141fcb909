package tracing

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"
	"os"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/grpc/credentials"
)

// Protocols of the OTLP exporter.
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// Samplers by their OTEL_TRACES_SAMPLER names.
const (
	SamplerAlwaysOn             = "always_on"
	SamplerAlwaysOff            = "always_off"
	SamplerRatio                = "traceidratio"
	SamplerParentAlwaysOn       = "parentbased_always_on"
	SamplerParentAlwaysOff      = "parentbased_always_off"
	SamplerParentRatio          = "parentbased_traceidratio"
	instrumentationScope        = "github.com/queenmq/queen"
	defaultHTTPEndpoint         = "http://localhost:4318"
	defaultGRPCEndpoint         = "http://localhost:4317"
	httpTracesPath              = "/v1/traces"
	defaultExportTimeout        = 10 * time.Second
	defaultBatchDelay           = 5 * time.Second
	defaultBatchExportTimeout   = 30 * time.Second
	defaultBatchMaxQueueSize    = 2048
	defaultBatchMaxExportBatch  = 512
	defaultServiceName          = "queen"
	serviceVersionAttributeName = "service.version"
)

// Options are the exporter's settings, validated by the caller (internal/config reads
// them from the standard OTEL_* variables). Zero values take the OpenTelemetry defaults.
type Options struct {
	// Endpoint is OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (a full URL, used as it is) or,
	// when that is unset, OTEL_EXPORTER_OTLP_ENDPOINT (a base URL: HTTP adds
	// /v1/traces). The scheme decides TLS: http is plaintext, https is TLS.
	Endpoint string
	// EndpointIsBase is true when Endpoint came from OTEL_EXPORTER_OTLP_ENDPOINT.
	EndpointIsBase bool
	Protocol       string            // ProtocolHTTP (default) or ProtocolGRPC
	Headers        map[string]string // sent with every export
	Timeout        time.Duration     // of one export
	Gzip           bool              // compress exports
	CAFile         string            // PEM file of the CAs to trust, "" for the system's
	ClientCert     string            // PEM file of a client certificate, with ClientKey
	ClientKey      string
	Sampler        string  // one of the Sampler* names; "" is SamplerParentAlwaysOn
	SamplerRatio   float64 // for the ratio samplers, in [0, 1]
	ServiceName    string  // "" is "queen"
	Version        string  // service.version
	Resource       map[string]string
	BatchDelay     time.Duration // OTEL_BSP_SCHEDULE_DELAY
	BatchTimeout   time.Duration // OTEL_BSP_EXPORT_TIMEOUT
	BatchQueue     int           // OTEL_BSP_MAX_QUEUE_SIZE
	BatchSize      int           // OTEL_BSP_MAX_EXPORT_BATCH_SIZE
}

// New starts the exporter and returns a Tracer exporting through it. The exporter
// connects lazily: an unreachable collector costs dropped spans, not a failed start.
func New(ctx context.Context, o Options) (*Tracer, error) {
	exp, err := newExporter(ctx, o)
	if err != nil {
		return nil, err
	}
	sampler, err := newSampler(o.Sampler, o.SamplerRatio)
	if err != nil {
		return nil, err
	}
	attrs := make([]attribute.KeyValue, 0, len(o.Resource)+2)
	for k, v := range o.Resource {
		attrs = append(attrs, attribute.String(k, v))
	}
	name := o.ServiceName
	if name == "" {
		name = defaultServiceName
	}
	attrs = append(attrs, attribute.String("service.name", name))
	if o.Version != "" {
		attrs = append(attrs, attribute.String(serviceVersionAttributeName, o.Version))
	}
	provider := sdktrace.NewTracerProvider(
		sdktrace.WithResource(resource.NewSchemaless(attrs...)),
		sdktrace.WithSampler(sampler),
		// The SDK's defaults, set here so that no OTEL_SPAN_* variable changes them
		// behind the settings table.
		sdktrace.WithRawSpanLimits(sdktrace.SpanLimits{
			AttributeValueLengthLimit: -1, AttributeCountLimit: 128, EventCountLimit: 128, LinkCountLimit: maxLinks,
			AttributePerEventCountLimit: 128, AttributePerLinkCountLimit: 128,
		}),
		sdktrace.WithBatcher(exp,
			sdktrace.WithBatchTimeout(orDefault(o.BatchDelay, defaultBatchDelay)),
			sdktrace.WithExportTimeout(orDefault(o.BatchTimeout, defaultBatchExportTimeout)),
			sdktrace.WithMaxQueueSize(orDefault(o.BatchQueue, defaultBatchMaxQueueSize)),
			sdktrace.WithMaxExportBatchSize(orDefault(o.BatchSize, defaultBatchMaxExportBatch))),
	)
	return &Tracer{provider: provider, tracer: provider.Tracer(instrumentationScope)}, nil
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// newSampler builds the sampler named by OTEL_TRACES_SAMPLER.
func newSampler(name string, ratio float64) (sdktrace.Sampler, error) {
	switch name {
	case SamplerAlwaysOn:
		return sdktrace.AlwaysSample(), nil
	case SamplerAlwaysOff:
		return sdktrace.NeverSample(), nil
	case SamplerRatio:
		return sdktrace.TraceIDRatioBased(ratio), nil
	case "", SamplerParentAlwaysOn:
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case SamplerParentAlwaysOff:
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case SamplerParentRatio:
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio)), nil
	}
	return nil, fmt.Errorf("tracing: unknown sampler %q", name)
}

// newExporter builds the OTLP exporter of o.Protocol.
func newExporter(ctx context.Context, o Options) (*otlptrace.Exporter, error) {
	tlsConf, err := tlsConfig(o)
	if err != nil {
		return nil, err
	}
	timeout := orDefault(o.Timeout, defaultExportTimeout)
	switch o.Protocol {
	case "", ProtocolHTTP:
		endpoint := orDefault(o.Endpoint, defaultHTTPEndpoint)
		if o.Endpoint == "" || o.EndpointIsBase {
			if endpoint, err = url.JoinPath(endpoint, httpTracesPath); err != nil {
				return nil, fmt.Errorf("tracing: endpoint: %w", err)
			}
		}
		opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(endpoint), otlptracehttp.WithTimeout(timeout),
			otlptracehttp.WithHeaders(o.Headers)}
		if tlsConf != nil {
			opts = append(opts, otlptracehttp.WithTLSClientConfig(tlsConf))
		}
		if o.Gzip {
			opts = append(opts, otlptracehttp.WithCompression(otlptracehttp.GzipCompression))
		} else {
			opts = append(opts, otlptracehttp.WithCompression(otlptracehttp.NoCompression))
		}
		return otlptracehttp.New(ctx, opts...)
	case ProtocolGRPC:
		endpoint := orDefault(o.Endpoint, defaultGRPCEndpoint)
		opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpointURL(endpoint), otlptracegrpc.WithTimeout(timeout),
			otlptracegrpc.WithHeaders(o.Headers)}
		if tlsConf != nil {
			opts = append(opts, otlptracegrpc.WithTLSCredentials(credentials.NewTLS(tlsConf)))
		}
		if o.Gzip {
			opts = append(opts, otlptracegrpc.WithCompressor("gzip"))
		}
		return otlptracegrpc.New(ctx, opts...)
	}
	return nil, fmt.Errorf("tracing: unknown protocol %q", o.Protocol)
}

// tlsConfig is the TLS of the exporter's connection: nil (the exporter's default,
// the system's CAs for an https endpoint) unless a CA or client certificate is given.
func tlsConfig(o Options) (*tls.Config, error) {
	if o.CAFile == "" && o.ClientCert == "" {
		return nil, nil
	}
	conf := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tracing: CA certificate: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tracing: CA certificate %s holds no PEM certificate", o.CAFile)
		}
		conf.RootCAs = pool
	}
	if o.ClientCert != "" || o.ClientKey != "" {
		cert, err := tls.LoadX509KeyPair(o.ClientCert, o.ClientKey)
		if err != nil {
			return nil, fmt.Errorf("tracing: client certificate: %w", err)
		}
		conf.Certificates = []tls.Certificate{cert}
	}
	return conf, nil
}
