package daemon_test

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	_ "google.golang.org/grpc/encoding/gzip" // the receiver takes gzip-compressed exports
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
	"google.golang.org/protobuf/proto"

	"github.com/queenmq/queen/internal/daemontest"
	"github.com/queenmq/queen/internal/testwait"
)

// receiver is an in-process OTLP trace collector: the spans every export brought.
type receiver struct {
	coltracepb.UnimplementedTraceServiceServer
	mu      sync.Mutex
	spans   []*tracepb.Span
	service []string // service.name of each resource seen
	auth    []string // the authorization header (HTTP) or metadata (gRPC) of each export
	enc     []string // the content encoding of each export
}

func (rc *receiver) add(req *coltracepb.ExportTraceServiceRequest) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		for _, a := range rs.GetResource().GetAttributes() {
			if a.GetKey() == "service.name" {
				rc.service = append(rc.service, a.GetValue().GetStringValue())
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			rc.spans = append(rc.spans, ss.GetSpans()...)
		}
	}
}

// Export is the gRPC TraceService's one method.
func (rc *receiver) Export(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	rc.mu.Lock()
	rc.auth = append(rc.auth, md.Get("authorization")...)
	rc.mu.Unlock()
	rc.add(req)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// ServeHTTP is OTLP/HTTP's POST /v1/traces with a protobuf body.
func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "not an OTLP/HTTP protobuf export", http.StatusNotFound)
		return
	}
	var rd io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rd = zr
	}
	body, err := io.ReadAll(rd)
	req := &coltracepb.ExportTraceServiceRequest{}
	if err == nil {
		err = proto.Unmarshal(body, req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	rc.auth = append(rc.auth, r.Header.Get("Authorization"))
	rc.enc = append(rc.enc, r.Header.Get("Content-Encoding"))
	rc.mu.Unlock()
	rc.add(req)
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// find returns the spans named name (or starting with name+" ") of trace traceID.
func (rc *receiver) find(traceID, name string) []*tracepb.Span {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range rc.spans {
		if hex.EncodeToString(s.GetTraceId()) == traceID && (s.GetName() == name || strings.HasPrefix(s.GetName(), name+" ")) {
			out = append(out, s)
		}
	}
	return out
}

func attr(s *tracepb.Span, key string) string {
	for _, a := range s.GetAttributes() {
		if a.GetKey() == key {
			if v := a.GetValue().GetStringValue(); v != "" {
				return v
			}
			return fmt.Sprint(a.GetValue().GetIntValue())
		}
	}
	return ""
}

func startHTTPReceiver(t *testing.T) (*receiver, string) {
	t.Helper()
	rc := &receiver{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: rc, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return rc, "http://" + ln.Addr().String()
}

// encodings records the compression of each gRPC request the receiver gets.
type encodings struct{ rc *receiver }

func (e encodings) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context   { return ctx }
func (e encodings) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (e encodings) HandleConn(context.Context, stats.ConnStats)                       {}
func (e encodings) HandleRPC(_ context.Context, s stats.RPCStats) {
	if h, ok := s.(*stats.InHeader); ok {
		e.rc.mu.Lock()
		e.rc.enc = append(e.rc.enc, h.Compression)
		e.rc.mu.Unlock()
	}
}

func startGRPCReceiver(t *testing.T) (*receiver, string) {
	t.Helper()
	rc := &receiver{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer(grpc.StatsHandler(encodings{rc}))
	coltracepb.RegisterTraceServiceServer(srv, rc)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return rc, "http://" + ln.Addr().String()
}

const (
	producerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	producerSpan  = "00f067aa0ba902b7"
)

// traceCall sends a request carrying the producer's trace context, requires a 2xx
// answer and decodes it into out (unless nil).
func traceCall(t *testing.T, tb *testBundle, method, path, body string, out any) {
	t.Helper()
	code, b := tb.raw(t, method, path, body,
		"traceparent", "00-"+producerTrace+"-"+producerSpan+"-01", "tracestate", "vendor=abc")
	require.Less(t, code, 300, string(b))
	if out != nil {
		require.NoError(t, json.Unmarshal(b, out), string(b))
	}
}

type popped struct {
	LeaseID  string `json:"leaseId"`
	Messages []struct {
		TransactionID string `json:"transactionId"`
		PartitionID   string `json:"partitionId"`
		Traceparent   string `json:"traceparent"`
		Tracestate    string `json:"tracestate"`
	} `json:"messages"`
}

// TestPushedTraceContextReachesTheConsumerAndTheCollector pushes under a producer's
// traceparent to a broker exporting to an in-process OTLP receiver, over HTTP and over
// gRPC. The receiver gets the broker's push span in the producer's trace, a child of
// the producer's span, naming the queue and partition; the popped message carries the
// push span's context (same trace) and the producer's tracestate; the pop span links
// to it and the ack and transaction spans arrive too.
func TestPushedTraceContextReachesTheConsumerAndTheCollector(t *testing.T) {
	t.Parallel()
	for _, proto := range []string{"http/protobuf", "grpc"} {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			rc, endpoint := startHTTPReceiver(t)
			if proto == "grpc" {
				rc, endpoint = startGRPCReceiver(t)
			}
			tb := serve(t, daemontest.Options{Env: []string{
				"OTEL_TRACES_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_PROTOCOL=" + proto,
				"OTEL_EXPORTER_OTLP_ENDPOINT=" + endpoint, "OTEL_BSP_SCHEDULE_DELAY=50",
				"OTEL_SERVICE_NAME=queen-test", "OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer%20collector-token",
				"OTEL_EXPORTER_OTLP_COMPRESSION=gzip",
			}})
			traceCall(t, tb, http.MethodPost, "/api/v1/push",
				`{"items":[{"queue":"traced","partition":"p1","transactionId":"t1","payload":{"n":1}}]}`, nil)
			var got popped
			traceCall(t, tb, http.MethodGet, "/api/v1/pop/queue/traced?consumerGroup=billing&batch=1&wait=false", "", &got)
			require.Len(t, got.Messages, 1)
			m := got.Messages[0]
			traceCall(t, tb, http.MethodPost, "/api/v1/ack", fmt.Sprintf(
				`{"transactionId":%q,"partitionId":%q,"leaseId":%q,"status":"completed","consumerGroup":"billing"}`,
				m.TransactionID, m.PartitionID, got.LeaseID), nil)
			traceCall(t, tb, http.MethodPost, "/api/v1/transaction",
				`{"operations":[{"type":"push","items":[{"queue":"traced","partition":"p2","payload":{"n":2}}]}]}`, nil)

			var push, pop, ack, tx *tracepb.Span
			testwait.For(t, 20*time.Second, 50*time.Millisecond, func() error {
				for _, want := range []struct {
					name string
					dst  **tracepb.Span
				}{{"push", &push}, {"pop", &pop}, {"ack", &ack}, {"transaction", &tx}} {
					spans := rc.find(producerTrace, want.name)
					if len(spans) == 0 {
						return fmt.Errorf("no %s span in the producer's trace yet", want.name)
					}
					*want.dst = spans[0]
				}
				return nil
			})
			require.Equal(t, "push traced", push.GetName())
			require.Equal(t, producerSpan, hex.EncodeToString(push.GetParentSpanId()), "the push span is the producer span's child")
			require.Equal(t, tracepb.Span_SPAN_KIND_SERVER, push.GetKind())
			require.Equal(t, "traced", attr(push, "messaging.destination.name"))
			require.Equal(t, "p1", attr(push, "messaging.destination.partition.id"))
			require.Equal(t, "queen", attr(push, "messaging.system"))
			require.Equal(t, "send", attr(push, "messaging.operation.type"))
			require.Equal(t, "201", attr(push, "http.response.status_code"))

			pushCtx := "00-" + producerTrace + "-" + hex.EncodeToString(push.GetSpanId()) + "-01"
			require.Equal(t, pushCtx, m.Traceparent, "the popped message continues the trace from the broker's push span")
			require.Equal(t, "vendor=abc", m.Tracestate)

			require.Equal(t, "pop traced", pop.GetName())
			require.Equal(t, "billing", attr(pop, "messaging.consumer.group.name"))
			require.Equal(t, "1", attr(pop, "messaging.batch.message_count"))
			require.Len(t, pop.GetLinks(), 1)
			require.Equal(t, push.GetSpanId(), pop.GetLinks()[0].GetSpanId(), "the pop span links to the message's push")
			require.Equal(t, "billing", attr(ack, "messaging.consumer.group.name"))
			require.Equal(t, "settle", attr(ack, "messaging.operation.type"))
			require.Equal(t, "1", attr(tx, "messaging.batch.message_count"))
			require.Equal(t, "transaction traced", tx.GetName())
			require.Equal(t, "p2", attr(tx, "messaging.destination.partition.id"))

			rc.mu.Lock()
			require.Contains(t, rc.service, "queen-test")
			require.Contains(t, rc.auth, "Bearer collector-token", "OTEL_EXPORTER_OTLP_HEADERS go with every export")
			require.Contains(t, rc.enc, "gzip", "OTEL_EXPORTER_OTLP_COMPRESSION=gzip compresses the exports")
			rc.mu.Unlock()
		})
	}
}

// TestTraceContextIsStoredWithTracingOff pushes under a traceparent to a broker that
// exports nothing: the popped message carries the producer's own context, unchanged;
// a message pushed without one has none (no key in the answer).
func TestTraceContextIsStoredWithTracingOff(t *testing.T) {
	t.Parallel()
	tb := startBroker(t)
	traceCall(t, tb, http.MethodPost, "/api/v1/push",
		`{"items":[{"queue":"plain","partition":"p","transactionId":"a","payload":1}]}`, nil)
	code, b := tb.raw(t, http.MethodPost, "/api/v1/push",
		`{"items":[{"queue":"plain","partition":"p","transactionId":"b","payload":2}]}`)
	require.Equal(t, http.StatusCreated, code, string(b))

	code, raw := tb.raw(t, http.MethodGet, "/api/v1/pop/queue/plain?batch=2&wait=false", "")
	require.Equal(t, http.StatusOK, code, string(raw))
	var got popped
	require.NoError(t, json.Unmarshal(raw, &got), string(raw))
	require.Len(t, got.Messages, 2)
	require.Equal(t, "00-"+producerTrace+"-"+producerSpan+"-01", got.Messages[0].Traceparent)
	require.Equal(t, "vendor=abc", got.Messages[0].Tracestate)
	require.Empty(t, got.Messages[1].Traceparent)
	require.Equal(t, 1, strings.Count(string(raw), `"traceparent"`), "a message without a context has no traceparent key")
}
