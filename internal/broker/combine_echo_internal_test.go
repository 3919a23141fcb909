package broker

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/testclock"
)

// statementTime is how long each statement of a scriptedInserts takes (fake time).
const statementTime = time.Millisecond

// scriptedInserts is the insert of a combiner under test: each statement reports how
// many items it carries on started, then runs for statementTime and answers each
// item as queued. The push line's scheduling is what is tested; the store's inserts
// are tested against PostgreSQL elsewhere.
type scriptedInserts struct {
	started chan int
}

func (s *scriptedInserts) insert(_ context.Context, items []queue.PushItem) ([]queue.PushResult, error) {
	s.started <- len(items)
	testclock.AdvanceBubble(statementTime)
	res := make([]queue.PushResult, len(items))
	for i := range res {
		res[i] = queue.PushResult{Index: i, Status: queue.StatusQueued}
	}
	return res, nil
}

func echoCombiner(t *testing.T, hold time.Duration) (*pushCombiner, *scriptedInserts) {
	t.Helper()
	s := &scriptedInserts{started: make(chan int, 16)}
	return newPushCombiner(PushBatching{MaxConcurrent: 1, MaxBatch: 500, Preferred: 1, Hold: hold, ParallelMin: 50}, s.insert), s
}

// pushAsync pushes one message from a goroutine of the bubble; the channel is closed
// once it is answered.
func pushAsync(t *testing.T, c *pushCombiner) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, err := c.push(t.Context(), []queue.PushItem{{Queue: "q", Partition: "p"}})
		if err != nil || len(res) != 1 {
			t.Errorf("push: %v, %d results", err, len(res))
		}
	}()
	return done
}

// startedNow is the item count of the statement started since the bubble last
// settled, or 0 when none did.
func startedNow(s *scriptedInserts) int {
	synctest.Wait()
	select {
	case n := <-s.started:
		return n
	default:
		return 0
	}
}

// quiesce lets every statement and wait of the bubble end, so that the test can.
func quiesce() {
	testclock.AdvanceBubble(10 * statementTime)
	synctest.Wait()
}

// TestPushLineWaitsForTheProducersItAnswered: a lone statement answers one push while
// two wait; the next statement waits for the answered producer to come back and
// carries all three. A producer that does not come back is waited for as long as the
// statement took, no longer.
func TestPushLineWaitsForTheProducersItAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, s := echoCombiner(t, 5*time.Millisecond)
		first := pushAsync(t, c)
		require.Equal(t, 1, startedNow(s), "a lone push runs at once")
		pushAsync(t, c)
		pushAsync(t, c)
		<-first
		require.Zero(t, startedNow(s), "the line of two waits for the third")
		testclock.AdvanceBubble(statementTime / 2)
		require.Zero(t, startedNow(s))
		pushAsync(t, c) // the answered producer is back
		require.Equal(t, 3, startedNow(s))
		require.Equal(t, uint64(1), c.stats().Echoed)

		// That statement answers all three; two come back, the third does not.
		testclock.AdvanceBubble(statementTime)
		synctest.Wait()
		pushAsync(t, c)
		pushAsync(t, c)
		require.Zero(t, startedNow(s), "two of three: the line waits")
		testclock.AdvanceBubble(statementTime - time.Microsecond)
		require.Zero(t, startedNow(s), "still within the statement's time")
		testclock.AdvanceBubble(2 * time.Microsecond)
		require.Equal(t, 2, startedNow(s), "the bound passed: the line goes")
		quiesce()
	})
}

// TestPushLineDoesNotWaitForALoneProducer: a producer whose pushes never overlap is
// never held, however quickly it pushes again.
func TestPushLineDoesNotWaitForALoneProducer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, s := echoCombiner(t, 5*time.Millisecond)
		for range 5 {
			done := pushAsync(t, c)
			require.Equal(t, 1, startedNow(s))
			<-done
		}
		require.Zero(t, c.stats().Echoed)
		quiesce()
	})
}

// TestPushLineStopsWaitingForProducersThatPause: producers that pause between pushes
// (their echo never comes back within the statement's time) soon stop being waited
// for: after a few misses a short line goes at once.
func TestPushLineStopsWaitingForProducersThatPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, s := echoCombiner(t, 5*time.Millisecond)
		held := 0
		for range 10 {
			first := pushAsync(t, c)
			require.Equal(t, 1, startedNow(s))
			second := pushAsync(t, c) // waits behind the first: the echo expects two
			<-first
			if startedNow(s) == 0 {
				held++
				testclock.AdvanceBubble(statementTime + time.Microsecond) // nobody comes back
				require.Equal(t, 1, startedNow(s))
			}
			<-second
			testclock.AdvanceBubble(10 * statementTime) // the producers pause
		}
		require.Positive(t, held, "the first echoes are waited for")
		require.Less(t, held, 10, "missed echoes stop the waits")
		require.Zero(t, c.stats().Echoed)
		quiesce()
	})
}

// TestPushLineEchoOffWithoutAHold: a Hold of 0 turns the wait off.
func TestPushLineEchoOffWithoutAHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, s := echoCombiner(t, 0)
		first := pushAsync(t, c)
		require.Equal(t, 1, startedNow(s))
		pushAsync(t, c)
		pushAsync(t, c)
		<-first
		require.Equal(t, 2, startedNow(s), "the line goes at once")
		quiesce()
	})
}

// TestEchoGathersAtMostALineOfEight: with many producers the wait gathers at most
// echoMaxLine pushes, and a line that long already goes at once.
func TestEchoGathersAtMostALineOfEight(t *testing.T) {
	now := time.Now()
	e := echoHold{on: true, score: 1, done: true}
	e.answered(now, time.Millisecond, 30, 2, 500, 5*time.Millisecond)
	require.Equal(t, [2]int{echoMaxLine, echoMaxLine - 2}, [2]int{e.want, e.need}, "30 answered, 2 waiting")
	require.Equal(t, time.Millisecond, e.wait(now, 0, 2, false))
	require.Zero(t, e.wait(now, 0, echoMaxLine, false), "a line of eight goes")

	e.answered(now, time.Millisecond, 4, echoMaxLine, 500, 5*time.Millisecond)
	require.Zero(t, e.wait(now, 0, echoMaxLine, false), "eight already waiting: nothing to wait for")
	require.True(t, e.done)
}
