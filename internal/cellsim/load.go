package cellsim

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/client"
)

// load is the running producers and consumers.
type load struct {
	stopPush, stopPop context.CancelFunc
	producers         sync.WaitGroup
	consumers         sync.WaitGroup
	// pushRetries counts push attempts retried (503 while a tenant moved, transport
	// errors); popErrors pops and acks answered with an error.
	pushRetries, popErrors, pushStuck atomic.Int64
}

// startLoad starts cfg.Producers producers and cfg.Consumers consumers per group,
// each owning every n-th tenant.
func (s *sim) startLoad(ctx context.Context) *load {
	l := &load{}
	pushCtx, stopPush := context.WithCancel(ctx)
	popCtx, stopPop := context.WithCancel(ctx)
	l.stopPush, l.stopPop = stopPush, stopPop
	interval := time.Duration(float64(time.Second) * float64(s.cfg.Batch*s.cfg.Producers) / s.cfg.PushRate)
	for i := range s.cfg.Producers {
		l.producers.Add(1)
		go func() {
			defer l.producers.Done()
			s.produce(ctx, pushCtx, l, share(s.tenants, i, s.cfg.Producers), interval)
		}()
	}
	for _, g := range s.cfg.Groups {
		for i := range s.cfg.Consumers {
			l.consumers.Add(1)
			go func() {
				defer l.consumers.Done()
				s.consume(popCtx, l, g, share(s.tenants, i, s.cfg.Consumers))
			}()
		}
	}
	return l
}

// share is every n-th tenant from the i-th.
func share(ts []*Tenant, i, n int) []*Tenant {
	var out []*Tenant
	for j := i; j < len(ts); j += n {
		out = append(out, ts[j])
	}
	return out
}

// produce pushes batches round robin over its tenants and their partitions, one
// every interval, until stop is cancelled. A push is retried, with the same
// transaction ids, until it is answered (or ctx ends): a producer never leaves a
// push unanswered, so every message stored was recorded as pushed.
func (s *sim) produce(ctx, stop context.Context, l *load, tenants []*Tenant, interval time.Duration) {
	next := map[streamKey]int{}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for round := 0; ; round++ {
		for _, t := range tenants {
			select {
			case <-stop.Done():
				return
			case <-tick.C:
			}
			k := streamKey{t.ID, round % partitions}
			items := make([]api.PushItem, s.cfg.Batch)
			pays := make([]Payload, s.cfg.Batch)
			for j := range items {
				pays[j] = Payload{Tenant: t.ID, Partition: k.partition, Seq: next[k] + j}
				raw, _ := json.Marshal(pays[j])
				items[j] = api.PushItem{Queue: loadQueue, Partition: partitionName(k.partition), Payload: raw,
					TransactionID: pays[j].TransactionID()}
			}
			if !s.pushUntilAnswered(ctx, l, t, items) {
				return
			}
			for _, p := range pays {
				if err := s.history.Pushed(p); err != nil {
					s.fail(err)
					return
				}
			}
			next[k] += s.cfg.Batch
		}
	}
}

// pushUntilAnswered pushes items until every one is answered queued or duplicate;
// false when ctx ends first.
func (s *sim) pushUntilAnswered(ctx context.Context, l *load, t *Tenant, items []api.PushItem) bool {
	deadline := time.Now().Add(s.cfg.MoveTimeout)
	for {
		res, err := t.api.Push(ctx, items...)
		if err == nil && allStored(res) {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		if time.Now().After(deadline) {
			l.pushStuck.Add(1)
			s.fail(errors.Join(errors.New("cellsim: a push of tenant "+t.ID+" unanswered for "+s.cfg.MoveTimeout.String()), err))
			return false
		}
		l.pushRetries.Add(1)
		if pause(ctx, 50) != nil {
			return false
		}
	}
}

func allStored(res []api.PushResult) bool {
	for _, r := range res {
		if r.Status != api.PushStatusQueued && r.Status != api.PushStatusDuplicate {
			return false
		}
	}
	return len(res) > 0
}

// consume pops and acks its tenants' messages for group, round robin, until stop.
// An error answer (503 while a tenant moves) skips the tenant for this sweep.
func (s *sim) consume(stop context.Context, l *load, group string, tenants []*Tenant) {
	ctx := context.WithoutCancel(stop)
	for {
		got := 0
		for _, t := range tenants {
			if stop.Err() != nil {
				return
			}
			got += s.popOnce(ctx, l, group, t)
		}
		if got == 0 && pause(stop, 20) != nil {
			return
		}
	}
}

// popOnce pops one batch of t's load queue for group, records it, acks it and
// records the ack's answers; it returns how many messages came.
func (s *sim) popOnce(ctx context.Context, l *load, group string, t *Tenant) int {
	resp, err := t.api.Pop(ctx, client.PopOptions{Queue: loadQueue, ConsumerGroup: group, Batch: 20, Timeout: time.Second})
	if err != nil {
		l.popErrors.Add(1)
		return 0
	}
	if len(resp.Messages) == 0 {
		return 0
	}
	pays := make([]Payload, len(resp.Messages))
	acks := make([]api.AckItem, len(resp.Messages))
	for i, m := range resp.Messages {
		if err := json.Unmarshal(m.Data, &pays[i]); err != nil {
			s.fail(errors.New("cellsim: undecodable payload " + string(m.Data)))
		}
		s.history.Delivered(t.ID, group, pays[i])
		acks[i] = api.AckItem{TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: m.LeaseID}
	}
	res, err := t.api.AckBatch(ctx, api.AckBatchRequest{ConsumerGroup: group, Acknowledgments: acks})
	if err != nil {
		l.popErrors.Add(1)
		return len(pays) // unknown outcome: the lease expires, the messages come back
	}
	for i, r := range res {
		if r.Index >= 0 && r.Index < len(pays) {
			s.history.Acked(group, pays[r.Index], r.Success)
		} else if i < len(pays) {
			s.history.Acked(group, pays[i], r.Success)
		}
	}
	return len(pays)
}

// pause waits ms milliseconds, or until ctx ends (then it returns ctx's error).
func pause(ctx context.Context, ms int) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Duration(ms) * time.Millisecond):
		return nil
	}
}
