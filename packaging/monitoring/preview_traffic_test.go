package monitoring_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// load drives a broker with the traffic the dashboard preview shows. Every loop is
// paced by a ticker and ends with its context, so the whole load is bounded in time
// and sends requests only to the broker under test (on 127.0.0.1).
type load struct {
	t    *testing.T
	base string
	hc   *http.Client
	// seq numbers the pushed messages; a consumer reads the number back from the
	// payload to decide which messages fail.
	seq atomic.Int64
	// counts is what the load did, for the log and for the check that it did it.
	mu     sync.Mutex
	counts map[string]int
}

type obj = map[string]any

func newLoad(t *testing.T, base string) *load {
	return &load{t: t, base: base, hc: &http.Client{Timeout: 30 * time.Second}, counts: map[string]int{}}
}

func (l *load) count(what string, n int) {
	l.mu.Lock()
	l.counts[what] += n
	l.mu.Unlock()
}

// call sends a request and returns the status and body; a transport error or a status
// not in want is reported (t.Errorf: callable from the load's goroutines) and answers
// 0. A context ended by the end of the load is not an error.
func (l *load) call(ctx context.Context, method, path string, body any, want ...int) (int, []byte) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			l.t.Errorf("%s %s: encode the body: %v", method, path, err)
			return 0, nil
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, l.base+path, rd)
	if err != nil {
		l.t.Errorf("%s %s: %v", method, path, err)
		return 0, nil
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := l.hc.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			l.t.Errorf("%s %s: %v", method, path, err)
		}
		return 0, nil
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil && ctx.Err() == nil {
		l.t.Errorf("%s %s: read the answer: %v", method, path, err)
		return 0, nil
	}
	if !slices.Contains(want, resp.StatusCode) {
		if ctx.Err() == nil {
			l.t.Errorf("%s %s: status %d, want one of %v: %s", method, path, resp.StatusCode, want, b)
		}
		return 0, nil
	}
	return resp.StatusCode, b
}

// setup creates the queues with the options the load relies on: payments dead-letters
// a message at its second failed ack.
func (l *load) setup(ctx context.Context) {
	for queue, opts := range map[string]obj{
		"orders":   {"leaseTime": 300},
		"payments": {"leaseTime": 60, "retryLimit": 1},
		"emails":   {"leaseTime": 300},
		"alerts":   {"leaseTime": 60},
	} {
		l.call(ctx, http.MethodPost, "/api/v1/configure", obj{"queue": queue, "options": opts}, http.StatusOK)
	}
}

// push sends n messages to the queue, spread over its partitions.
func (l *load) push(ctx context.Context, queue string, partitions, n int) {
	items := make([]obj, 0, n)
	for range n {
		s := l.seq.Add(1)
		items = append(items, obj{"queue": queue, "partition": fmt.Sprintf("p%d", s%int64(partitions)),
			"payload": obj{"n": s, "kind": queue}})
	}
	if code, _ := l.call(ctx, http.MethodPost, "/api/v1/push", obj{"items": items}, http.StatusCreated); code != 0 {
		l.count("pushed "+queue, n)
	}
}

// popped is one message of a pop's answer, as the ack needs it.
type popped struct {
	TransactionID string `json:"transactionId"`
	PartitionID   string `json:"partitionId"`
	LeaseID       string `json:"leaseId"`
	Data          struct {
		N int64 `json:"n"`
	} `json:"data"`
}

// pop pops from the queue with the query (consumerGroup, batch …) and returns the
// messages, none on a 204.
func (l *load) pop(ctx context.Context, queue, query string) []popped {
	code, b := l.call(ctx, http.MethodGet, "/api/v1/pop/queue/"+queue+"?"+query, nil, http.StatusOK, http.StatusNoContent)
	if code != http.StatusOK {
		return nil
	}
	var ans struct {
		Messages []popped `json:"messages"`
	}
	if err := json.Unmarshal(b, &ans); err != nil {
		l.t.Errorf("pop %s?%s: %v: %s", queue, query, err, b)
		return nil
	}
	l.count("popped "+queue, len(ans.Messages))
	return ans.Messages
}

// ack acknowledges the messages for the group ("" for queue mode), each with the
// status status returns for it.
func (l *load) ack(ctx context.Context, group string, msgs []popped, status func(popped) string) {
	if len(msgs) == 0 {
		return
	}
	acks := make([]obj, 0, len(msgs))
	for _, m := range msgs {
		st := status(m)
		a := obj{"transactionId": m.TransactionID, "partitionId": m.PartitionID, "leaseId": m.LeaseID, "status": st}
		if st != "completed" {
			a["error"] = "preview: declined by the consumer"
		}
		acks = append(acks, a)
		l.count("ack "+st, 1)
	}
	body := obj{"acknowledgments": acks}
	if group != "" {
		body["consumerGroup"] = group
	}
	l.call(ctx, http.MethodPost, "/api/v1/ack/batch", body, http.StatusOK)
}

// every runs f each period (and once at once) until ctx ends, passing the tick's number.
func every(ctx context.Context, wg *sync.WaitGroup, period time.Duration, f func(tick int)) {
	wg.Go(func() {
		tk := time.NewTicker(period)
		defer tk.Stop()
		for tick := 0; ctx.Err() == nil; tick++ {
			f(tick)
			select {
			case <-ctx.Done():
			case <-tk.C:
			}
		}
	})
}

// run drives the broker for d and returns once every loop has stopped:
//   - orders (4 partitions) gets a push every 250 ms whose size rises and falls
//     (2 to 14 messages); group billing keeps up (pops of up to 50, acked), group
//     analytics falls behind (5 messages a second), group audit pops 10 every 20 s and
//     never acks them (they stay in flight);
//   - payments (2 partitions, retryLimit 1): 3 messages every 500 ms; group ledger acks
//     them but fails every seventh, which is redelivered, fails again and is
//     dead-lettered;
//   - emails, queue mode: 4 messages a second, popped 3 at a time with autoAck (the
//     depth grows), plus one pop every 10 s left unacknowledged (processing);
//   - alerts: two consumers long-poll it (5 s waits) while a message comes every 20 s;
//   - a 404 (an unknown queue) every 3 s and a 400 (a push without a queue) every 7 s.
func (l *load) run(ctx context.Context, d time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	l.setup(ctx)
	var wg sync.WaitGroup
	wave := []int{2, 4, 6, 9, 12, 14, 12, 9, 6, 4}
	every(ctx, &wg, 250*time.Millisecond, func(tick int) { l.push(ctx, "orders", 4, wave[(tick/12)%len(wave)]) })
	every(ctx, &wg, 500*time.Millisecond, func(int) { l.push(ctx, "payments", 2, 3) })
	every(ctx, &wg, time.Second, func(int) { l.push(ctx, "emails", 3, 4) })
	every(ctx, &wg, 20*time.Second, func(tick int) {
		if tick > 0 {
			l.push(ctx, "alerts", 1, 1)
		}
	})

	completed := func(popped) string { return "completed" }
	every(ctx, &wg, 500*time.Millisecond, func(int) {
		l.ack(ctx, "billing", l.pop(ctx, "orders", "consumerGroup=billing&batch=50&partitions=4&wait=false"), completed)
	})
	every(ctx, &wg, time.Second, func(int) {
		l.ack(ctx, "analytics", l.pop(ctx, "orders", "consumerGroup=analytics&batch=5&wait=false"), completed)
	})
	every(ctx, &wg, 20*time.Second, func(int) { l.pop(ctx, "orders", "consumerGroup=audit&batch=10&wait=false") })
	every(ctx, &wg, 500*time.Millisecond, func(int) {
		l.ack(ctx, "ledger", l.pop(ctx, "payments", "consumerGroup=ledger&batch=10&wait=false"), func(m popped) string {
			if m.Data.N%7 == 0 {
				return "failed"
			}
			return "completed"
		})
	})
	every(ctx, &wg, time.Second, func(int) { l.pop(ctx, "emails", "batch=3&autoAck=true&wait=false") })
	every(ctx, &wg, 10*time.Second, func(int) { l.pop(ctx, "emails", "batch=1&wait=false") })
	for range 2 {
		every(ctx, &wg, 10*time.Millisecond, func(int) { l.pop(ctx, "alerts", "batch=1&autoAck=true&wait=true&timeout=5000") })
	}

	every(ctx, &wg, 3*time.Second, func(int) {
		if code, _ := l.call(ctx, http.MethodGet, "/api/v1/resources/queues/no-such-queue", nil, http.StatusNotFound); code != 0 {
			l.count("404", 1)
		}
	})
	every(ctx, &wg, 7*time.Second, func(int) {
		if code, _ := l.call(ctx, http.MethodPost, "/api/v1/push", `{"items":[{"payload":{"n":0}}]}`, http.StatusBadRequest); code != 0 {
			l.count("400", 1)
		}
	})
	wg.Wait()
}
