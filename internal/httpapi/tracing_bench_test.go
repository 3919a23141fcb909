package httpapi

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/queenmq/queen/internal/tracing"
)

// BenchmarkHTTPPushTracing is BenchmarkHTTPPush with tracing off, on at 1 % sampling
// (traceidratio 0.01) and on for every request, exporting over OTLP/HTTP to an
// in-process collector that accepts every export. Each request carries a producer's
// traceparent that the broker stores with its messages. Compare the sub-benchmarks of
// one run: their ratio is the cost of tracing (docs/benchmarks.md).
func BenchmarkHTTPPushTracing(b *testing.B) {
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK) // an empty ExportTraceServiceResponse
	}))
	b.Cleanup(collector.Close)
	for _, n := range []int{1, 100} {
		for _, mode := range []struct {
			name  string
			ratio float64 // < 0: off
		}{{"off", -1}, {"1pct", 0.01}, {"all", 1}} {
			b.Run("batch="+strconv.Itoa(n)+"/tracing="+mode.name, func(b *testing.B) {
				var opts Options
				if mode.ratio >= 0 {
					t, err := tracing.New(b.Context(), tracing.Options{
						Endpoint: collector.URL, EndpointIsBase: true, Sampler: tracing.SamplerRatio, SamplerRatio: mode.ratio,
					})
					if err != nil {
						b.Fatal(err)
					}
					b.Cleanup(func() { _ = t.Shutdown(b.Context()) })
					opts.Tracer = t
				}
				srv := benchServerWith(b, opts)
				var worker atomic.Int64
				b.ReportAllocs()
				b.SetParallelism(2)
				b.RunParallel(func(pb *testing.PB) {
					body := pushBody("bench", "p"+strconv.FormatInt(worker.Add(1), 10), n)
					for pb.Next() {
						req, err := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/push", bytes.NewReader(body))
						if err != nil {
							b.Fatal(err)
						}
						req.Header.Set("Content-Type", "application/json")
						req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")
						resp, err := srv.Client().Do(req)
						if err != nil {
							b.Fatal(err)
						}
						_, _ = io.Copy(io.Discard, resp.Body)
						_ = resp.Body.Close()
						if resp.StatusCode != http.StatusCreated {
							b.Fatalf("push: %d", resp.StatusCode)
						}
					}
				})
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "msg/s")
			})
		}
	}
}
