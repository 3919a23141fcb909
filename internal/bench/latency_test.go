package bench

import (
	"context"
	"encoding/json"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/testclock"
)

func TestPercentile(t *testing.T) {
	t.Parallel()

	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i // 100 … 1, unsorted on purpose
	}
	for _, tc := range []struct {
		name    string
		samples []time.Duration
		p       float64
		want    time.Duration
	}{
		{name: "NoSamplesIsZero", samples: nil, p: 0.5, want: 0},
		{name: "OneSample", samples: ms(7), p: 0.99, want: 7 * time.Millisecond},
		{name: "MedianOfOdd", samples: ms(5, 1, 3), p: 0.5, want: 3 * time.Millisecond},
		{name: "MedianOfEvenIsTheLowerNearestRank", samples: ms(4, 1, 3, 2), p: 0.5, want: 2 * time.Millisecond},
		{name: "P99OfHundred", samples: ms(hundred...), p: 0.99, want: 99 * time.Millisecond},
		{name: "P50OfHundred", samples: ms(hundred...), p: 0.50, want: 50 * time.Millisecond},
		{name: "P100IsTheMax", samples: ms(hundred...), p: 1, want: 100 * time.Millisecond},
		{name: "P99OfTenIsTheMax", samples: ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), p: 0.99, want: 10 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			before := append([]time.Duration(nil), tc.samples...)
			require.Equal(t, tc.want, percentile(tc.samples, tc.p))
			require.Equal(t, before, tc.samples, "the samples are not reordered")
		})
	}
}

func TestLatencyLog(t *testing.T) {
	t.Parallel()

	t.Run("CountsOnlyDeliveriesInsideTheWindow", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			clock := sendClock{base: time.Now()}
			l := newLatencyLog(clock, 2)
			sent := clock.stamp()
			testclock.AdvanceBubble(10 * time.Millisecond) // a delivery before the window
			l.record(0, sent)
			testclock.AdvanceBubble(time.Millisecond)
			start := time.Now()
			testclock.AdvanceBubble(5 * time.Millisecond)
			l.record(1, sent) // 16 ms after its push, inside
			sent2 := clock.stamp()
			testclock.AdvanceBubble(3 * time.Millisecond)
			l.record(0, sent2) // 3 ms, inside
			end := time.Now()
			testclock.AdvanceBubble(time.Millisecond)
			l.record(1, sent2) // after the window
			require.ElementsMatch(t, []time.Duration{16 * time.Millisecond, 3 * time.Millisecond}, l.within(start, end.Sub(start)))
		})
	})
	t.Run("IgnoresMessagesWithoutAStamp", func(t *testing.T) {
		t.Parallel()
		l := newLatencyLog(sendClock{base: time.Now()}, 1)
		l.record(0, 0)
		require.Empty(t, l.perWorker[0])
	})
}

func TestTimedPayload(t *testing.T) {
	t.Parallel()

	t.Run("CarriesItsSendStampAndKeepsItsLength", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			clock := sendClock{base: time.Now()}
			appendPayload := clock.timedPayload(100)
			first := appendPayload(nil)
			testclock.AdvanceBubble(3 * time.Hour)
			second := appendPayload(nil)
			require.Len(t, first, 100)
			require.Len(t, second, 100, "every stamp has 19 digits")
			var p struct {
				Sent int64  `json:"sent"`
				Body string `json:"body"`
			}
			require.NoError(t, json.Unmarshal(second, &p))
			require.Equal(t, clock.stamp(), p.Sent)
		})
	})
	t.Run("SmallerThanItsHeadIsJustTheHead", func(t *testing.T) {
		t.Parallel()
		out := sendClock{base: time.Now()}.timedPayload(10)(nil)
		require.True(t, json.Valid(out), "%s", out)
	})
}

func TestPacer(t *testing.T) {
	t.Parallel()

	t.Run("SpreadsWorkersAndKeepsTheRate", func(t *testing.T) {
		t.Parallel()
		p := newPacer(400, 4) // 400 requests/s from 4 workers: each every 10 ms
		require.Equal(t, 10*time.Millisecond, p.interval)
		t0 := time.Unix(1000, 0)
		var first []time.Duration
		for w := range 4 {
			first = append(first, p.delay(w, t0))
		}
		require.Equal(t, []time.Duration{0, 2500 * time.Microsecond, 5 * time.Millisecond, 7500 * time.Microsecond}, first)
		// Worker 0 answered at once; its next slot is one interval after the first.
		require.Equal(t, 9*time.Millisecond, p.delay(0, t0.Add(time.Millisecond)))
		// Late by less than the allowed lag: it goes at once and the schedule holds.
		require.Equal(t, time.Duration(0), p.delay(0, t0.Add(25*time.Millisecond)))
		require.Equal(t, 5*time.Millisecond, p.delay(0, t0.Add(25*time.Millisecond)))
	})
	t.Run("DropsSlotsMissedByMoreThanTheLag", func(t *testing.T) {
		t.Parallel()
		p := newPacer(100, 1) // every 10 ms
		t0 := time.Unix(1000, 0)
		require.Equal(t, time.Duration(0), p.delay(0, t0))
		late := t0.Add(time.Second) // the broker stalled for a second
		require.Equal(t, time.Duration(0), p.delay(0, late))
		require.Equal(t, 10*time.Millisecond, p.delay(0, late), "no burst of the 100 missed slots")
	})
	t.Run("WaitReturnsWhenTheContextEnds", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			p := newPacer(1, 1) // one request per second
			require.NoError(t, p.wait(t.Context(), 0))
			ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
			defer cancel()
			start := time.Now()
			require.ErrorIs(t, p.wait(ctx, 0), context.DeadlineExceeded)
			require.Equal(t, 100*time.Millisecond, time.Since(start))
		})
	})
}
