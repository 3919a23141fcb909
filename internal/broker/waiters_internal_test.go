package broker

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
)

// woken reports which of ws hold a wake, and consumes it.
func woken(ws ...*waiter) []bool {
	out := make([]bool, len(ws))
	for i, w := range ws {
		select {
		case <-w.wake:
			out[i] = true
		default:
		}
	}
	return out
}

func count(bs []bool) int {
	return len(slices.DeleteFunc(slices.Clone(bs), func(b bool) bool { return !b }))
}

func TestNotifyPartitionsWakesOnePopPerPartitionAndGroup(t *testing.T) {
	t.Parallel()
	ws := newWaiters()
	now := time.Now()
	var g, h []*waiter
	for range 4 {
		g = append(g, ws.park("g", "", now, "q"))
	}
	for range 3 {
		h = append(h, ws.park("h", "", now, "q"))
	}
	onP2 := ws.park("g", "p2", now, "q")
	onP9 := ws.park("g", "p9", now, "q")
	elsewhere := ws.park("g", "", now, "other")

	ws.notifyPartitions("q", []string{"p2"})
	require.Equal(t, []bool{true, false}, woken(onP2, onP9), "the pop parked on the partition filled is the one woken")
	require.Zero(t, count(woken(g...)), "group g's one wake went to the pop parked on p2")
	require.Equal(t, 1, count(woken(h...)), "one pop of group h")
	require.False(t, woken(elsewhere)[0])

	ws.notifyPartitions("q", []string{"p1", "p3"})
	require.Equal(t, 2, count(woken(g...)), "two partitions, two pops of g that take any")
	require.Equal(t, 2, count(woken(h...)))
	require.Equal(t, []bool{false, false}, woken(onP2, onP9))

	// A pop still holding an earlier push's wake does not count for this one.
	g[0].signal()
	ws.notifyPartitions("q", []string{"p4"})
	got := woken(g...)
	require.True(t, got[0])
	require.Equal(t, 2, count(got), "the held wake and a new one")

	// No more pops than partitions: every pop wakes.
	few := newWaiters()
	a, b := few.park("g", "", now, "q"), few.park("g", "x", now, "q")
	few.notifyPartitions("q", []string{"p1", "p2"})
	require.Equal(t, []bool{true, true}, woken(a, b))
}

func TestNotifyWakesEveryPop(t *testing.T) {
	t.Parallel()
	ws := newWaiters()
	now := time.Now()
	all := []*waiter{ws.park("g", "", now, "q"), ws.park("g", "", now, "q"), ws.park("h", "p", now, "q")}
	ws.notify("q")
	require.Equal(t, 3, count(woken(all...)))
}

func TestAWokenPopPassesAWakeOn(t *testing.T) {
	t.Parallel()
	ws := newWaiters()
	now := time.Now()
	self := ws.park("g", "", now, "q", "r")
	sameQ := ws.park("g", "", now, "q")
	sameR := ws.park("g", "", now, "r")
	otherGroup := ws.park("h", "", now, "q")
	otherPartition := ws.park("g", "p", now, "q")

	ws.claimed(self, "q", nil)
	require.Equal(t, []bool{false, true, true, false, false}, woken(self, sameQ, sameR, otherGroup, otherPartition),
		"one pop of the group on each queue it is parked on, one that takes any partition")

	// A pop already holding a wake will claim anyway: the pass goes to none.
	sameQ.signal()
	ws.claimed(self, "q", nil)
	require.Equal(t, []bool{true, true}, woken(sameQ, sameR), "sameQ kept its own wake; r's pop got the pass")

	// A pop parked on a partition passes to one of that partition or any.
	ws.unpark(self)
	ws.unpark(sameQ)
	onP := ws.park("g", "p", now, "q")
	ws.claimed(onP, "q", nil)
	require.Equal(t, []bool{true, false}, woken(otherPartition, otherGroup), "the other pop of group g parked on p")
	onOther := ws.park("g", "other", now, "q")
	ws.claimed(onP, "q", nil)
	require.False(t, woken(onOther)[0], "never a pop parked on another partition")
	require.True(t, woken(otherPartition)[0])
}

func TestAPopThatClaimedThePartitionItWasWokenForPassesNothing(t *testing.T) {
	t.Parallel()
	ws := newWaiters()
	now := time.Now()
	var all []*waiter
	for range 3 {
		all = append(all, ws.park("g", "", now, "q"))
	}
	ws.notifyPartitions("q", []string{"p1"})
	var self *waiter
	for _, w := range all {
		if woken(w)[0] {
			self = w
		}
	}
	require.NotNil(t, self)
	ws.claimed(self, "q", []queue.Message{{Partition: "p1"}})
	require.Zero(t, count(woken(all...)), "the wake was used on its partition")
	ws.claimed(self, "q", []queue.Message{{Partition: "p0"}})
	require.Equal(t, 1, count(woken(all...)), "another partition taken: p1 may still wait")

	// Woken by something else than a push: always passes.
	ws.notify("q")
	woken(all...)
	ws.claimed(self, "q", []queue.Message{{Partition: "p1"}})
	require.Equal(t, 1, count(woken(all...)))
}

func TestUnparkPassesAnUnusedWakeOn(t *testing.T) {
	t.Parallel()
	ws := newWaiters()
	now := time.Now()
	leaving := ws.park("g", "", now, "q")
	staying := ws.park("g", "", now, "q")

	ws.unpark(leaving)
	require.False(t, woken(staying)[0], "a pop without a wake leaves nothing to pass")

	leaving = ws.park("g", "", now, "q")
	leaving.signal()
	ws.unpark(leaving)
	require.True(t, woken(staying)[0], "the wake the leaving pop did not use went on")
	require.Len(t, ws.byQueue["q"], 1)
}

func TestNotifyGroupWakesOnePopThatCanTakeThePartition(t *testing.T) {
	t.Parallel()
	ws := newWaiters()
	now := time.Now()
	anyG := ws.park("g", "", now, "q")
	onA := ws.park("g", "a", now, "q")
	onB := ws.park("g", "b", now, "q")
	otherGroup := ws.park("h", "", now, "q")

	ws.notifyGroup("q", "g", "a")
	require.Equal(t, []bool{false, true, false, false}, woken(anyG, onA, onB, otherGroup),
		"the pop parked on the partition first")
	ws.notifyGroup("q", "g", "c")
	require.Equal(t, []bool{true, false, false, false}, woken(anyG, onA, onB, otherGroup))

	// The only pop that can take it already holds a wake: no other wake, but that pop
	// now passes one on whatever it takes.
	anyG.signal()
	anyG.wokeFor.queue, anyG.wokeFor.partition = "q", "a"
	ws.notifyGroup("q", "g", "c")
	require.Empty(t, anyG.wokeFor.partition)
	require.Equal(t, []bool{true, false, false, false}, woken(anyG, onA, onB, otherGroup))
}

func TestAPopHoldingAWakeOwesAPassWhenNoOtherIsFree(t *testing.T) {
	t.Parallel()
	ws := newWaiters()
	now := time.Now()
	a, b := ws.park("g", "", now, "q"), ws.park("g", "", now, "q")
	spare := ws.park("g", "", now, "q")
	ws.notifyPartitions("q", []string{"p1"})
	ws.notifyPartitions("q", []string{"p2"})
	ws.notifyPartitions("q", []string{"p3"})
	require.Equal(t, 3, count([]bool{len(a.wake) > 0, len(b.wake) > 0, len(spare.wake) > 0}))

	// Every pop holds a wake when p4 is filled: one of them must pass on whatever it
	// takes, even the partition it was first woken for.
	ws.notifyPartitions("q", []string{"p4"})
	var owing int
	for _, w := range []*waiter{a, b, spare} {
		if w.wokeFor.partition == "" {
			owing++
		}
	}
	require.Equal(t, 1, owing)
}

func TestAnEmptyWokenClaimBesideAnotherLeavesOneWakeOwed(t *testing.T) {
	t.Parallel()
	ws := newWaiters()
	now := time.Now()
	a := ws.park("g", "", now, "q")
	b := ws.park("g", "", now, "q")
	other := ws.park("h", "", now, "q")

	// B was woken for p; its claim finds nothing while A's claim runs, and A then
	// takes messages (of p, or of another partition): nothing is owed.
	ws.notifyGroup("q", "g", "p")
	require.Equal(t, 1, count(woken(a, b)))
	tokA := ws.claimBegin("q", "g")
	tokB := ws.claimBegin("q", "g")
	ws.claimEnd("q", "g", tokB, false, b, true)
	ws.claimEnd("q", "g", tokA, true, a, false)
	require.Zero(t, count(woken(a, b, other)))
	require.Empty(t, ws.claims, "nothing is kept once no claim runs")

	// Again, and A finds nothing too: it may have held p when B claimed.
	ws.notifyGroup("q", "g", "p")
	require.Equal(t, 1, count(woken(a, b)))
	tokA = ws.claimBegin("q", "g")
	tokB = ws.claimBegin("q", "g")
	ws.claimEnd("q", "g", tokB, false, b, true)
	require.Zero(t, count(woken(a, b, other)), "not while A's claim runs")
	ws.claimEnd("q", "g", tokA, false, a, false)
	got := woken(a, b, other)
	require.Equal(t, 1, count(got[:2]), "one pop of g, once A's claim ended")
	require.False(t, got[2], "never another group's")
	require.Empty(t, ws.claims, "nothing is kept once no claim runs")

	// The pop woken that way owes nothing when its own claim finds nothing beside
	// another: no chain of empty claims.
	owed := a
	if got[1] {
		owed = b
	}
	tokA = ws.claimBegin("q", "g")
	tokB = ws.claimBegin("q", "g")
	ws.claimEnd("q", "g", tokB, false, owed, true)
	ws.claimEnd("q", "g", tokA, false, nil, false)
	require.Zero(t, count(woken(a, b)))

	// An empty woken claim after a claim beside it ended with nothing wakes one at once.
	ws.notifyGroup("q", "g", "p")
	require.Equal(t, 1, count(woken(a, b)))
	tokB = ws.claimBegin("q", "g")
	tokA = ws.claimBegin("q", "g")
	ws.claimEnd("q", "g", tokA, false, nil, false)
	ws.claimEnd("q", "g", tokB, false, b, true)
	require.Equal(t, 1, count(woken(a, b)))

	// Claims that no wake started owe nothing, whatever they find.
	tokA = ws.claimBegin("q", "g")
	tokB = ws.claimBegin("q", "g")
	ws.claimEnd("q", "g", tokB, false, b, false)
	ws.claimEnd("q", "g", tokA, false, a, false)
	require.Zero(t, count(woken(a, b, other)))
	require.Empty(t, ws.claims)
}

func TestPopBackoff(t *testing.T) {
	t.Parallel()
	b := &Broker{cfg: Config{PopWaitInitialInterval: 100 * time.Millisecond, PopWaitBackoffThreshold: 3,
		PopWaitBackoffMultiple: 2, PopWaitMaxInterval: time.Second}}
	var got []time.Duration
	for k := 1; k <= 6; k++ {
		got = append(got, b.backoff(k))
	}
	require.Equal(t, []time.Duration{100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond,
		800 * time.Millisecond, time.Second, time.Second}, got, "upstream's linear schedule, capped")

	// A multiplier the setting accepts whose product overflows a Duration still waits
	// the longest interval.
	for _, m := range []float64{1e10, 1e300} {
		b.cfg.PopWaitBackoffMultiple = m
		for _, k := range []int{4, 5, 1000} {
			require.Equal(t, time.Second, b.backoff(k), "multiplier %g, k %d", m, k)
		}
	}
}
