package config

import (
	"time"

	"github.com/queenmq/queen/internal/envvalue"
)

// Tracing is the span exporter's configuration, from the standard OpenTelemetry
// variables (docs/tracing.md). Each OTLP setting has a general variable and a
// traces-only one (OTEL_EXPORTER_OTLP_TRACES_*) that wins over it when set.
type Tracing struct {
	Disabled     bool   // OTEL_SDK_DISABLED
	Exporter     string // OTEL_TRACES_EXPORTER: "none" (default) or "otlp"
	Sampler      string // OTEL_TRACES_SAMPLER
	SamplerRatio float64
	ServiceName  string            // OTEL_SERVICE_NAME
	Resource     map[string]string // OTEL_RESOURCE_ATTRIBUTES
	BatchDelay   time.Duration     // OTEL_BSP_SCHEDULE_DELAY
	BatchTimeout time.Duration     // OTEL_BSP_EXPORT_TIMEOUT
	BatchQueue   int               // OTEL_BSP_MAX_QUEUE_SIZE
	BatchSize    int               // OTEL_BSP_MAX_EXPORT_BATCH_SIZE
	// OTLP is OTEL_EXPORTER_OTLP_*, Traces OTEL_EXPORTER_OTLP_TRACES_*.
	OTLP, Traces OTLP
}

// OTLP is one set of OTLP exporter variables; empty (zero) fields are unset.
type OTLP struct {
	Protocol    string // http/protobuf or grpc
	Endpoint    string
	Headers     map[string]string
	Timeout     time.Duration
	Compression string // none or gzip
	Certificate string // CA file
	ClientCert  string
	ClientKey   string
}

// Enabled reports whether spans are exported.
func (t Tracing) Enabled() bool { return !t.Disabled && t.Exporter == "otlp" }

// Effective returns the OTLP settings that apply: each traces-only one when set, else
// the general one.
func (t Tracing) Effective() OTLP {
	o, tr := t.OTLP, t.Traces
	pick := func(specific, general string) string {
		if specific != "" {
			return specific
		}
		return general
	}
	out := OTLP{
		Protocol: pick(tr.Protocol, o.Protocol), Endpoint: pick(tr.Endpoint, o.Endpoint),
		Compression: pick(tr.Compression, o.Compression), Certificate: pick(tr.Certificate, o.Certificate),
		ClientCert: pick(tr.ClientCert, o.ClientCert), ClientKey: pick(tr.ClientKey, o.ClientKey),
		Headers: o.Headers, Timeout: o.Timeout,
	}
	if tr.Headers != nil {
		out.Headers = tr.Headers
	}
	if tr.Timeout > 0 {
		out.Timeout = tr.Timeout
	}
	return out
}

// tracingSettings: OpenTelemetry's standard variables for the trace exporter.
func tracingSettings() []setting {
	out := []setting{
		{
			name: "OTEL_SDK_DISABLED", def: "false", group: groupTracing,
			doc:  "`true` turns tracing off whatever `OTEL_TRACES_EXPORTER` says.",
			bind: func(c *Config) value { return envvalue.Bool{P: &c.Tracing.Disabled} },
		},
		{
			name: "OTEL_TRACES_EXPORTER", def: "none", group: groupTracing,
			doc: "`otlp` exports the broker's spans for push, pop, ack and transactions over OTLP " +
				"(docs/tracing.md); `none` exports nothing. Off by default, unlike OpenTelemetry's own " +
				"default (`otlp`): a broker does not send data anywhere unless asked. Trace contexts a " +
				"producer sends are stored with its messages either way.",
			bind: func(c *Config) value {
				return envvalue.Enum{P: &c.Tracing.Exporter, Options: []string{"none", "otlp"}}
			},
		},
		{
			name: "OTEL_TRACES_SAMPLER", def: "parentbased_always_on", group: groupTracing,
			doc: "Which traces are recorded: `always_on`, `always_off`, `traceidratio` (the share " +
				"`OTEL_TRACES_SAMPLER_ARG` of traces), or `parentbased_…` of each (follow the caller's " +
				"sampling decision in `traceparent`, else the named one).",
			bind: func(c *Config) value {
				return envvalue.Enum{P: &c.Tracing.Sampler, Options: []string{
					"always_on", "always_off", "traceidratio",
					"parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio",
				}}
			},
		},
		{
			name: "OTEL_TRACES_SAMPLER_ARG", def: "1", group: groupTracing,
			doc:  "The share of traces the `traceidratio` samplers record: `0.01` is 1 %.",
			bind: func(c *Config) value { return envvalue.Float{P: &c.Tracing.SamplerRatio, Min: 0, Max: 1} },
		},
		{
			name: "OTEL_SERVICE_NAME", def: "queen", group: groupTracing,
			doc:  "The `service.name` of the spans.",
			bind: func(c *Config) value { return envvalue.Text{P: &c.Tracing.ServiceName} },
		},
		{
			name: "OTEL_RESOURCE_ATTRIBUTES", def: "", group: groupTracing,
			doc: "More resource attributes of the spans, `key=value,key=value` with percent-encoded " +
				"values (e.g. `deployment.environment=prod`). `service.name` is `OTEL_SERVICE_NAME`'s.",
			bind: func(c *Config) value { return envvalue.Pairs{P: &c.Tracing.Resource} },
		},
		{
			name: "OTEL_BSP_SCHEDULE_DELAY", def: "5000", group: groupTracing,
			doc:  "Milliseconds between two exports of the spans recorded meanwhile.",
			bind: func(c *Config) value { return ms(&c.Tracing.BatchDelay, 1) },
		},
		{
			name: "OTEL_BSP_EXPORT_TIMEOUT", def: "30000", group: groupTracing,
			doc:  "Milliseconds one export of a batch may take, retries included.",
			bind: func(c *Config) value { return ms(&c.Tracing.BatchTimeout, 1) },
		},
		{
			name: "OTEL_BSP_MAX_QUEUE_SIZE", def: "2048", group: groupTracing,
			doc: "Spans kept in memory waiting for an export; past it new spans are dropped (a slow " +
				"or unreachable collector never slows the broker).",
			bind: func(c *Config) value { return envvalue.Int[int]{P: &c.Tracing.BatchQueue, Min: 1, Max: 1 << 20} },
		},
		{
			name: "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", def: "512", group: groupTracing,
			doc:  "Spans per export request; at most `OTEL_BSP_MAX_QUEUE_SIZE`.",
			bind: func(c *Config) value { return envvalue.Int[int]{P: &c.Tracing.BatchSize, Min: 1, Max: 1 << 20} },
		},
	}
	return append(out, append(otlpSettings("OTEL_EXPORTER_OTLP_", false),
		otlpSettings("OTEL_EXPORTER_OTLP_TRACES_", true)...)...)
}

// otlpSettings are the OTLP exporter variables under prefix; traces selects the
// traces-only set, whose unset values fall back to the general ones.
func otlpSettings(prefix string, traces bool) []setting {
	field := func(c *Config) *OTLP {
		if traces {
			return &c.Tracing.Traces
		}
		return &c.Tracing.OTLP
	}
	def := func(general string) string {
		if traces {
			return ""
		}
		return general
	}
	also := func(doc string) string {
		if traces {
			return doc + " Traces only; unset, the general variable's value applies."
		}
		return doc
	}
	unset := []string{""}
	if !traces {
		unset = nil
	}
	timeoutDef, timeoutMin, timeoutDoc := "10000", int64(1), ""
	endpointDef := "http://localhost:4318 (HTTP), http://localhost:4317 (gRPC)"
	endpointDoc := "The collector's base URL; HTTP exports go to its `/v1/traces`. `https` uses TLS, `http` does not."
	if traces {
		timeoutDef, timeoutMin, timeoutDoc = "0", 0, " 0: unset."
		endpointDef = ""
		endpointDoc = "The collector's URL for traces, used as it is (no path is added)."
	}
	return []setting{
		{
			name: prefix + "PROTOCOL", def: def("http/protobuf"), group: groupTracing,
			doc: also("The OTLP transport: `http/protobuf` or `grpc` (`http/json` is not supported)."),
			bind: func(c *Config) value {
				return envvalue.Enum{P: &field(c).Protocol, Options: append(unset, "http/protobuf", "grpc")}
			},
		},
		{
			name: prefix + "ENDPOINT", def: "", group: groupTracing,
			defDoc: endpointDef, doc: also(endpointDoc),
			bind: func(c *Config) value { return envvalue.URL{P: &field(c).Endpoint} },
		},
		{
			name: prefix + "HEADERS", def: "", group: groupTracing, secret: true,
			doc: also("Headers sent with every export, `key=value,key=value` with percent-encoded values " +
				"(e.g. an `authorization` token)."),
			bind: func(c *Config) value { return envvalue.Pairs{P: &field(c).Headers} },
		},
		{
			name: prefix + "TIMEOUT", def: timeoutDef, group: groupTracing,
			doc:  also("Milliseconds one export request may take." + timeoutDoc),
			bind: func(c *Config) value { return ms(&field(c).Timeout, timeoutMin) },
		},
		{
			name: prefix + "COMPRESSION", def: def("none"), group: groupTracing,
			doc: also("`gzip` compresses exports; `none` does not."),
			bind: func(c *Config) value {
				return envvalue.Enum{P: &field(c).Compression, Options: append(unset, "none", "gzip")}
			},
		},
		{
			name: prefix + "CERTIFICATE", def: "", group: groupTracing,
			doc:  also("PEM file of the CA certificates that verify the collector (default: the system's)."),
			bind: func(c *Config) value { return envvalue.Text{P: &field(c).Certificate} },
		},
		{
			name: prefix + "CLIENT_CERTIFICATE", def: "", group: groupTracing,
			doc:  also("PEM file of the client certificate for mutual TLS, with the key below."),
			bind: func(c *Config) value { return envvalue.Text{P: &field(c).ClientCert} },
		},
		{
			name: prefix + "CLIENT_KEY", def: "", group: groupTracing,
			doc:  also("PEM file of the client certificate's private key."),
			bind: func(c *Config) value { return envvalue.Text{P: &field(c).ClientKey} },
		},
	}
}
