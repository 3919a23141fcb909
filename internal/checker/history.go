package checker

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Outcome is what became of one delivery of a message to a group.
type Outcome uint8

// Outcomes. Acked and DeadLettered move the group's cursor past the message
// (resolving); Unknown may or may not have; the others leave the message to be
// delivered again.
const (
	// Pending: nothing recorded yet (a recorder bug if it survives to Verify).
	Pending Outcome = iota
	// Acked: a completed ack answered success.
	Acked
	// DeadLettered: a failed ack answered success with dlq true.
	DeadLettered
	// Retried: a failed ack answered success without dlq: the lease was released and
	// the retry counter went up.
	Retried
	// Released: not acked because an earlier failure in the same lease released it
	// (never sent, or refused with "lease released by earlier failure").
	Released
	// Abandoned: the consumer never acked it; the lease was left to expire.
	Abandoned
	// Rejected: the ack was refused with "Invalid or expired lease".
	Rejected
	// Unknown: the ack (or transaction) request got no answer (transport error, 5xx).
	Unknown
	// Errored: the ack got an unexpected per-item error (also a violation).
	Errored
	// Superseded: the ack found the message already committed for the group by
	// another delivery (a completed ack answered noop, a failed one "already
	// committed"); it changed nothing. Verify checks that another delivery did
	// resolve the message before.
	Superseded
)

var outcomeNames = [...]string{"pending", "acked", "dead-lettered", "retried", "released",
	"abandoned", "rejected", "unknown", "errored", "superseded"}

func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("outcome(%d)", uint8(o))
}

// resolving reports whether o certainly moved the cursor past the message.
func (o Outcome) resolving() bool { return o == Acked || o == DeadLettered }

// History is everything a run recorded, in the form [Verify] checks. Times are
// offsets from the start of the run (monotonic clock).
type History struct {
	// Groups are the consumer groups, api.QueueModeGroup for queue mode.
	Groups []string
	// Partitions is the number of partitions (named by PartitionName).
	Partitions int
	// LeaseTime, RetryLimit and RetryDelay are the queue's options.
	LeaseTime  time.Duration
	RetryLimit int
	RetryDelay time.Duration
	// Messages are all planned messages, by index.
	Messages []Message
	// Episodes are the leases observed: one per (pop answer, partition).
	Episodes []Episode
	// Deliveries are all messages received by consumers.
	Deliveries []Delivery
	// DeadLetters are the dead-letter rows of the queue at the end.
	DeadLetters []DeadLetter
	// Violations found while recording (bad payloads, unexpected answers...).
	Violations []Violation
	// Requests are the pushes, pops, acks and transactions sent, in no particular order.
	Requests []Request
	// Only503: an answer with a 5xx status other than 503 is a violation.
	Only503 bool
	// Faults are the database faults injected, in order.
	Faults []FaultEvent
	// FollowUps are the messages of the transactions' follow-up queue at the end.
	FollowUps []FollowUp
}

// Message is one message a producer meant to push.
type Message struct {
	Producer, Seq int
	TxID          string
	// Partition is the index of the partition it was pushed to.
	Partition int
	// Pushed is true once a push answered queued or duplicate for it (or buffered,
	// when the run allows it); ID is the message id of that answer (else of its
	// deliveries) and PartitionID the partition id of a queued answer (else of its
	// deliveries).
	Pushed      bool
	ID          string
	PartitionID string
	// Buffered is true when a push of it was answered buffered (spooled by a broker).
	Buffered bool
	// Via lists the brokers its push requests were sent to, in the order first tried.
	Via []int
	// CreatedAt is the createdAt of its deliveries ("" when never delivered).
	CreatedAt string
}

// Episode is one lease as a consumer saw it: the messages of one partition in one
// pop answer.
type Episode struct {
	Group, Partition int
	LeaseID          string
	Consumer, Broker int
	// Sent is when the pop request was sent, Received when its answer was read.
	Sent, Received time.Duration
}

// Delivery is one message in one pop answer, and what the consumer did with it.
type Delivery struct {
	Group, Msg, Episode int
	// Pos is the message's index among the episode's messages; RetryCount is the
	// retry count the pop reported for it (its failed deliveries so far).
	Pos, RetryCount int
	// Failed is true when the consumer acked it failed (false: completed).
	Failed bool
	// Tx is true when the consumer completed it with a transaction (the ack and the
	// push of its follow-up) instead of an ack; Outcome is then the transaction's:
	// Acked when it committed, Rejected or Released when it was refused for the
	// lease, Errored when refused otherwise, Unknown without an answer.
	Tx      bool
	Outcome Outcome
	// AckSent and AckReceived time the ack request (zero when none was sent).
	AckSent, AckReceived time.Duration
	// LeaseReleased is the ack answer's leaseReleased.
	LeaseReleased bool
}

// DeadLetter is one row of the dead-letter queue.
type DeadLetter struct {
	MessageID     string
	ConsumerGroup string
	// RetryCount is the entry's retry count (-1 when unknown).
	RetryCount int
}

// Violation is one broken guarantee.
type Violation struct {
	// Kind names the guarantee, e.g. "lost" or "order".
	Kind string
	// Detail says what happened, naming messages by transaction id.
	Detail string
}

func (v Violation) String() string { return v.Kind + ": " + v.Detail }

// Report is the outcome of a run: counts, and the violations found.
type Report struct {
	Pushed        int // distinct messages pushed (queued or duplicate)
	Delivered     int // deliveries, all groups
	Redelivered   int // deliveries of a message the group had already received
	FailedAcks    int // failed acks answered with a retry
	ExpiredLeases int // leases left to expire (abandoned, refused or unanswered acks)
	DeadLettered  int // dead-letter rows
	UnknownAcks   int // acks whose answer was lost
	Buffered      int // messages whose push was answered buffered (spooled)
	Unavailable   int // requests answered 503
	ServerErrors  int // requests answered with another 5xx
	FaultTimeouts int // requests answered 504 timeout in the window of a fault that may cause them
	Transactions  int // transactions answered success (committed)
	TxRefused     int // transactions answered success false (rolled back)
	TxUnknown     int // transactions whose answer was lost (transport error, 5xx)
	FollowUps     int // messages read from the follow-up queue
	Groups        int
	Partitions    int
	Brokers       int
	Restarts      int
	PushRetries   int // push requests sent again after a transport error
	// SpooledApart counts the messages stored after one their producer pushed later to
	// the same partition, where the two went through different brokers and one was
	// spooled: each broker replays its own spool, so that order is not promised.
	SpooledApart int
	PopErrors    int // pops that failed with a transport error
	Elapsed      time.Duration
	// RestartLog lists the restarts in the order they happened.
	RestartLog []Restart
	// FaultLog lists the database faults in the order they happened.
	FaultLog []FaultReport

	// ViolationCount counts every violation; Violations keeps the first few of each kind.
	ViolationCount int
	Violations     []Violation
	kinds          map[string]int
	// History is what was verified.
	History *History
}

// Restart is one restart of one broker and the traffic that broker served around it,
// judged conservatively: a request counts before the restart when its answer came
// before the stop began, after it when it was sent once the broker was ready again.
type Restart struct {
	Broker   int
	Graceful bool
	// Stopping is when the stop began, Ready when the broker was serving again.
	Stopping, Ready time.Duration
	// PushesBefore and PopsBefore count the pushes answered 2xx and the pops answered
	// with messages by the broker since it was last ready (or since the start);
	// PushesAfter and PopsAfter those until its next restart (or the end).
	PushesBefore, PopsBefore int
	PushesAfter, PopsAfter   int
}

// String renders r for a test log, e.g. "broker 1 graceful restart 4.000..5.406: before
// 103 pushes, 233 pops; after 65 pushes, 291 pops".
func (r Restart) String() string {
	how := "abrupt"
	if r.Graceful {
		how = "graceful"
	}
	return fmt.Sprintf("broker %d %s restart %s..%s: before %d pushes, %d pops; after %d pushes, %d pops",
		r.Broker, how, secs(r.Stopping), secs(r.Ready), r.PushesBefore, r.PopsBefore, r.PushesAfter, r.PopsAfter)
}

// maxPerKind bounds how many violations of one kind a report keeps.
const maxPerKind = 10

func (r *Report) add(kind, format string, args ...any) {
	r.ViolationCount++
	if r.kinds == nil {
		r.kinds = make(map[string]int)
	}
	r.kinds[kind]++
	if r.kinds[kind] <= maxPerKind {
		r.Violations = append(r.Violations, Violation{Kind: kind, Detail: fmt.Sprintf(format, args...)})
	}
}

// OK reports whether no violation was found.
func (r *Report) OK() bool { return r.ViolationCount == 0 }

// Kinds returns the number of violations of each kind.
func (r *Report) Kinds() map[string]int { return r.kinds }

// Summary is the one-line result, e.g.
// "checker: pushed=1200 delivered=4100 ... brokers=2 restarts=1 OK".
func (r *Report) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "checker: pushed=%d buffered=%d delivered=%d redelivered=%d failedAcks=%d expiredLeases=%d dlq=%d unknownAcks=%d "+
		"tx=%d txRefused=%d txUnknown=%d followUps=%d 503s=%d faultTimeouts=%d other5xx=%d groups=%d partitions=%d brokers=%d restarts=%d faults=%d elapsed=%s",
		r.Pushed, r.Buffered, r.Delivered, r.Redelivered, r.FailedAcks, r.ExpiredLeases, r.DeadLettered, r.UnknownAcks,
		r.Transactions, r.TxRefused, r.TxUnknown, r.FollowUps, r.Unavailable, r.FaultTimeouts, r.ServerErrors,
		r.Groups, r.Partitions, r.Brokers, r.Restarts, len(r.FaultLog), r.Elapsed.Round(100*time.Millisecond))
	if r.SpooledApart > 0 {
		fmt.Fprintf(&b, " spooledApart=%d", r.SpooledApart)
	}
	if r.OK() {
		b.WriteString(" OK")
	} else {
		fmt.Fprintf(&b, " FAILED violations=%d %v", r.ViolationCount, r.kinds)
	}
	return b.String()
}

// PartitionName is the name of partition i of the checked queue.
func PartitionName(i int) string { return fmt.Sprintf("p%02d", i) }

// TxID is the transaction id of a producer's seq-th message.
func TxID(producer, seq int) string { return fmt.Sprintf("p%d-s%d", producer, seq) }

// WriteTo writes h as text, one lease per line, grouped by consumer group and
// partition and ordered by pop time, for reading a violation in context:
//
//	g1 p03 lease=… consumer=4 broker=1 pop=1.204..1.210 | p2-s7@2026-…Z r=0 completed acked [1.211..1.215] released | …
func (h *History) WriteTo(w io.Writer) (int64, error) {
	eps := make([]int, len(h.Episodes))
	for i := range eps {
		eps[i] = i
	}
	slices.SortFunc(eps, func(a, b int) int {
		ea, eb := &h.Episodes[a], &h.Episodes[b]
		return cmp.Or(cmp.Compare(ea.Group, eb.Group), cmp.Compare(ea.Partition, eb.Partition), cmp.Compare(ea.Sent, eb.Sent))
	})
	byEp := make([][]int, len(h.Episodes))
	for i := range h.Deliveries {
		byEp[h.Deliveries[i].Episode] = append(byEp[h.Deliveries[i].Episode], i)
	}
	bw := bufio.NewWriter(w)
	var n int64
	for _, e := range eps {
		ep := &h.Episodes[e]
		k, _ := fmt.Fprintf(bw, "%s %s lease=%s consumer=%d broker=%d pop=%s..%s", h.Groups[ep.Group], PartitionName(ep.Partition),
			ep.LeaseID, ep.Consumer, ep.Broker, secs(ep.Sent), secs(ep.Received))
		n += int64(k)
		ds := byEp[e]
		slices.SortFunc(ds, func(a, b int) int { return cmp.Compare(h.Deliveries[a].Pos, h.Deliveries[b].Pos) })
		for _, di := range ds {
			d := &h.Deliveries[di]
			m := &h.Messages[d.Msg]
			status := "completed"
			switch {
			case d.Failed:
				status = "failed"
			case d.Tx:
				status = "completed-by-tx"
			}
			k, _ = fmt.Fprintf(bw, " | %s@%s r=%d %s %s", m.TxID, m.CreatedAt, d.RetryCount, status, d.Outcome)
			n += int64(k)
			if d.AckSent != 0 {
				k, _ = fmt.Fprintf(bw, " [%s..%s]", secs(d.AckSent), secs(d.AckReceived))
				n += int64(k)
			}
			if d.LeaseReleased {
				k, _ = bw.WriteString(" released")
				n += int64(k)
			}
		}
		_ = bw.WriteByte('\n')
		n++
	}
	for _, f := range h.Faults {
		k, _ := fmt.Fprintf(bw, "fault %s %s..%s\n", f.Name, secs(f.Start), secs(f.End))
		n += int64(k)
	}
	for _, row := range h.DeadLetters {
		k, _ := fmt.Fprintf(bw, "dlq %s message=%s retry_count=%d\n", row.ConsumerGroup, row.MessageID, row.RetryCount)
		n += int64(k)
	}
	return n, bw.Flush()
}

// secs renders a time offset in seconds with millisecond precision.
func secs(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }
