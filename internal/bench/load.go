package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync/atomic"
	"time"
)

// httpLoad drives the broker over HTTP/1.1 keep-alive connections. It is written to
// cost the broker's CPU as little as possible: request bodies are built once or
// appended into reused buffers, and responses are decoded only as far as needed.
type httpLoad struct {
	base string
	hc   *http.Client
}

func newHTTPLoad(base string, conns int) *httpLoad {
	tr := &http.Transport{
		MaxIdleConns: 2 * conns, MaxIdleConnsPerHost: 2 * conns, IdleConnTimeout: time.Minute,
		DisableCompression: true,
	}
	return &httpLoad{base: base, hc: &http.Client{Transport: tr}}
}

func (h *httpLoad) close() { h.hc.CloseIdleConnections() }

// do sends one request and reads the answer into buf (reset first).
func (h *httpLoad) do(ctx context.Context, method, path string, body []byte, buf *bytes.Buffer) (int, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, h.base+path, rd)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := h.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	buf.Reset()
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return resp.StatusCode, fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	return resp.StatusCode, nil
}

// pushBody renders a push of n items to queue; partition(i) names item i's partition.
// Items carry no transactionId, so the broker assigns a fresh one every time and the
// same body can be sent again and again.
func pushBody(queueName string, n int, partition func(i int) string, payload string) []byte {
	var b bytes.Buffer
	b.WriteString(`{"items":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"queue":%q,"partition":%q,"payload":%s}`, queueName, partition(i), payload)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// pushOp posts bodies[w] (batch items) for worker w and expects 201.
func (h *httpLoad) pushOp(bodies [][]byte, batch int) op {
	bufs := make([]bytes.Buffer, len(bodies))
	return func(ctx context.Context, w int) (int, error) {
		status, err := h.do(ctx, http.MethodPost, "/api/v1/push", bodies[w], &bufs[w])
		if err != nil {
			return 0, err
		}
		if status != http.StatusCreated {
			return 0, fmt.Errorf("push: HTTP %d: %.300s", status, bufs[w].String())
		}
		return batch, nil
	}
}

// fill pushes total messages to queue through the broker, message i to partition
// p(i % partitions), in batches of 1000 from conns concurrent producers.
func (h *httpLoad) fill(ctx context.Context, queueName string, partitions, total, conns int, payload string) error {
	const batch = 1000
	var next atomic.Int64
	win := window{warmup: 0, duration: time.Hour}
	_, err := win.run(ctx, conns, int64(total), nil, func(ctx context.Context, w int) (int, error) {
		off := int(next.Add(batch)) - batch
		if off >= total {
			return 0, errDrained
		}
		n := min(batch, total-off)
		body := pushBody(queueName, n, func(i int) string { return "p" + strconv.Itoa((off+i)%partitions) }, payload)
		var buf bytes.Buffer
		status, err := h.do(ctx, http.MethodPost, "/api/v1/push", body, &buf)
		if err != nil {
			return 0, err
		}
		if status != http.StatusCreated {
			return 0, fmt.Errorf("fill: HTTP %d: %.300s", status, buf.String())
		}
		return n, nil
	})
	return err
}

// popAnswer is the part of a pop answer the consumer needs.
type popAnswer struct {
	LeaseID  string `json:"leaseId"`
	Messages []struct {
		TransactionID string `json:"transactionId"`
		PartitionID   string `json:"partitionId"`
	} `json:"messages"`
}

// ackAnswer is the part of an ack result the consumer checks.
type ackAnswer struct {
	Success bool    `json:"success"`
	Error   *string `json:"error"`
}

// popAckOp pops up to batch messages of queue (queue mode when groups is nil, else as
// groups[w % len]) without waiting, and acknowledges them in one batch.
func (h *httpLoad) popAckOp(queueName string, groups []string, batch, workers int) op {
	type state struct {
		buf  bytes.Buffer
		ack  []byte
		pop  popAnswer
		acks []ackAnswer
	}
	states := make([]state, workers)
	paths := make([]string, workers)
	for w := range paths {
		q := url.Values{"batch": {strconv.Itoa(batch)}, "wait": {"false"}}
		if groups != nil {
			q.Set("consumerGroup", groups[w%len(groups)])
		}
		paths[w] = "/api/v1/pop/queue/" + url.PathEscape(queueName) + "?" + q.Encode()
	}
	return func(ctx context.Context, w int) (int, error) {
		st := &states[w]
		status, err := h.do(ctx, http.MethodGet, paths[w], nil, &st.buf)
		if err != nil {
			return 0, err
		}
		if status == http.StatusNoContent {
			return 0, nil
		}
		if status != http.StatusOK {
			return 0, fmt.Errorf("pop: HTTP %d: %.300s", status, st.buf.String())
		}
		st.pop.Messages = st.pop.Messages[:0]
		if err := json.Unmarshal(st.buf.Bytes(), &st.pop); err != nil {
			return 0, fmt.Errorf("pop: decode: %w", err)
		}
		n := len(st.pop.Messages)
		if n == 0 {
			return 0, nil
		}
		b := append(st.ack[:0], `{"acknowledgments":[`...)
		for i, m := range st.pop.Messages {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"transactionId":`...)
			b = strconv.AppendQuote(b, m.TransactionID)
			b = append(b, `,"partitionId":`...)
			b = strconv.AppendQuote(b, m.PartitionID)
			b = append(b, `,"leaseId":`...)
			b = strconv.AppendQuote(b, st.pop.LeaseID)
			b = append(b, `,"status":"completed"}`...)
		}
		b = append(b, ']')
		if groups != nil {
			b = append(b, `,"consumerGroup":`...)
			b = strconv.AppendQuote(b, groups[w%len(groups)])
		}
		b = append(b, '}')
		st.ack = b
		status, err = h.do(ctx, http.MethodPost, "/api/v1/ack/batch", b, &st.buf)
		if err != nil {
			return 0, err
		}
		if status != http.StatusOK {
			return 0, fmt.Errorf("ack: HTTP %d: %.300s", status, st.buf.String())
		}
		st.acks = st.acks[:0]
		if err := json.Unmarshal(st.buf.Bytes(), &st.acks); err != nil {
			return 0, fmt.Errorf("ack: decode: %w", err)
		}
		for _, a := range st.acks {
			if !a.Success {
				msg := "<nil>"
				if a.Error != nil {
					msg = *a.Error
				}
				return 0, fmt.Errorf("ack refused: %s", msg)
			}
		}
		return n, nil
	}
}

// longPollLatency parks a long-poll on an empty queue, waits gap so it is surely
// parked, pushes one message and measures from just before the push is sent until
// the pop's answer arrives; samples times.
func (h *httpLoad) longPollLatency(ctx context.Context, queueName string, samples int, gap time.Duration, payload string) ([]time.Duration, error) {
	body := pushBody(queueName, 1, func(int) string { return "p0" }, payload)
	popPath := "/api/v1/pop/queue/" + url.PathEscape(queueName) + "?batch=1&wait=true&timeout=10000&autoAck=true"
	type answer struct {
		at     time.Time
		status int
		err    error
	}
	var pushBuf bytes.Buffer
	out := make([]time.Duration, 0, samples)
	for i := -1; i < samples; i++ { // i == -1 warms up (creates the queue)
		ch := make(chan answer, 1)
		go func() {
			var buf bytes.Buffer
			status, err := h.do(ctx, http.MethodGet, popPath, nil, &buf)
			ch <- answer{at: time.Now(), status: status, err: err}
		}()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(gap):
		}
		start := time.Now()
		status, err := h.do(ctx, http.MethodPost, "/api/v1/push", body, &pushBuf)
		if err != nil {
			return nil, err
		}
		if status != http.StatusCreated {
			return nil, fmt.Errorf("latency push: HTTP %d: %.300s", status, pushBuf.String())
		}
		a := <-ch
		if a.err != nil {
			return nil, a.err
		}
		if a.status != http.StatusOK {
			return nil, fmt.Errorf("latency pop: HTTP %d (expected the pushed message)", a.status)
		}
		if i >= 0 {
			out = append(out, a.at.Sub(start))
		}
	}
	return out, nil
}

// percentile returns the p-th percentile (0 < p ≤ 1, nearest rank) of samples.
func percentile(samples []time.Duration, p float64) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	rank := int(float64(len(s))*p+0.999999) - 1
	return s[min(max(rank, 0), len(s)-1)]
}
