package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/queenmq/queen/internal/queue"
)

// The codec benchmarks time the broker's own CPU per request on the hot routes: the
// push and ack body decode and the pop, push and ack answer encode (they show up in
// CPU profiles of queen-bench, docs/benchmarks.md). No database is involved. The Slow
// variants run the encoding/json paths the fast ones fall back to, for comparison.

const benchPayload = `{"kind":"bench","seq":12345,"body":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}`

// benchPushBody is a push of 100 items of benchPayload.
func benchPushBody() []byte {
	var body bytes.Buffer
	body.WriteString(`{"items":[`)
	for i := range 100 {
		if i > 0 {
			body.WriteByte(',')
		}
		fmt.Fprintf(&body, `{"queue":"bench","partition":"p0","payload":%s}`, benchPayload)
	}
	body.WriteString(`]}`)
	return body.Bytes()
}

// benchAckBody is an ack batch of 100 acknowledgments.
func benchAckBody() []byte {
	var body bytes.Buffer
	body.WriteString(`{"acknowledgments":[`)
	for i := range 100 {
		if i > 0 {
			body.WriteByte(',')
		}
		fmt.Fprintf(&body, `{"transactionId":"01a22896-ec8f-7000-8584-7efe5a30a%03d","partitionId":"01a22896-ec8f-7000-8584-7efe5a30af97","leaseId":"01a22896-ec8f-7000-8584-7efe5a30af95","status":"completed"}`, i)
	}
	body.WriteString(`],"consumerGroup":"g1"}`)
	return body.Bytes()
}

// benchDecode times reading raw as the body of a request to path and decoding it.
func benchDecode(b *testing.B, raw []byte, path string, decode func(body []byte) error) {
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		body, err := readBody(httptest.NewRequest("POST", path, bytes.NewReader(raw)))
		if err != nil {
			b.Fatal(err)
		}
		if err := decode(body); err != nil {
			b.Fatal(err)
		}
	}
}

var errDeclined = errors.New("fast path declined")

func BenchmarkDecodePush(b *testing.B) {
	benchDecode(b, benchPushBody(), "/api/v1/push", func(body []byte) error {
		if _, ok := scanPush(body); !ok {
			return errDeclined
		}
		return nil
	})
}

func BenchmarkDecodePushSlow(b *testing.B) {
	benchDecode(b, benchPushBody(), "/api/v1/push", func(body []byte) error {
		_, err := decodePush(body)
		return err
	})
}

func BenchmarkDecodeAck(b *testing.B) {
	benchDecode(b, benchAckBody(), "/api/v1/ack/batch", func(body []byte) error {
		if _, _, ok := scanAckBatch(body); !ok {
			return errDeclined
		}
		return nil
	})
}

func BenchmarkDecodeAckSlow(b *testing.B) {
	benchDecode(b, benchAckBody(), "/api/v1/ack/batch", func(body []byte) error {
		_, _, err := decodeAckBatch(body)
		return err
	})
}

// benchPopResult is a pop of 100 messages of benchPayload.
func benchPopResult() queue.PopResult {
	res := queue.PopResult{Queue: "bench", ConsumerGroup: queue.QueueModeGroup, LeaseID: "01a22896-ec8f-7000-8584-7efe5a30af95",
		PartitionsClaimed: 1, Messages: make([]queue.Message, 100)}
	now := time.Now()
	for i := range res.Messages {
		res.Messages[i] = queue.Message{ID: "01a22896-ec8f-7000-8584-7efe5a30af95", TransactionID: "01a22896-ec8f-7000-8584-7efe5a30af96",
			Payload: json.RawMessage(benchPayload), CreatedAt: now, PartitionID: "01a22896-ec8f-7000-8584-7efe5a30af97",
			Partition: "p0", Queue: "bench"}
	}
	return res
}

func BenchmarkEncodePopResponse(b *testing.B) {
	res := benchPopResult()
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		var err error
		if buf, err = appendPop(buf[:0], res); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(buf)))
	}
}

func BenchmarkEncodePopResponseSlow(b *testing.B) {
	res := benchPopResult()
	b.ReportAllocs()
	for b.Loop() {
		out, err := encodeJSON(popResponse(res))
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(out)))
	}
}

// benchPushResults are 100 queued results.
func benchPushResults() ([]queue.PushResult, []string) {
	res := make([]queue.PushResult, 100)
	for i := range res {
		res[i] = queue.PushResult{Status: queue.StatusQueued, TransactionID: "01a22896-ec8f-7000-8584-7efe5a30af96",
			MessageID: "01a22896-ec8f-7000-8584-7efe5a30af95", PartitionID: "01a22896-ec8f-7000-8584-7efe5a30af97", Queue: "bench"}
	}
	return res, make([]string, len(res))
}

func BenchmarkEncodePushResults(b *testing.B) {
	res, ids := benchPushResults()
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		var err error
		if buf, err = appendPushResults(buf[:0], res, ids); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(buf)))
	}
}

func BenchmarkEncodePushResultsSlow(b *testing.B) {
	res, ids := benchPushResults()
	b.ReportAllocs()
	for b.Loop() {
		out, err := encodeJSON(pushResults(res, ids))
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(out)))
	}
}

// benchAckResults are 100 successful ack results.
func benchAckResults() []queue.AckResult {
	res := make([]queue.AckResult, 100)
	for i := range res {
		res[i] = queue.AckResult{Index: i, TransactionID: "01a22896-ec8f-7000-8584-7efe5a30af96", Success: true,
			QueueName: "bench", PartitionName: "p0", LeaseReleased: new(true)}
	}
	return res
}

func BenchmarkEncodeAckResults(b *testing.B) {
	res := benchAckResults()
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		buf = appendAckResults(buf[:0], res)
		b.SetBytes(int64(len(buf)))
	}
}

func BenchmarkEncodeAckResultsSlow(b *testing.B) {
	res := benchAckResults()
	b.ReportAllocs()
	for b.Loop() {
		out, err := encodeJSON(ackResults(res))
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(out)))
	}
}
