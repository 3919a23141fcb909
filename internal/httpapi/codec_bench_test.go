package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/queenmq/queen/internal/queue"
)

// The codec benchmarks time the broker's own CPU per request on the hot routes: the
// push body decode and the pop answer encode (both show up in CPU profiles of
// queen-bench, docs/benchmarks.md). No database is involved.

const benchPayload = `{"kind":"bench","seq":12345,"body":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}`

func BenchmarkDecodePush(b *testing.B) {
	var body bytes.Buffer
	body.WriteString(`{"items":[`)
	for i := range 100 {
		if i > 0 {
			body.WriteByte(',')
		}
		fmt.Fprintf(&body, `{"queue":"bench","partition":"p0","payload":%s}`, benchPayload)
	}
	body.WriteString(`]}`)
	raw := body.Bytes()
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest("POST", "/api/v1/push", bytes.NewReader(raw))
		o, err := readObject(r, false)
		if err != nil {
			b.Fatal(err)
		}
		items, _ := o.array("items")
		for i, it := range items {
			if _, err := decodePushItem(it, "items", false); err != nil {
				b.Fatalf("item %d: %v", i, err)
			}
		}
	}
}

func BenchmarkEncodePopResponse(b *testing.B) {
	res := queue.PopResult{Queue: "bench", ConsumerGroup: queue.QueueModeGroup, LeaseID: "01a22896-ec8f-7000-8584-7efe5a30af95",
		PartitionsClaimed: 1, Messages: make([]queue.Message, 100)}
	now := time.Now()
	for i := range res.Messages {
		res.Messages[i] = queue.Message{ID: "01a22896-ec8f-7000-8584-7efe5a30af95", TransactionID: "01a22896-ec8f-7000-8584-7efe5a30af96",
			Payload: json.RawMessage(benchPayload), CreatedAt: now, PartitionID: "01a22896-ec8f-7000-8584-7efe5a30af97",
			Partition: "p0", Queue: "bench"}
	}
	b.ReportAllocs()
	for b.Loop() {
		out, err := encodeJSON(popResponse(res))
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(out)))
	}
}
