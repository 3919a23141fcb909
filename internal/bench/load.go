package bench

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"
)

// httpLoad drives the broker over HTTP/1.1 keep-alive connections. It is written to
// cost the machine's CPU as little as possible (the load generator shares it with the
// broker and PostgreSQL): requests are sent and answered in the worker's goroutine
// (see connPool), request bodies are appended into reused buffers, and responses are
// decoded only as far as needed.
type httpLoad struct {
	base  string
	auth  string // the Authorization header, "" for none
	conns *connPool
}

// newHTTPLoad returns a load generator for the broker at base (http or https).
func newHTTPLoad(base, token string) (*httpLoad, error) {
	p, err := newConnPool(base)
	if err != nil {
		return nil, err
	}
	h := &httpLoad{base: base, conns: p}
	if token != "" {
		h.auth = "Bearer " + token
	}
	return h, nil
}

func (h *httpLoad) close() { h.conns.closeIdle() }

// do sends one request and reads the answer into buf (reset first).
func (h *httpLoad) do(ctx context.Context, method, path string, body []byte, buf *bytes.Buffer) (int, error) {
	return h.conns.do(ctx, method, path, h.auth, body, buf)
}

// roundRobin hands out partition indexes 0…n-1 in turn to concurrent workers:
// successive requests, whichever worker sends them, go to successive partitions, so
// the requests in flight at any moment name distinct partitions (when n ≥ workers).
type roundRobin struct {
	n    uint64
	next atomic.Uint64
}

func newRoundRobin(n int) *roundRobin { return &roundRobin{n: uint64(max(n, 1))} }

// take returns the partition index of the next request.
func (rr *roundRobin) take() int { return int((rr.next.Add(1) - 1) % rr.n) }

// appendPushBody appends a push of n items to queueName; item i goes to partition
// "p<partition(i)>" and its payload is appended by payload. Items carry no
// transactionId, so the broker assigns a fresh one every time.
func appendPushBody(dst []byte, queueName string, n int, partition func(i int) int, payload func([]byte) []byte) []byte {
	dst = append(dst, `{"items":[`...)
	for i := range n {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"queue":`...)
		dst = appendJSONString(dst, queueName)
		dst = append(dst, `,"partition":"p`...)
		dst = strconv.AppendInt(dst, int64(partition(i)), 10)
		dst = append(dst, `","payload":`...)
		dst = payload(dst)
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}

// constPayload appends the same payload to every item.
func constPayload(p string) func([]byte) []byte {
	return func(dst []byte) []byte { return append(dst, p...) }
}

// pushSpec describes the producers of a case.
type pushSpec struct {
	queue   string
	batch   int
	rr      *roundRobin         // each request's partition
	payload func([]byte) []byte // appends one item's payload
	// pace, when set, spaces the requests (the paced mixed cases); nil is flat out.
	pace *pacer
	// graceful requests are not cut at the window's end: a push in flight completes
	// (the mixed cases, whose queue is reused after the window).
	graceful bool
	// pushed, when set, counts the messages stored before the window ended.
	pushed *atomic.Int64
}

// pushOp posts one request of s.batch items for worker w and expects 201.
func (h *httpLoad) pushOp(s pushSpec, workers int) op {
	bodies := make([][]byte, workers)
	bufs := make([]bytes.Buffer, workers)
	return func(ctx context.Context, w int) (int, error) {
		if s.pace != nil {
			if err := s.pace.wait(ctx, w); err != nil {
				return 0, nil // the window ended while waiting
			}
		}
		k := s.rr.take()
		bodies[w] = appendPushBody(bodies[w][:0], s.queue, s.batch, func(int) int { return k }, s.payload)
		ioCtx := ctx
		if s.graceful {
			ioCtx = context.WithoutCancel(ctx)
		}
		status, err := h.do(ioCtx, http.MethodPost, "/api/v1/push", bodies[w], &bufs[w])
		if err != nil {
			return 0, err
		}
		if status != http.StatusCreated {
			return 0, fmt.Errorf("push: HTTP %d: %.300s", status, bufs[w].String())
		}
		if s.pushed != nil && ctx.Err() == nil { // a graceful push completed after the window is not counted
			s.pushed.Add(int64(s.batch))
		}
		return s.batch, nil
	}
}

// fill pushes total messages to queue through the broker, in batches of 1000 from
// conns concurrent producers: message i to partition p(fillPartition(i, total,
// partitions)).
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
		body := appendPushBody(nil, queueName, n, func(i int) int { return fillPartition(off+i, total, partitions) },
			constPayload(payload))
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

// deleteQueue deletes queueName (DELETE /api/v1/resources/queues/{queue}). It reports
// supported=false, without an error, when the broker answers 404 or 405: a broker
// without the route.
func (h *httpLoad) deleteQueue(ctx context.Context, queueName string) (supported bool, err error) {
	var buf bytes.Buffer
	status, err := h.do(ctx, http.MethodDelete, "/api/v1/resources/queues/"+url.PathEscape(queueName), nil, &buf)
	switch {
	case err != nil:
		return true, err
	case status == http.StatusNotFound || status == http.StatusMethodNotAllowed:
		return false, nil
	case status/100 != 2:
		return true, fmt.Errorf("delete queue %s: HTTP %d: %.300s", queueName, status, buf.String())
	}
	return true, nil
}

// checkReachable asks the broker for GET /health and expects 200.
func (h *httpLoad) checkReachable(ctx context.Context) error {
	var buf bytes.Buffer
	status, err := h.do(ctx, http.MethodGet, "/health", nil, &buf)
	if err != nil {
		return fmt.Errorf("broker at %s: %w", h.base, err)
	}
	if status != http.StatusOK {
		return fmt.Errorf("broker at %s: GET /health: HTTP %d: %.300s", h.base, status, buf.String())
	}
	return nil
}

// fillPartition is the partition of message i of a fill of total messages over
// partitions: consecutive runs of total/partitions messages (the remainder spread over
// the first ones), so a request of 1000 messages names a few partitions, not 1000
// (each push locks every partition it names), and every partition gets its share.
func fillPartition(i, total, partitions int) int {
	per, extra := total/partitions, total%partitions
	if per == 0 {
		return i % partitions
	}
	// The first extra partitions hold per+1 messages.
	if big := extra * (per + 1); i < big {
		return i / (per + 1)
	} else {
		return extra + (i-big)/per
	}
}
