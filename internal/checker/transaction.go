package checker

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/client"
)

// leaseRefused is the error of an ack refused because its lease is not live (the
// broker's wording, which the wire gives no code for).
const leaseRefused = "Invalid or expired lease"

// followUpGroup is the consumer group that reads the follow-up queue after the drain.
const followUpGroup = "checker-followups"

// followUpPage is how many follow-ups one read pops.
const followUpPage = 500

// FollowUp is one message read from the follow-up queue after the drain.
type FollowUp struct {
	// TransactionID is the message's transaction id, [FollowUpID] of what it follows.
	TransactionID string
	// Partition is the partition it was read from.
	Partition string
	// Group and Source are what its payload names: the consumer group whose
	// transaction pushed it and the transaction id of the message it completed.
	Group, Source string
}

// FollowUpID is the transaction id of the follow-up message that the transaction
// completing message txID for consumer group group pushes: "<group>/<txID>". It is
// the same at every attempt, so a follow-up pushed twice would show.
func FollowUpID(group, txID string) string { return group + "/" + txID }

// followUpPayload is the payload of the follow-up of txID for group.
type followUpPayload struct {
	G string `json:"g"`
	T string `json:"t"`
}

// transacts decides whether the consumer completes the next message with a
// transaction. Without transactions it draws nothing, so that the other choices of
// a seed stay what they were.
func (c *consumer) transacts() bool {
	p := c.r.cfg.TransactionProbability
	return p > 0 && c.rng.Float64() < p
}

// transact completes delivery run[j] with one transaction: the completed ack of the
// message under its lease and the push of its follow-up, which commit together or
// not at all. It reports whether the consumer may go on with the next message.
func (c *consumer) transact(ctx context.Context, leaseID string, run []int, j int) bool {
	r := c.r
	d := &c.deliveries[run[j]]
	m := &r.msgs[d.Msg] // plan fields only
	group := r.groups[c.group]
	fid := FollowUpID(group, m.TxID)
	payload, err := json.Marshal(followUpPayload{G: group, T: m.TxID})
	if err != nil {
		r.fail(fmt.Errorf("checker: follow-up payload: %w", err))
		return false
	}
	req := api.TransactionRequest{Operations: []api.TxOperation{
		{Type: api.TxOpAck, TransactionID: m.TxID, PartitionID: c.partitionID(run[j]), Status: api.AckStatusCompleted,
			ConsumerGroup: c.groupParam(), LeaseID: leaseID},
		{Type: api.TxOpPush, Items: []api.PushItem{{Queue: r.cfg.followUpQueue(), Partition: PartitionName(m.Partition),
			TransactionID: fid, Payload: payload}}},
	}, RequiredLeases: []string{leaseID}}
	b := c.broker()
	d.Tx, d.AckSent = true, r.since()
	res, err := r.clients[b].Transaction(ctx, req)
	d.AckReceived = r.since()
	q := newRequest(RouteTransaction, b, d.AckSent, d.AckReceived, err)
	if err == nil && !res.Success {
		q.Message = res.Error
	}
	r.request(q)
	if err != nil {
		d.Outcome = Unknown
		if !retryable(err) {
			r.violation("transaction", "group %s: transaction completing %s refused: %v", group, m.TxID, err)
		} else {
			c.failed(b)
		}
		return false
	}
	switch {
	case res.Success:
		d.Outcome = Acked
		if !committedBoth(res, m.TxID, fid) {
			r.violation("transaction", "group %s: transaction completing %s answered success with results %+v", group, m.TxID, res.Results)
		}
		// The ack that completes the lease's messages releases it, as a plain
		// ack does; the transaction's answer does not say so.
		d.LeaseReleased = j == len(run)-1
		for _, di := range run[:j] {
			if o := c.deliveries[di].Outcome; o != Acked && o != DeadLettered {
				d.LeaseReleased = false
			}
		}
		c.resolve(d)
	case len(res.Results) > 0 && res.Results[0].Type == api.TxOpAck && res.Results[0].Error != nil && *res.Results[0].Error == leaseRefused:
		d.Outcome = Rejected
		for _, di := range run[:j] {
			if c.deliveries[di].Outcome == Retried {
				d.Outcome = Released // the retry released the lease
			}
		}
	default:
		d.Outcome = Errored
		r.violation("transaction", "group %s: transaction completing %s refused: %s", group, m.TxID, res.Error)
	}
	return d.Outcome == Acked
}

// committedBoth reports whether a successful transaction's results show the ack of
// txID (completed, not dead-lettered) and the push of follow-up fid.
func committedBoth(res *api.TransactionResponse, txID, fid string) bool {
	if len(res.Results) != 2 {
		return false
	}
	a, p := res.Results[0], res.Results[1]
	return a.Type == api.TxOpAck && a.Success && !a.DLQ && a.TransactionID == txID &&
		p.Type == api.TxOpPush && p.Success && p.TransactionID == fid && p.MessageID != ""
}

// readFollowUps pops the whole follow-up queue with autoAck in a consumer group of
// its own, until two pops in a row come back empty. Transport errors and 5xx
// answers are retried for a while: the brokers may still be settling.
func (r *run) readFollowUps(ctx context.Context) ([]FollowUp, error) {
	var out []FollowUp
	deadline := time.Now().Add(30 * time.Second)
	for empty := 0; empty < 2; {
		resp, err := r.clients[0].Pop(ctx, client.PopOptions{Queue: r.cfg.followUpQueue(), ConsumerGroup: followUpGroup,
			Batch: followUpPage, AutoAck: true, Partitions: r.cfg.Partitions, SubscriptionMode: "all"})
		if err == nil && resp.Error != "" {
			err = fmt.Errorf("pop answered error %q", resp.Error)
		}
		if err != nil {
			if !retryable(err) || time.Now().After(deadline) {
				return nil, err
			}
			if !r.pause(ctx, 100*time.Millisecond) {
				return nil, ctx.Err()
			}
			continue
		}
		if len(resp.Messages) == 0 {
			empty++
			continue
		}
		empty = 0
		for _, m := range resp.Messages {
			f := FollowUp{TransactionID: m.TransactionID, Partition: m.Partition}
			var p followUpPayload
			if json.Unmarshal(m.Data, &p) == nil {
				f.Group, f.Source = p.G, p.T
			}
			out = append(out, f)
		}
	}
	return out, nil
}

// followUpStat counts the transactions of one (group, message) by answer.
type followUpStat struct {
	group, msg                  int
	committed, refused, unknown int
	found                       int // follow-ups read
}

// checkFollowUps: every transaction answered success left exactly one follow-up,
// none answered with a refusal did (unless another attempt of it committed or may
// have), no follow-up was pushed twice, and every follow-up belongs to a
// transaction of the run and says so in its payload.
func (v *verifier) checkFollowUps() {
	h := v.h
	stats := make(map[string]*followUpStat)
	for i := range h.Deliveries {
		d := &h.Deliveries[i]
		if !d.Tx {
			continue
		}
		id := FollowUpID(h.Groups[d.Group], h.Messages[d.Msg].TxID)
		st := stats[id]
		if st == nil {
			st = &followUpStat{group: d.Group, msg: d.Msg}
			stats[id] = st
		}
		switch d.Outcome {
		case Acked:
			st.committed++
			v.rep.Transactions++
		case Unknown:
			st.unknown++
			v.rep.TxUnknown++
		default:
			st.refused++
			v.rep.TxRefused++
		}
	}
	v.rep.FollowUps = len(h.FollowUps)
	for _, f := range h.FollowUps {
		st := stats[f.TransactionID]
		if st == nil {
			v.rep.add("tx-unexpected", "follow-up %s (partition %s) was pushed by no transaction of the run", f.TransactionID, f.Partition)
			continue
		}
		st.found++
		m := &h.Messages[st.msg]
		if f.Group != h.Groups[st.group] || f.Source != m.TxID || f.Partition != PartitionName(m.Partition) {
			v.rep.add("data", "follow-up %s read from partition %s names group %q, message %q", f.TransactionID, f.Partition, f.Group, f.Source)
		}
	}
	ids := make([]string, 0, len(stats))
	for id := range stats {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(a, b) })
	for _, id := range ids {
		st := stats[id]
		switch {
		case st.found > 1:
			v.rep.add("tx-twice", "follow-up %s was read %d times", id, st.found)
		case st.found == 0 && st.committed > 0:
			v.rep.add("tx-missing", "follow-up %s is missing, although its transaction answered success", id)
		case st.found == 1 && st.committed == 0 && st.unknown == 0:
			v.rep.add("tx-refused", "follow-up %s exists, although every transaction pushing it was refused (%d)", id, st.refused)
		}
	}
}
