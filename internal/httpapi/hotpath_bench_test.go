package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/store"
)

// The HTTP hot-path benchmarks run the whole stack in one process (client, server,
// broker, store) against a real database: push of a batch, and pop then ack of a
// batch. Their CPU profiles (-cpuprofile) show where a request's time goes; queen-bench
// measures the same routes with the broker as a separate process.

// benchServer serves a broker on a fresh database, logging nothing.
func benchServer(b *testing.B) *httptest.Server { return benchServerWith(b, Options{}) }

// benchServerWith is benchServer with the server's options.
func benchServerWith(b *testing.B, opts Options) *httptest.Server {
	b.Helper()
	st, err := store.Open(store.Options{ConnString: pgtest.NewDBURL(b), MaxConns: 8})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(st.Close)
	logger := slog.New(slog.DiscardHandler)
	srv := httptest.NewServer(New(opts, broker.New(broker.DefaultConfig(), st, logger), logger).Handler())
	b.Cleanup(srv.Close)
	return srv
}

// pushBody is a push of n items of benchPayload to queue q, partition p.
func pushBody(q, p string, n int) []byte {
	var body bytes.Buffer
	body.WriteString(`{"items":[`)
	for i := range n {
		if i > 0 {
			body.WriteByte(',')
		}
		fmt.Fprintf(&body, `{"queue":%q,"partition":%q,"payload":%s}`, q, p, benchPayload)
	}
	body.WriteString(`]}`)
	return body.Bytes()
}

// benchDo sends one request and returns the body, failing unless the status is want.
func benchDo(b *testing.B, c *http.Client, method, url string, body []byte, want int) []byte {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	if resp.StatusCode != want {
		b.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, out)
	}
	return out
}

func BenchmarkHTTPPush(b *testing.B) {
	for _, n := range []int{1, 100} {
		b.Run("batch="+strconv.Itoa(n), func(b *testing.B) {
			srv := benchServer(b)
			var worker atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(2)
			b.RunParallel(func(pb *testing.PB) {
				body := pushBody("bench", "p"+strconv.FormatInt(worker.Add(1), 10), n)
				for pb.Next() {
					benchDo(b, srv.Client(), http.MethodPost, srv.URL+"/api/v1/push", body, http.StatusCreated)
				}
			})
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "msg/s")
		})
	}
}

// BenchmarkHTTPPopAck times a cycle of push, pop and ack of one batch per worker, each
// worker on its own partition; the profile separates the three.
func BenchmarkHTTPPopAck(b *testing.B) {
	const batch = 100
	srv := benchServer(b)
	c := srv.Client()
	var popped atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(2)
	b.RunParallel(func(pb *testing.PB) {
		p := "p" + strconv.FormatInt(popped.Add(1), 10)
		push := pushBody("bench", p, batch)
		var res struct {
			Messages []struct {
				TransactionID string `json:"transactionId"`
				PartitionID   string `json:"partitionId"`
				LeaseID       string `json:"leaseId"`
			} `json:"messages"`
		}
		for pb.Next() {
			benchDo(b, c, http.MethodPost, srv.URL+"/api/v1/push", push, http.StatusCreated)
			out := benchDo(b, c, http.MethodGet, srv.URL+"/api/v1/pop/queue/bench/partition/"+p+"?batch=100&wait=false", nil, http.StatusOK)
			if err := json.Unmarshal(out, &res); err != nil || len(res.Messages) == 0 {
				b.Fatalf("pop: %v %s", err, out)
			}
			var ack bytes.Buffer
			ack.WriteString(`{"acknowledgments":[`)
			for i, m := range res.Messages {
				if i > 0 {
					ack.WriteByte(',')
				}
				fmt.Fprintf(&ack, `{"transactionId":%q,"partitionId":%q,"leaseId":%q,"status":"completed"}`,
					m.TransactionID, m.PartitionID, m.LeaseID)
			}
			ack.WriteString(`]}`)
			benchDo(b, c, http.MethodPost, srv.URL+"/api/v1/ack/batch", ack.Bytes(), http.StatusOK)
		}
	})
	b.ReportMetric(batch*float64(b.N)/b.Elapsed().Seconds(), "msg/s")
}
