package mover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/queenmq/queen/internal/proxy/store"
	"github.com/queenmq/queen/internal/proxy/tenant"
)

// copying copies the tenant's messages in rounds while the source serves it, then
// starts the pause.
func (r *run) copying(ctx context.Context) error {
	if r.progress.Rounds == 0 {
		// A fresh move: whatever the target holds of the tenant (a move given up, or
		// a stay there long ago) is not the tenant's truth.
		dst, err := r.pick(r.mv.To)
		if err != nil {
			return r.note(ctx, err)
		}
		if err := r.m.b.drop(ctx, dst, r.mv.Tenant); err != nil {
			return r.note(ctx, err)
		}
	}
	for round := 0; round < roundsBeforePause; round++ {
		n, err := r.copyRound(ctx)
		if err != nil {
			return r.note(ctx, err)
		}
		r.progress.Rounds++
		r.progress.Copied += n
		r.progress.LastRound = n
		if err := r.setPhase(ctx, tenant.MoveCopying, ""); err != nil {
			return err
		}
		if n < pageSize {
			break
		}
	}
	if _, err := r.m.o.Store.MovePause(ctx, r.mv.ID, r.m.o.ReplicaID); err != nil {
		return err
	}
	now := time.Now()
	r.mv.Phase, r.mv.PausedAt = tenant.MovePausing, &now
	r.progress.Pauses++
	return nil
}

// note records err as the move's error text (its phase unchanged) and returns it.
func (r *run) note(ctx context.Context, err error) error {
	raw, _ := json.Marshal(r.progress)
	_ = r.m.o.Store.MoveUpdate(ctx, r.mv.ID, r.m.o.ReplicaID, r.mv.Phase, raw, err.Error())
	return err
}

// final runs the pause: fence, last copy, switch. A pause that fails or outlasts the
// budget is given up: the source is unfenced and the copy rounds go on; after
// maxPauses the move fails.
func (r *run) final(ctx context.Context) error {
	start := time.Now()
	if r.mv.PausedAt != nil {
		start = *r.mv.PausedAt
	}
	pctx, cancel := context.WithTimeout(ctx, r.m.o.PauseBudget-time.Since(start))
	err := r.finalCopy(pctx)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		if uerr := r.fenceAll(ctx, r.mv.From, false); uerr != nil {
			return r.note(ctx, fmt.Errorf("%w; unfencing the source: %w", err, uerr))
		}
		if r.progress.Pauses >= maxPauses {
			return r.fail(ctx, fmt.Errorf("pause %d given up: %w", r.progress.Pauses, err))
		}
		r.log.Warn("pause given up; copying goes on", "pause", r.progress.Pauses, "err", err)
		return r.setPhase(ctx, tenant.MoveCopying, err.Error())
	}
	pause := time.Since(start)
	if err := r.m.o.Store.MoveSwitch(ctx, r.mv.ID, r.m.o.ReplicaID, float64(pause.Microseconds())/1000); errors.Is(err, store.ErrMoveCancelled) {
		return r.fail(ctx, errCancelled)
	} else if err != nil {
		return err
	}
	r.mv.Phase = tenant.MoveSwitched
	r.log.Info("tenant switched", "pause", pause, "copied", r.progress.Copied+r.progress.FinalCopied)
	return nil
}

// finalCopy fences the tenant at every source broker, copies what is left and every
// row of the tenant but its messages, and lifts a fence the target may have.
func (r *run) finalCopy(ctx context.Context) error {
	if err := r.setPhase(ctx, tenant.MoveFinal, ""); err != nil {
		return err
	}
	if err := r.fenceAll(ctx, r.mv.From, true); err != nil {
		return err
	}
	n, err := r.copyRound(ctx)
	if err != nil {
		return err
	}
	r.progress.FinalCopied = n
	src, err := r.pick(r.mv.From)
	if err != nil {
		return err
	}
	dst, err := r.pick(r.mv.To)
	if err != nil {
		return err
	}
	if err := r.reconcile(ctx, src, dst); err != nil {
		return err
	}
	state, err := r.m.b.exportState(ctx, src, r.mv.Tenant)
	if err != nil {
		return err
	}
	if err := r.m.b.importState(ctx, dst, r.mv.Tenant, "all", state); err != nil {
		return err
	}
	return r.fenceAll(ctx, r.mv.To, false)
}

// copyRound makes the target's queues and partitions the source's, then copies every
// message the target lacks after its newest of each partition. It returns how many.
func (r *run) copyRound(ctx context.Context) (int64, error) {
	src, err := r.pick(r.mv.From)
	if err != nil {
		return 0, err
	}
	dst, err := r.pick(r.mv.To)
	if err != nil {
		return 0, err
	}
	state, err := r.m.b.exportState(ctx, src, r.mv.Tenant)
	if err != nil {
		return 0, err
	}
	if err := r.m.b.importState(ctx, dst, r.mv.Tenant, "structure", state); err != nil {
		return 0, err
	}
	heads, err := r.m.b.heads(ctx, dst, r.mv.Tenant)
	if err != nil {
		return 0, err
	}
	since := map[string]position{}
	for _, h := range heads {
		if h.LastID != nil && h.LastCreatedAt != nil {
			since[h.ID] = position{CreatedAt: *h.LastCreatedAt, ID: *h.LastID}
		}
	}
	return r.copyPages(ctx, src, dst, messagesRequest{Tenant: r.mv.Tenant, Since: since, Limit: pageSize}, "")
}

// copyPages copies the export pages of req from src to dst; with only set, it stops
// at the first message of another partition.
func (r *run) copyPages(ctx context.Context, src, dst *url.URL, req messagesRequest, only string) (int64, error) {
	var n int64
	for {
		page, err := r.m.b.exportMessages(ctx, src, req)
		if err != nil {
			return n, err
		}
		rows := page.Messages
		if only != "" {
			for i, raw := range rows {
				var m struct {
					PartitionID string `json:"partition_id"`
				}
				if json.Unmarshal(raw, &m) == nil && m.PartitionID != only {
					rows, page.Next = rows[:i], nil
					break
				}
			}
		}
		for len(rows) > 0 {
			// Each import stays under the brokers' body limit (QUEEN_MAX_BODY_BYTES).
			end, size := 0, 0
			for end < len(rows) && (end == 0 || size+len(rows[end]) <= importChunkBytes) {
				size += len(rows[end])
				end++
			}
			if err := r.m.b.importMessages(ctx, dst, r.mv.Tenant, rows[:end]); err != nil {
				return n, err
			}
			n += int64(end)
			rows = rows[end:]
		}
		if page.Next == nil {
			return n, nil
		}
		req.After = page.Next
	}
}

// reconcile makes each partition's messages at the target exactly the source's where
// their counts differ (a message deleted or added behind the copy at the source):
// the source's partition is copied again whole and the target's extra ids pruned.
func (r *run) reconcile(ctx context.Context, src, dst *url.URL) error {
	srcHeads, err := r.m.b.heads(ctx, src, r.mv.Tenant)
	if err != nil {
		return err
	}
	dstHeads, err := r.m.b.heads(ctx, dst, r.mv.Tenant)
	if err != nil {
		return err
	}
	have := map[string]int64{}
	for _, h := range dstHeads {
		have[h.ID] = h.Count
	}
	for _, h := range srcHeads {
		if have[h.ID] == h.Count {
			continue
		}
		start := &position{PartitionID: h.ID, CreatedAt: "0001-01-01T00:00:00Z", ID: "00000000-0000-0000-0000-000000000000"}
		if _, err := r.copyPages(ctx, src, dst, messagesRequest{Tenant: r.mv.Tenant, After: start, Limit: pageSize}, h.ID); err != nil {
			return err
		}
		ids, err := r.m.b.exportIDs(ctx, src, r.mv.Tenant, h.ID)
		if err != nil {
			return err
		}
		if err := r.m.b.prune(ctx, dst, r.mv.Tenant, h.ID, ids); err != nil {
			return err
		}
		r.progress.Pruned++
	}
	return nil
}

// cleaning drops the tenant at the source (its fence stays, so that a request sent
// there by a replica that has not read the switch is refused, not stored) and ends
// the move.
func (r *run) cleaning(ctx context.Context) error {
	if r.mv.Phase == tenant.MoveSwitched {
		if err := r.setPhase(ctx, tenant.MoveCleaning, ""); err != nil {
			return err
		}
	}
	src, err := r.pick(r.mv.From)
	if err != nil {
		return r.note(ctx, err)
	}
	if err := r.m.b.drop(ctx, src, r.mv.Tenant); err != nil {
		return r.note(ctx, err)
	}
	if err := r.m.o.Store.MoveFinish(ctx, r.mv.ID, r.m.o.ReplicaID, tenant.MoveDone, ""); err != nil {
		return err
	}
	r.mv.Phase = tenant.MoveDone
	return nil
}
