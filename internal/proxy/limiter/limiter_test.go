package limiter

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/proxy/store"
	"github.com/queenmq/queen/internal/proxy/tenant"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestBuckets(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Unix(1000, 0)}
	l := New(c.now)
	lim := tenant.Limits{RequestsPerSecond: 10, RequestsBurst: 5, MessagesPerSecond: 10, MessagesBurst: 10}

	t.Run("BigPushPassesOnceThenWaits", func(t *testing.T) {
		release, refused := l.Admit("a", lim, 50)
		require.Nil(t, refused)
		release()
		_, refused = l.Admit("a", lim, 1)
		require.NotNil(t, refused)
		require.Equal(t, LimitMessages, refused.Limit)
		require.InDelta(t, 4.1, refused.RetryAfter.Seconds(), 0.01)
		c.t = c.t.Add(4100 * time.Millisecond)
		release, refused = l.Admit("a", lim, 1)
		require.Nil(t, refused)
		release()
	})

	t.Run("BothOrNeither", func(t *testing.T) {
		l := New(c.now)
		lim := tenant.Limits{RequestsPerSecond: 1, RequestsBurst: 2, MessagesPerSecond: 1, MessagesBurst: 1}
		r, refused := l.Admit("b", lim, 1)
		require.Nil(t, refused)
		r()
		_, refused = l.Admit("b", lim, 1) // messages empty: the request token stays
		require.Equal(t, LimitMessages, refused.Limit)
		r, refused = l.Admit("b", lim, 0)
		require.Nil(t, refused, "the refused push took a request token")
		r()
	})

	t.Run("Concurrency", func(t *testing.T) {
		l := New(c.now)
		lim := tenant.Limits{MaxConcurrent: 2}
		r1, _ := l.Admit("c", lim, 0)
		_, _ = l.Admit("c", lim, 0)
		_, refused := l.Admit("c", lim, 0)
		require.Equal(t, LimitConcurrency, refused.Limit)
		r1()
		r1() // twice is once
		require.Equal(t, 1, l.InFlight("c"))
	})
}

func TestShares(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Unix(1000, 0)}
	l := New(c.now)
	for range 30 {
		l.Admit("a", tenant.Limits{}, 0)
	}
	c.t = c.t.Add(time.Second)
	own := l.Demand(3 * time.Second) // alpha 1: demand is 10/s
	require.InDelta(t, 10, own[0].Requests, 0.01)
	l.ApplySync(&store.DemandSync{Replicas: 2, Total: map[string]store.Demand{"a": {Requests: 20}}})
	req, _ := l.Shares("a")
	require.InDelta(t, 0.1+0.8*0.5, req, 1e-9)
	l.ApplySync(&store.DemandSync{Replicas: 2, Total: map[string]store.Demand{}})
	req, msg := l.Shares("a")
	require.InDelta(t, 0.5, req, 1e-9, "idle everywhere is 1/N")
	require.InDelta(t, 0.5, msg, 1e-9)
}
