package checker

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// leaseMargin absorbs the difference between the client's monotonic clock and the
// database's wall clock when judging whether a lease can have expired.
const leaseMargin = 50 * time.Millisecond

// never is a time after every recorded event.
const never = time.Duration(math.MaxInt64)

// msgStat summarises the deliveries of one message to one group.
type msgStat struct {
	first, end    int // range of its deliveries in verifier.byGM
	resolved      int // Acked + DeadLettered
	unknown       int
	unknownFailed int // Unknown outcomes of failed acks
	retried       int
	deadLettered  int
	// superseded counts the acks answered "already done by another delivery";
	// supersededRecv is the earliest answer of one.
	superseded     int
	supersededRecv time.Duration
	// minSent and minRecv bound the first delivery: it happened at the database after
	// minSent and before minRecv.
	minSent, minRecv time.Duration
	// doneRecv: the earliest answer of a resolving ack; resolveSent: the earliest
	// sending of an ack that resolved it or may have (Unknown).
	doneRecv, resolveSent time.Duration
	last                  Outcome // outcome of the delivery answered last
}

type verifier struct {
	h   *History
	rep *Report
	// orders[p] lists the delivered messages of partition p in (createdAt, id) order;
	// pos[m] is m's index in its partition's order (-1: never delivered).
	orders [][]int
	pos    []int
	// byGM: delivery indices sorted by (group, message, answer time).
	byGM []int
	// byEp[e] lists episode e's deliveries by position; release[e] is when an ack that
	// released (or may have released) its lease was sent.
	byEp    [][]int
	release []time.Duration
	// epsGP[g][p] lists group g's episodes on partition p by Sent.
	epsGP [][][]int
	stats []msgStat
}

// Verify checks a recorded history against queen's delivery guarantees (see the
// package documentation) and returns the counts and violations. The caller fills in
// what the history does not know (brokers, restarts, elapsed time...).
func Verify(h *History) *Report {
	v := &verifier{h: h, rep: &Report{Groups: len(h.Groups), Partitions: h.Partitions,
		Delivered: len(h.Deliveries), DeadLettered: len(h.DeadLetters), History: h}}
	for _, x := range h.Violations {
		v.rep.add(x.Kind, "%s", x.Detail)
	}
	for i := range h.Messages {
		if h.Messages[i].Pushed {
			v.rep.Pushed++
		}
		if h.Messages[i].Buffered {
			v.rep.Buffered++
		}
	}
	v.checkStatuses()
	v.rep.FaultLog = faultReports(h)
	v.index()
	dlq := v.deadLetterIndex()
	v.stats = make([]msgStat, len(h.Messages))
	gm := 0
	for g := range h.Groups {
		end := gm
		for end < len(v.byGM) && h.Deliveries[v.byGM[end]].Group == g {
			end++
		}
		v.groupStats(g, gm, end)
		gm = end
		v.checkMessages(g)
		v.checkOrder(g)
		v.checkEpisodes(g)
		v.checkDeadLetters(g, dlq[g])
	}
	v.checkFollowUps()
	return v.rep
}

// index builds the partition orders and the delivery and episode indexes.
func (v *verifier) index() {
	h := v.h
	v.orders = make([][]int, h.Partitions)
	v.pos = make([]int, len(h.Messages))
	for i := range h.Messages {
		v.pos[i] = -1
		m := &h.Messages[i]
		if m.CreatedAt != "" && m.Partition >= 0 && m.Partition < h.Partitions {
			v.orders[m.Partition] = append(v.orders[m.Partition], i)
		}
	}
	for _, order := range v.orders {
		slices.SortFunc(order, func(a, b int) int {
			ma, mb := &h.Messages[a], &h.Messages[b]
			return cmp.Or(cmp.Compare(ma.CreatedAt, mb.CreatedAt), cmp.Compare(ma.ID, mb.ID))
		})
		lastSeq := make(map[int]int)
		for k, i := range order {
			v.pos[i] = k
			m := &h.Messages[i]
			if prev, ok := lastSeq[m.Producer]; ok && m.Seq < prev {
				v.checkPushOrder(order[:k], i)
			}
			lastSeq[m.Producer] = max(lastSeq[m.Producer], m.Seq)
		}
	}

	v.byGM = make([]int, len(h.Deliveries))
	for i := range v.byGM {
		v.byGM[i] = i
	}
	slices.SortFunc(v.byGM, func(a, b int) int {
		da, db := &h.Deliveries[a], &h.Deliveries[b]
		return cmp.Or(cmp.Compare(da.Group, db.Group), cmp.Compare(da.Msg, db.Msg),
			cmp.Compare(h.Episodes[da.Episode].Received, h.Episodes[db.Episode].Received), cmp.Compare(a, b))
	})

	v.byEp = make([][]int, len(h.Episodes))
	v.release = make([]time.Duration, len(h.Episodes))
	for e := range v.release {
		v.release[e] = never
	}
	for i := range h.Deliveries {
		d := &h.Deliveries[i]
		v.byEp[d.Episode] = append(v.byEp[d.Episode], i)
		if d.LeaseReleased || d.Outcome == Retried || d.Outcome == Unknown {
			v.release[d.Episode] = min(v.release[d.Episode], d.AckSent)
		}
	}
	for _, ds := range v.byEp {
		slices.SortFunc(ds, func(a, b int) int { return cmp.Compare(h.Deliveries[a].Pos, h.Deliveries[b].Pos) })
	}

	v.epsGP = make([][][]int, len(h.Groups))
	for g := range v.epsGP {
		v.epsGP[g] = make([][]int, h.Partitions)
	}
	for e := range h.Episodes {
		ep := &h.Episodes[e]
		if ep.Group >= 0 && ep.Group < len(h.Groups) && ep.Partition >= 0 && ep.Partition < h.Partitions {
			v.epsGP[ep.Group][ep.Partition] = append(v.epsGP[ep.Group][ep.Partition], e)
		}
	}
	for _, byP := range v.epsGP {
		for _, eps := range byP {
			slices.SortFunc(eps, func(a, b int) int { return cmp.Compare(h.Episodes[a].Sent, h.Episodes[b].Sent) })
		}
	}
}

// groupStats fills v.stats for group g from its deliveries byGM[from:to].
func (v *verifier) groupStats(g, from, to int) {
	h := v.h
	for i := range v.stats {
		v.stats[i] = msgStat{minSent: never, minRecv: never, doneRecv: never, resolveSent: never, supersededRecv: never}
	}
	for k := from; k < to; k++ {
		d := &h.Deliveries[v.byGM[k]]
		ep := &h.Episodes[d.Episode]
		st := &v.stats[d.Msg]
		if st.end == 0 {
			st.first = k
		}
		st.end = k + 1
		st.minSent = min(st.minSent, ep.Sent)
		st.minRecv = min(st.minRecv, ep.Received)
		st.last = d.Outcome
		switch d.Outcome {
		case Acked, DeadLettered:
			st.resolved++
			st.doneRecv = min(st.doneRecv, d.AckReceived)
			st.resolveSent = min(st.resolveSent, d.AckSent)
			if d.Outcome == DeadLettered {
				st.deadLettered++
			}
		case Unknown:
			st.unknown++
			st.resolveSent = min(st.resolveSent, d.AckSent)
			if d.Failed {
				st.unknownFailed++
			}
		case Retried:
			st.retried++
		case Superseded:
			st.superseded++
			st.supersededRecv = min(st.supersededRecv, d.AckReceived)
		case Pending:
			v.rep.add("recorder", "delivery %d of %s to %s has no outcome", v.byGM[k], h.Messages[d.Msg].TxID, h.Groups[g])
		}
	}
}

// checkMessages: every pushed message reached group g and was completed or
// dead-lettered exactly once, and an ack answered "already done" came after an ack
// that did it.
func (v *verifier) checkMessages(g int) {
	h := v.h
	for i := range h.Messages {
		m, st := &h.Messages[i], &v.stats[i]
		n := st.end - st.first
		if n > 1 {
			v.rep.Redelivered += n - 1
		}
		v.rep.FailedAcks += st.retried
		v.rep.UnknownAcks += st.unknown
		switch {
		case !m.Pushed:
		case n == 0:
			v.rep.add("lost", "%s (partition %s) was never delivered to group %s", m.TxID, PartitionName(m.Partition), h.Groups[g])
		case st.resolved+st.unknown == 0:
			v.rep.add("lost", "%s: its last delivery to group %s ended %s and it never came back (%d deliveries)",
				m.TxID, h.Groups[g], st.last, n)
		}
		if st.superseded > 0 && st.resolveSent >= st.supersededRecv {
			// resolveSent covers Unknown acks, which may have resolved it.
			v.rep.add("noop-unresolved", "%s: an ack answered that group %s had already committed it (at %s), but no ack completing or dead-lettering it had been sent by then",
				m.TxID, h.Groups[g], st.supersededRecv)
		}
		if st.resolved > 1 {
			v.rep.add("completed-twice", "%s was completed or dead-lettered %d times by group %s", m.TxID, st.resolved, h.Groups[g])
		}
	}
}

// checkOrder: within each partition, group g never receives a message after it
// completed it or a later one, and first deliveries follow (createdAt, id) order.
func (v *verifier) checkOrder(g int) {
	h := v.h
	for _, order := range v.orders {
		done := never
		for k := len(order) - 1; k >= 0; k-- {
			st := &v.stats[order[k]]
			done = min(done, st.doneRecv)
			for j := st.first; j < st.end; j++ {
				d := &h.Deliveries[v.byGM[j]]
				if sent := h.Episodes[d.Episode].Sent; sent > done {
					v.rep.add("after-completion", "%s delivered to group %s by a pop sent at %s, after an ack completing it (or a later message) was answered at %s",
						h.Messages[order[k]].TxID, h.Groups[g], sent, done)
				}
			}
		}
		later, laterMsg := never, -1
		for k := len(order) - 1; k >= 0; k-- {
			st := &v.stats[order[k]]
			if st.end == st.first {
				continue
			}
			if st.minSent > later {
				v.rep.add("order", "group %s got %s for the first time (pop sent at %s) after %s, which follows it in the partition (answered at %s)",
					h.Groups[g], h.Messages[order[k]].TxID, st.minSent, h.Messages[laterMsg].TxID, later)
			}
			if st.minRecv < later {
				later, laterMsg = st.minRecv, order[k]
			}
		}
	}
}

// checkEpisodes: each lease of group g holds consecutive messages starting right
// after the last acked one, its acks are never refused before it can have expired,
// and no lease of the partition is granted while it is live.
func (v *verifier) checkEpisodes(g int) {
	h := v.h
	for p, eps := range v.epsGP[g] {
		for j, e := range eps {
			ep := &h.Episodes[e]
			ds := v.byEp[e]
			v.checkRun(g, p, e, ds)
			released := false
			acks := slices.Clone(ds)
			slices.SortStableFunc(acks, func(a, b int) int {
				return cmp.Compare(h.Deliveries[a].AckSent, h.Deliveries[b].AckSent)
			})
			expired := false
			for _, di := range acks {
				d := &h.Deliveries[di]
				if d.Outcome == Abandoned || d.Outcome == Rejected || d.Outcome == Superseded {
					expired = true
				}
				if d.AckSent == 0 {
					continue // never sent
				}
				if (d.Outcome == Rejected || d.Outcome == Superseded) && !released && d.AckReceived < ep.Sent+h.LeaseTime-leaseMargin {
					v.rep.add("lease-lost", "group %s: ack of %s under lease %s refused %s after the pop was sent (lease time %s)",
						h.Groups[g], h.Messages[d.Msg].TxID, ep.LeaseID, d.AckReceived-ep.Sent, h.LeaseTime)
				}
				if d.LeaseReleased || d.Outcome == Retried || d.Outcome == Unknown || d.Outcome == Released {
					released = true
				}
			}
			if expired {
				v.rep.ExpiredLeases++
			}
			v.checkRetryDelay(g, p, eps, j, acks)
			for i := j - 1; i >= 0; i-- {
				prev := &h.Episodes[eps[i]]
				if prev.Sent+h.LeaseTime-leaseMargin <= ep.Received {
					break
				}
				if prev.Received < ep.Sent && v.release[eps[i]] >= ep.Received {
					v.rep.add("lease-overlap", "group %s, partition %s: lease %s granted (pop sent at %s) while lease %s (pop sent at %s, answered %s) was live and not released",
						h.Groups[g], PartitionName(p), ep.LeaseID, ep.Sent, prev.LeaseID, prev.Sent, prev.Received)
				}
			}
		}
	}
}

// checkRetryDelay: after a failed ack answered with a retry, no lease of the
// partition is granted to the group before RetryDelay has passed.
func (v *verifier) checkRetryDelay(g, p int, eps []int, j int, acks []int) {
	h := v.h
	if h.RetryDelay <= leaseMargin {
		return
	}
	for _, di := range acks {
		d := &h.Deliveries[di]
		if d.Outcome != Retried {
			continue
		}
		until := d.AckSent + h.RetryDelay - leaseMargin
		for _, e2 := range eps[j+1:] {
			next := &h.Episodes[e2]
			if next.Sent >= until {
				break
			}
			if next.Sent > d.AckReceived && next.Received < until {
				v.rep.add("retry-delay", "group %s, partition %s: lease %s granted %s after the retry of %s (retryDelay %s)",
					h.Groups[g], PartitionName(p), next.LeaseID, next.Received-d.AckSent, h.Messages[d.Msg].TxID, h.RetryDelay)
			}
		}
	}
}

// checkRun: the messages of episode e are consecutive in partition p and start right
// after a message group g had acked before the pop was answered.
func (v *verifier) checkRun(g, p, e int, ds []int) {
	h := v.h
	ep := &h.Episodes[e]
	for j, di := range ds {
		d := &h.Deliveries[di]
		if h.Messages[d.Msg].Partition != p {
			v.rep.add("data", "%s (pushed to %s) delivered under lease %s for partition %s",
				h.Messages[d.Msg].TxID, PartitionName(h.Messages[d.Msg].Partition), ep.LeaseID, PartitionName(p))
			return
		}
		if j > 0 && v.pos[d.Msg] != v.pos[h.Deliveries[ds[j-1]].Msg]+1 {
			v.rep.add("gap", "group %s, lease %s: %s follows %s in one pop, but they are not consecutive in partition %s (positions %d, %d)",
				h.Groups[g], ep.LeaseID, h.Messages[d.Msg].TxID, h.Messages[h.Deliveries[ds[j-1]].Msg].TxID,
				PartitionName(p), v.pos[h.Deliveries[ds[j-1]].Msg], v.pos[d.Msg])
		}
	}
	if len(ds) == 0 {
		return
	}
	k := v.pos[h.Deliveries[ds[0]].Msg]
	if k <= 0 {
		return
	}
	pred := v.orders[p][k-1]
	if sent := v.stats[pred].resolveSent; sent >= ep.Received {
		v.rep.add("skip", "group %s, lease %s (answered at %s) starts at %s, but %s right before it had not been acked by then (first ack sent at %s)",
			h.Groups[g], ep.LeaseID, ep.Received, h.Messages[h.Deliveries[ds[0]].Msg].TxID, h.Messages[pred].TxID, sent)
	}
}

// deadLetterIndex counts the dead-letter rows per group and message; rows of other
// groups or messages are violations.
func (v *verifier) deadLetterIndex() []map[int][]DeadLetter {
	h := v.h
	groups := make(map[string]int, len(h.Groups))
	for g, name := range h.Groups {
		groups[name] = g
	}
	byID := make(map[string]int, len(h.Messages))
	for i := range h.Messages {
		if id := h.Messages[i].ID; id != "" {
			byID[id] = i
		}
	}
	out := make([]map[int][]DeadLetter, len(h.Groups))
	for g := range out {
		out[g] = make(map[int][]DeadLetter)
	}
	for _, row := range h.DeadLetters {
		g, okG := groups[row.ConsumerGroup]
		m, okM := byID[row.MessageID]
		if !okG || !okM {
			v.rep.add("dlq-unexpected", "dead-letter row for message %s, group %q: not a message and group of this run", row.MessageID, row.ConsumerGroup)
			continue
		}
		out[g][m] = append(out[g][m], row)
	}
	return out
}

// checkDeadLetters: group g's dead-letter rows are exactly the messages whose failed
// ack answered dlq, once each, after exactly RetryLimit retries.
func (v *verifier) checkDeadLetters(g int, rows map[int][]DeadLetter) {
	h := v.h
	for i := range h.Messages {
		st, rs, tx := &v.stats[i], rows[i], h.Messages[i].TxID
		switch {
		case len(rs) > 1:
			v.rep.add("dlq-twice", "%s has %d dead-letter rows for group %s", tx, len(rs), h.Groups[g])
		case len(rs) == 1 && st.deadLettered == 0 && st.unknownFailed == 0:
			v.rep.add("dlq-unexpected", "%s is dead-lettered for group %s, but no failed ack of it was answered dlq", tx, h.Groups[g])
		case len(rs) == 0 && st.deadLettered > 0:
			v.rep.add("dlq-missing", "%s: a failed ack answered dlq for group %s, but it is not in the dead-letter queue", tx, h.Groups[g])
		}
		if st.unknownFailed > 0 {
			continue // one failure more or less may have been counted
		}
		if st.retried > h.RetryLimit {
			v.rep.add("dlq-retries", "%s failed %d times for group %s without being dead-lettered (retryLimit %d)", tx, st.retried, h.Groups[g], h.RetryLimit)
		}
		if st.deadLettered > 0 && st.retried != h.RetryLimit {
			v.rep.add("dlq-retries", "%s dead-lettered for group %s after %d retries, want retryLimit=%d", tx, h.Groups[g], st.retried, h.RetryLimit)
		}
		if len(rs) == 1 && rs[0].RetryCount >= 0 && rs[0].RetryCount != h.RetryLimit {
			v.rep.add("dlq-retries", "%s: dead-letter row for group %s has retry_count %d, want %d", tx, h.Groups[g], rs[0].RetryCount, h.RetryLimit)
		}
	}
}

// checkPushOrder judges message i, which sorts after messages of its producer pushed
// later (among before, the messages of its partition that sort before it). A broker
// stores a producer's pushes to a partition in the order it accepted them, spooled or
// not; two brokers' spools are replayed independently, so a pair of which one went
// through another broker than the other while either was spooled is out of order
// without breaking a promise (docs/durability.md, "Replay"): it is counted, and any
// other pair is a violation.
func (v *verifier) checkPushOrder(before []int, i int) {
	m := &v.h.Messages[i]
	apart := false
	for _, j := range before {
		o := &v.h.Messages[j]
		if o.Producer != m.Producer || o.Seq < m.Seq {
			continue
		}
		if (m.Buffered || o.Buffered) && !oneBroker(m, o) {
			apart = true
			continue
		}
		v.rep.add("push-order", "partition %s: %s (createdAt %s) sorts after %s although producer %d pushed it first",
			PartitionName(m.Partition), m.TxID, m.CreatedAt, o.TxID, m.Producer)
		return
	}
	if apart {
		v.rep.SpooledApart++
	}
}

// oneBroker reports whether every push request of a and b went to one broker.
func oneBroker(a, b *Message) bool {
	return len(a.Via) == 1 && len(b.Via) == 1 && a.Via[0] == b.Via[0]
}
