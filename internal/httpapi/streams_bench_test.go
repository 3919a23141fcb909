package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
)

// BenchmarkHTTPStreamCycle times one stream step per worker and partition: push a batch
// to the source, pop it, then commit it. route=cycle commits through /streams/v1/cycle
// (one state upsert and one sink item per message, and the ack of the batch);
// route=transaction, the baseline of the same run, commits the same sink items and an
// ack per message through /api/v1/transaction, without state.
func BenchmarkHTTPStreamCycle(b *testing.B) {
	const batch = 10
	for _, route := range []string{"cycle", "transaction"} {
		b.Run("route="+route, func(b *testing.B) {
			srv := benchServer(b)
			c := srv.Client()
			var reg struct {
				QueryID string `json:"query_id"`
			}
			out := benchDo(b, c, http.MethodPost, srv.URL+"/streams/v1/queries",
				[]byte(`{"name":"bench","source_queue":"src","sink_queue":"sink","config_hash":"h"}`), http.StatusOK)
			if err := json.Unmarshal(out, &reg); err != nil {
				b.Fatal(err)
			}
			var worker atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(2)
			b.RunParallel(func(pb *testing.PB) {
				p := "p" + strconv.FormatInt(worker.Add(1), 10)
				push := pushBody("src", p, batch)
				var res struct {
					PartitionID string `json:"partitionId"`
					LeaseID     string `json:"leaseId"`
					Messages    []struct {
						TransactionID string `json:"transactionId"`
					} `json:"messages"`
				}
				for pb.Next() {
					benchDo(b, c, http.MethodPost, srv.URL+"/api/v1/push", push, http.StatusCreated)
					out := benchDo(b, c, http.MethodGet, srv.URL+"/api/v1/pop/queue/src/partition/"+p+
						"?batch=10&wait=false&consumerGroup=streams.bench", nil, http.StatusOK)
					if err := json.Unmarshal(out, &res); err != nil || len(res.Messages) != batch {
						b.Fatalf("pop: %v %s", err, out)
					}
					last := res.Messages[batch-1].TransactionID
					var body bytes.Buffer
					items := func() {
						for i, m := range res.Messages {
							if i > 0 {
								body.WriteByte(',')
							}
							fmt.Fprintf(&body, `{"queue":"sink","partition":%q,"payload":%s,"transactionId":%q}`, p, benchPayload, m.TransactionID)
						}
					}
					path := "/api/v1/transaction"
					if route == "cycle" {
						path = "/streams/v1/cycle"
						fmt.Fprintf(&body, `{"query_id":%q,"partition_id":%q,"consumer_group":"streams.bench","state_ops":[`, reg.QueryID, res.PartitionID)
						for i := range res.Messages {
							if i > 0 {
								body.WriteByte(',')
							}
							fmt.Fprintf(&body, `{"type":"upsert","key":"k%d","value":{"count":%d}}`, i, i)
						}
						body.WriteString(`],"push_items":[`)
						items()
						fmt.Fprintf(&body, `],"ack":{"transactionId":%q,"leaseId":%q,"count":%d}}`, last, res.LeaseID, batch)
					} else {
						// One ack per message: the lease ends with the batch's last ack.
						body.WriteString(`{"operations":[`)
						for _, m := range res.Messages {
							fmt.Fprintf(&body, `{"type":"ack","transactionId":%q,"partitionId":%q,"consumerGroup":"streams.bench"},`,
								m.TransactionID, res.PartitionID)
						}
						body.WriteString(`{"type":"push","items":[`)
						items()
						body.WriteString(`]}]}`)
					}
					out = benchDo(b, c, http.MethodPost, srv.URL+path, body.Bytes(), http.StatusOK)
					if !bytes.Contains(out, []byte(`"success":true`)) {
						b.Fatalf("%s: %s", route, out)
					}
				}
			})
			b.ReportMetric(batch*float64(b.N)/b.Elapsed().Seconds(), "msg/s")
		})
	}
}
