package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queenmq/queen/internal/queue"
)

// Client test suites delete a queue while requests on it still run (a timed-out test's
// producer, the next test's setup). Each request that loses a race with the delete runs
// again or answers as if the queue were gone: never an internal error. Workers push,
// configure, trace and move a group's subscription while another deletes the queue
// every few milliseconds.
func TestRequestsRacingAQueueDelete(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	ctx := context.Background()
	const q = "delete-race"
	const rounds = 100
	var (
		wg       sync.WaitGroup
		done     atomic.Bool
		failures = make(chan error, 64)
	)
	fail := func(what string, err error) {
		select {
		case failures <- fmt.Errorf("%s: %w", what, err):
		default:
		}
	}
	for w := range 2 {
		wg.Go(func() {
			for i := range rounds {
				tx := fmt.Sprintf("w%d-%d", w, i)
				res, err := tb.b.Push(ctx, []queue.PushItem{item(q, "", tx, `1`)})
				if err != nil {
					fail("push", err)
					continue
				}
				_, err = tb.b.TraceAdd(ctx, queue.Scope{}, queue.TraceEvent{PartitionID: res[0].PartitionID,
					TransactionID: tx, Data: json.RawMessage(`{}`), Names: []string{"race"}})
				if err != nil && !errors.Is(err, queue.ErrNotFound) {
					fail("trace", err)
				}
			}
		})
	}
	wg.Go(func() {
		for i := 0; i < rounds; i++ {
			_, _, err := tb.b.ConfigureEdit(ctx, queue.ConfigureEdit{Name: q,
				ApplyFunc: func(o *queue.Options) { o.LeaseTime = 10 + i%5 }, Keys: []string{"leaseTime"}})
			if err != nil {
				fail("configure", err)
			}
			if _, err := tb.b.ConsumerGroupSubscriptionUpdate(ctx, queue.Scope{}, "g", time.Now()); err != nil {
				fail("subscription", err)
			}
		}
	})
	var deleter sync.WaitGroup
	deleter.Go(func() {
		tick := time.NewTicker(60 * time.Millisecond) // a delete every few requests, as suites do
		defer tick.Stop()
		for range tick.C {
			if done.Load() {
				return
			}
			if _, err := tb.b.QueueDelete(ctx, q); err != nil {
				fail("delete", err)
			}
		}
	})
	wg.Wait()
	done.Store(true)
	deleter.Wait()
	close(failures)
	for err := range failures {
		t.Error(err)
	}
}
