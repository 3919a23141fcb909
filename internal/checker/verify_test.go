package checker

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// builder makes small histories for the verifier: one group "g", one partition,
// messages m0, m1, ... of producer 0 in push order, lease time 1 s, retryLimit 1.
type builder struct{ h History }

func newBuilder(n int) *builder {
	b := &builder{h: History{Groups: []string{"g"}, Partitions: 1, LeaseTime: time.Second, RetryLimit: 1}}
	for i := range n {
		b.h.Messages = append(b.h.Messages, Message{Producer: 0, Seq: i + 1, TxID: TxID(0, i+1), Pushed: true,
			ID: fmt.Sprintf("id-%02d", i), CreatedAt: fmt.Sprintf("2026-01-01T00:00:00.%06dZ", i)})
	}
	return b
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// pop records a lease answered with msgs, sent at sent ms, answered 5 ms later.
func (b *builder) pop(sent int, msgs ...int) int {
	e := len(b.h.Episodes)
	b.h.Episodes = append(b.h.Episodes, Episode{LeaseID: fmt.Sprintf("lease-%d", e), Sent: ms(sent), Received: ms(sent + 5)})
	for pos, m := range msgs {
		b.h.Deliveries = append(b.h.Deliveries, Delivery{Msg: m, Episode: e, Pos: pos, Outcome: Abandoned})
	}
	return e
}

// ack records the outcome of the pos-th message of episode e, acked at at ms.
func (b *builder) ack(e, pos int, o Outcome, at int, released bool) *builder {
	for i := range b.h.Deliveries {
		d := &b.h.Deliveries[i]
		if d.Episode == e && d.Pos == pos {
			d.Outcome, d.AckSent, d.AckReceived, d.LeaseReleased = o, ms(at), ms(at+2), released
			d.Failed = o == Retried || o == DeadLettered
		}
	}
	return b
}

// tx records that the pos-th message of episode e was completed by a transaction
// answered o at at ms.
func (b *builder) tx(e, pos int, o Outcome, at int) *builder {
	b.ack(e, pos, o, at, false)
	for i := range b.h.Deliveries {
		if d := &b.h.Deliveries[i]; d.Episode == e && d.Pos == pos {
			d.Tx = true
		}
	}
	return b
}

// followUp records that the follow-up of message m for group "g" was read.
func (b *builder) followUp(m int) *builder {
	tx := b.h.Messages[m].TxID
	b.h.FollowUps = append(b.h.FollowUps, FollowUp{TransactionID: FollowUpID("g", tx), Partition: PartitionName(0), Group: "g", Source: tx})
	return b
}

// withTx is good with m1 completed by a committed transaction, whose follow-up was
// read.
func withTx() *builder {
	b := good()
	b.tx(0, 1, Acked, 20)
	b.h.Deliveries[1].LeaseReleased = true
	return b.followUp(1)
}

// good is a clean history: m0, m1 acked in one lease; m2 failed once, then acked;
// m3 dead-lettered after one retry.
func good() *builder {
	b := newBuilder(4)
	e := b.pop(0, 0, 1)
	b.ack(e, 0, Acked, 10, false).ack(e, 1, Acked, 20, true)
	e = b.pop(30, 2, 3)
	b.ack(e, 0, Retried, 40, true).ack(e, 1, Released, 40, false)
	e = b.pop(50, 2, 3)
	b.ack(e, 0, Acked, 60, false).ack(e, 1, Retried, 70, true)
	e = b.pop(80, 3)
	b.ack(e, 0, DeadLettered, 90, true)
	b.h.DeadLetters = []DeadLetter{{MessageID: "id-03", ConsumerGroup: "g", RetryCount: 1}}
	return b
}

func TestVerifyAcceptsACleanHistory(t *testing.T) {
	t.Parallel()
	rep := Verify(&good().h)
	require.True(t, rep.OK(), "%v", rep.Violations)
	require.Equal(t, 4, rep.Pushed)
	require.Equal(t, 7, rep.Delivered)
	require.Equal(t, 3, rep.Redelivered)
	require.Equal(t, 2, rep.FailedAcks)
	require.Equal(t, 1, rep.DeadLettered)
	require.Contains(t, rep.Summary(), " OK")
}

// spooledOutOfOrder is a clean history but for m1 stored before m0, which its producer
// pushed first: m0 spooled by broker 1 after broker 0 had refused it, m1 through
// broker 0, consumed in the order stored.
func spooledOutOfOrder() *builder {
	b := newBuilder(2)
	m0, m1 := &b.h.Messages[0], &b.h.Messages[1]
	m0.CreatedAt, m1.CreatedAt = m1.CreatedAt, m0.CreatedAt
	m0.Buffered, m0.Via, m1.Via = true, []int{0, 1}, []int{0}
	e := b.pop(0, 1, 0)
	b.ack(e, 0, Acked, 10, false).ack(e, 1, Acked, 20, true)
	return b
}

// TestVerifyAcceptsPushOrderAcrossSpools: two brokers replay their spools
// independently, so a producer's pushes to one partition through both, one of them
// spooled, may be stored out of order; that is counted, not a violation.
func TestVerifyAcceptsPushOrderAcrossSpools(t *testing.T) {
	t.Parallel()
	rep := Verify(&spooledOutOfOrder().h)
	require.True(t, rep.OK(), "%v", rep.Violations)
	require.Equal(t, 1, rep.SpooledApart)
	require.Contains(t, rep.Summary(), " spooledApart=1 OK")
}

// superseded is a clean history where lease 0's ack of m0 comes after its expiry and
// after lease 1 completed m0: it is answered "already done" (Superseded).
func superseded() *builder {
	b := newBuilder(1)
	e0 := b.pop(0, 0)
	e1 := b.pop(1100, 0)
	b.ack(e1, 0, Acked, 1110, true)
	b.ack(e0, 0, Superseded, 1200, false)
	return b
}

func TestVerifyAcceptsASupersededAck(t *testing.T) {
	t.Parallel()
	rep := Verify(&superseded().h)
	require.True(t, rep.OK(), "%v", rep.Violations)
	require.Equal(t, 1, rep.Redelivered)
}

// TestVerifyCatchesEachViolation breaks the clean history in one way per case and
// requires the verifier to report that kind.
func TestVerifyCatchesEachViolation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		kind  string
		build func() *builder
	}{
		{"NeverDelivered", "lost", func() *builder {
			b := good()
			b.h.Messages = append(b.h.Messages, Message{TxID: "p0-s5", Seq: 5, Pushed: true, ID: "id-04"})
			return b
		}},
		{"RetriedButNeverBack", "lost", func() *builder {
			b := newBuilder(1)
			b.ack(b.pop(0, 0), 0, Retried, 10, true)
			return b
		}},
		{"AbandonedButNeverBack", "lost", func() *builder {
			b := newBuilder(2)
			e := b.pop(0, 0, 1)
			b.ack(e, 0, Acked, 10, false)
			return b
		}},
		{"DeliveredAfterCompletion", "after-completion", func() *builder {
			b := good()
			b.ack(b.pop(200, 1), 0, Abandoned, 0, false)
			return b
		}},
		{"CompletedTwice", "completed-twice", func() *builder {
			b := good()
			b.ack(b.pop(200, 1), 0, Acked, 210, true)
			return b
		}},
		{"NoopWithoutCompletion", "noop-unresolved", func() *builder {
			b := newBuilder(2)
			e := b.pop(0, 0, 1)
			b.ack(e, 0, Superseded, 10, false).ack(e, 1, Acked, 20, true)
			return b
		}},
		{"NoopBeforeTheCompletion", "noop-unresolved", func() *builder {
			b := superseded()
			b.ack(1, 0, Acked, 1300, true) // the completion now comes after the noop
			return b
		}},
		{"NoopBeforeExpiry", "lease-lost", func() *builder {
			b := superseded()
			b.h.LeaseTime = 2 * time.Second // the first lease was still live at the noop
			return b
		}},
		{"FirstDeliveriesOutOfOrder", "order", func() *builder {
			b := newBuilder(2)
			b.ack(b.pop(0, 1), 0, Acked, 10, true)
			b.ack(b.pop(20, 0), 0, Acked, 30, true)
			return b
		}},
		{"GapInOneLease", "gap", func() *builder {
			b := newBuilder(3)
			e := b.pop(0, 0, 2)
			b.ack(e, 0, Acked, 10, false).ack(e, 1, Acked, 20, true)
			b.ack(b.pop(30, 1), 0, Acked, 40, true)
			return b
		}},
		{"LeaseSkipsAnUnackedMessage", "skip", func() *builder {
			b := newBuilder(2)
			b.pop(0, 0) // abandoned
			b.ack(b.pop(2000, 1), 0, Acked, 2010, true)
			b.ack(b.pop(3000, 0), 0, Acked, 3010, true)
			return b
		}},
		{"AckRefusedBeforeExpiry", "lease-lost", func() *builder {
			b := good()
			b.ack(1, 0, Rejected, 40, false).ack(1, 1, Abandoned, 0, false)
			b.ack(b.pop(2000, 2), 0, Retried, 2010, true)
			return b
		}},
		{"LiveLeaseTakenOver", "lease-overlap", func() *builder {
			b := newBuilder(1)
			b.pop(0, 0) // abandoned: live for 1 s
			b.ack(b.pop(100, 0), 0, Acked, 110, true)
			return b
		}},
		{"RedeliveredBeforeRetryDelay", "retry-delay", func() *builder {
			b := good()
			b.h.RetryDelay = 500 * time.Millisecond
			return b
		}},
		{"DeadLetterRowMissing", "dlq-missing", func() *builder {
			b := good()
			b.h.DeadLetters = nil
			return b
		}},
		{"DeadLetterRowUnexpected", "dlq-unexpected", func() *builder {
			b := good()
			b.h.DeadLetters = append(b.h.DeadLetters, DeadLetter{MessageID: "id-02", ConsumerGroup: "g", RetryCount: 1})
			return b
		}},
		{"DeadLetterRowOfAnotherGroup", "dlq-unexpected", func() *builder {
			b := good()
			b.h.DeadLetters = append(b.h.DeadLetters, DeadLetter{MessageID: "id-03", ConsumerGroup: "other", RetryCount: 1})
			return b
		}},
		{"DeadLetteredTwice", "dlq-twice", func() *builder {
			b := good()
			b.h.DeadLetters = append(b.h.DeadLetters, b.h.DeadLetters[0])
			return b
		}},
		{"DeadLetteredBeforeRetryLimit", "dlq-retries", func() *builder {
			b := good()
			b.h.RetryLimit = 2
			return b
		}},
		{"RetriedBeyondRetryLimit", "dlq-retries", func() *builder {
			b := good()
			b.h.RetryLimit = 0
			b.h.DeadLetters[0].RetryCount = 0
			return b
		}},
		{"DeadLetterRowRetryCount", "dlq-retries", func() *builder {
			b := good()
			b.h.DeadLetters[0].RetryCount = 3
			return b
		}},
		{"PushOrderNotKept", "push-order", func() *builder {
			b := good()
			b.h.Messages[0].CreatedAt, b.h.Messages[1].CreatedAt = b.h.Messages[1].CreatedAt, b.h.Messages[0].CreatedAt
			return b
		}},
		{"PushOrderNotKeptByOneBrokersSpool", "push-order", func() *builder {
			b := spooledOutOfOrder()
			b.h.Messages[0].Via = []int{0}
			return b
		}},
		{"PushOrderNotKeptAcrossBrokersUnspooled", "push-order", func() *builder {
			b := spooledOutOfOrder()
			b.h.Messages[0].Buffered = false
			return b
		}},
		{"FollowUpTwice", "tx-twice", func() *builder {
			return withTx().followUp(1)
		}},
		{"FollowUpOfARefusedTransaction", "tx-refused", func() *builder {
			b := newBuilder(1)
			b.tx(b.pop(0, 0), 0, Rejected, 1200)
			b.ack(b.pop(1300, 0), 0, Acked, 1310, true)
			return b.followUp(0)
		}},
		{"FollowUpMissing", "tx-missing", func() *builder {
			b := withTx()
			b.h.FollowUps = nil
			return b
		}},
		{"FollowUpOfNoTransaction", "tx-unexpected", func() *builder {
			return good().followUp(0)
		}},
		{"FollowUpPayloadWrong", "data", func() *builder {
			b := withTx()
			b.h.FollowUps[0].Source = "p0-s9"
			return b
		}},
		{"Answered500", "status", func() *builder {
			b := good()
			b.h.Only503 = true
			b.h.Requests = []Request{{Route: RoutePush, Sent: ms(1), Received: ms(2), Status: 500, Code: "internal", Message: "boom"}}
			return b
		}},
		{"Answered504", "status", func() *builder {
			b := good()
			b.h.Only503 = true
			b.h.Requests = []Request{{Route: RouteAck, Sent: ms(1), Received: ms(2), Status: 504, Code: "timeout"}}
			return b
		}},
		{"RecordedViolation", "data", func() *builder {
			b := good()
			b.h.Violations = []Violation{{Kind: "data", Detail: "bad payload"}}
			return b
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rep := Verify(&tc.build().h)
			require.False(t, rep.OK())
			require.Positive(t, rep.Kinds()[tc.kind], "want a %q violation, got %v", tc.kind, rep.Violations)
			require.Contains(t, rep.Summary(), "FAILED")
		})
	}
}

// TestVerifyAcceptsUnknownOutcomes: an ack whose answer was lost may or may not have
// applied, so neither a missing redelivery nor a dead-letter row after it is held
// against the broker.
func TestVerifyAcceptsUnknownOutcomes(t *testing.T) {
	t.Parallel()
	b := newBuilder(2)
	e := b.pop(0, 0, 1)
	b.ack(e, 0, Unknown, 10, false).ack(e, 1, Unknown, 10, false)
	b.h.Deliveries[1].Failed = true
	b.h.DeadLetters = []DeadLetter{{MessageID: "id-01", ConsumerGroup: "g", RetryCount: 0}}
	rep := Verify(&b.h)
	require.True(t, rep.OK(), "%v", rep.Violations)
	require.Equal(t, 2, rep.UnknownAcks)
}

// TestVerifyAcceptsTransactionsAndOutages: a committed transaction with its
// follow-up, a refused one without, an unanswered one either way, buffered pushes
// and 503 answers are all within the guarantees.
func TestVerifyAcceptsTransactionsAndOutages(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		build func() *builder
	}{
		{"UnknownTransactionCommitted", func() *builder {
			b := newBuilder(2)
			b.tx(b.pop(0, 0, 1), 0, Unknown, 10) // m0 done: never redelivered
			b.tx(b.pop(1100, 1), 0, Rejected, 2200)
			b.tx(b.pop(2300, 1), 0, Acked, 2310)
			b.h.Deliveries[len(b.h.Deliveries)-1].LeaseReleased = true
			return b.followUp(0).followUp(1)
		}},
		{"UnknownTransactionRolledBack", func() *builder {
			b := newBuilder(2)
			b.tx(b.pop(0, 0, 1), 0, Unknown, 10) // m0 comes back
			b.tx(b.pop(1100, 0, 1), 0, Rejected, 2200)
			e := b.pop(2300, 0, 1)
			b.ack(e, 0, Acked, 2305, false).tx(e, 1, Acked, 2310)
			b.h.Deliveries[len(b.h.Deliveries)-1].LeaseReleased = true
			return b.followUp(1)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := tc.build()
			b.h.Messages[1].Buffered = true
			b.h.Requests = []Request{{Route: RoutePop, Status: 503, Code: "unavailable"}, {Route: RoutePush, Status: 0}}
			rep := Verify(&b.h)
			require.True(t, rep.OK(), "%v", rep.Violations)
			require.Equal(t, 1, rep.Transactions)
			require.Equal(t, 1, rep.TxRefused)
			require.Equal(t, 1, rep.TxUnknown)
			require.Equal(t, len(b.h.FollowUps), rep.FollowUps)
			require.Equal(t, 1, rep.Buffered)
			require.Equal(t, 1, rep.Unavailable)
		})
	}
}

// TestFaultReports measures, from hand-made requests, the disruption each fault
// caused and the time until pushes were queued again.
func TestFaultReports(t *testing.T) {
	t.Parallel()
	push := func(sent, received, status, items, queued, buffered int) Request {
		return Request{Route: RoutePush, Sent: ms(sent), Received: ms(received), Status: status, Items: items, Queued: queued, Buffered: buffered}
	}
	h := &History{
		Faults: []FaultEvent{{Name: "kill", Start: ms(1000), End: ms(1010)}, {Name: "switchover", Start: ms(5000), End: ms(6000)}},
		Requests: []Request{
			push(900, 950, 200, 2, 2, 0),   // before the first fault
			push(990, 1020, 0, 2, 0, 0),    // transport error: the first disruption
			push(1030, 1040, 200, 3, 2, 1), // one item buffered
			push(1050, 1060, 503, 1, 0, 0),
			push(1015, 1900, 200, 1, 1, 0), // sent before the first disruption: not a recovery
			{Route: RoutePop, Sent: ms(1100), Received: ms(1200), Status: 503},
			{Route: RouteAck, Sent: ms(1100), Received: ms(1200), Status: 0},
			push(2000, 2500, 200, 2, 2, 0), // queued again
			push(2100, 2400, 200, 1, 1, 0), // queued again, answered first
			push(5100, 5200, 200, 4, 4, 0), // the switchover is seamless
		},
	}
	got := faultReports(h)
	require.Len(t, got, 2)
	kill := got[0]
	require.Equal(t, "kill", kill.Name)
	require.True(t, kill.Disrupted)
	require.Equal(t, ms(1020), kill.FirstDisruption)
	require.True(t, kill.Recovered)
	require.Equal(t, ms(1400), kill.Recovery)
	require.Equal(t, 3, kill.PushesQueued)
	require.Equal(t, 1, kill.PushesBuffered)
	require.Equal(t, 1, kill.Pushes503)
	require.Equal(t, 1, kill.PushErrors)
	require.Equal(t, 1, kill.Other503)
	require.Equal(t, 1, kill.OtherErrors)
	require.Contains(t, kill.String(), "queued again after 1.400 s")

	sw := got[1]
	require.False(t, sw.Disrupted)
	require.True(t, sw.Recovered)
	require.Zero(t, sw.Recovery)
	require.Equal(t, 1, sw.PushesQueued)
	require.Contains(t, sw.String(), "no disruption")

	h.Requests = h.Requests[:7] // never queued again
	require.False(t, faultReports(h)[0].Recovered)
	require.Contains(t, faultReports(h)[0].String(), "NOT queued again")
}

// TestVerifyCountsServerErrors: without Only503 a 500 is counted, not a violation;
// a 503 never is one.
func TestVerifyCountsServerErrors(t *testing.T) {
	t.Parallel()
	b := good()
	b.h.Requests = []Request{{Route: RoutePop, Status: 500, Code: "internal"}, {Route: RoutePush, Status: 503, Code: "unavailable"}}
	rep := Verify(&b.h)
	require.True(t, rep.OK(), "%v", rep.Violations)
	require.Equal(t, 1, rep.ServerErrors)
	require.Equal(t, 1, rep.Unavailable)

	b.h.Only503 = true
	rep = Verify(&b.h)
	require.Equal(t, 1, rep.Kinds()["status"], "%v", rep.Violations)
	require.Contains(t, rep.Violations[0].Detail, "GET /api/v1/pop/queue/{queue}")
	require.Contains(t, rep.Violations[0].Detail, "500 internal")
}

// TestVerifyCountsTimeoutsOfAFaultThatCausesThem: with Only503, a 504 timeout whose
// answer arrived in the window of a fault marked Timeouts is counted apart; the same
// answer before that window, or a 500 in it, is a violation.
func TestVerifyCountsTimeoutsOfAFaultThatCausesThem(t *testing.T) {
	t.Parallel()
	b := good()
	b.h.Only503 = true
	b.h.Faults = []FaultEvent{{Name: "kill", Start: ms(10), End: ms(20)}, {Name: "freeze", Start: ms(30), End: ms(40), Timeouts: true}}
	timeout := func(at time.Duration) Request {
		return Request{Route: RouteAck, Sent: at - ms(1), Received: at, Status: 504, Code: "timeout"}
	}
	b.h.Requests = []Request{timeout(ms(35)), timeout(ms(50))}
	rep := Verify(&b.h)
	require.True(t, rep.OK(), "%v", rep.Violations)
	require.Equal(t, 2, rep.FaultTimeouts)
	require.Zero(t, rep.ServerErrors)
	require.Contains(t, rep.Summary(), "faultTimeouts=2")

	b.h.Requests = []Request{timeout(ms(15)), {Route: RoutePush, Sent: ms(34), Received: ms(35), Status: 500, Code: "internal"}}
	rep = Verify(&b.h)
	require.Equal(t, 2, rep.Kinds()["status"], "%v", rep.Violations)
	require.Zero(t, rep.FaultTimeouts)
}
