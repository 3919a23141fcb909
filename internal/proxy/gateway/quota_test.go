package gateway

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/proxy/tenant"
)

// A snapshot counts what was stored when the broker computed it, which can be before
// the proxy fetches it: what the proxy admitted in between must stay counted, or a
// tenant gets past its quota until the next snapshot.
func TestQuotasKeepWhatASnapshotDoesNotCountYet(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := base
	qs := newQuotas(time.Minute, false, func() time.Time { return now })
	limits := tenant.Quotas{MaxQueues: 2, MaxMessages: 10}
	apply := func(computed time.Time, messages int64, queues ...string) {
		// The broker's own rendering, read back as RunSnapshots reads it.
		s := &api.TenancyUsage{ComputedAt: api.String(api.FormatMillis(computed))}
		s.Tenants = append(s.Tenants, api.TenantUsage{Tenant: "acme", Queues: queues, Messages: messages})
		at, err := computedAt(s)
		require.NoError(t, err)
		require.Equal(t, computed, at)
		qs.apply(s, at)
	}
	apply(now, 1, "orders")

	now = base.Add(10 * time.Second)
	refusal, failedOpen := qs.admit("acme", limits, demand{messages: 1, queues: []string{"billing"}})
	require.Nil(t, refusal)
	require.False(t, failedOpen)
	// Fetched at 30 s, computed at 2 s: it knows nothing of billing.
	now = base.Add(30 * time.Second)
	apply(base.Add(2*time.Second), 1, "orders")
	refusal, _ = qs.admit("acme", limits, demand{messages: 1, queues: []string{"third"}})
	require.NotNil(t, refusal, "billing, admitted after the snapshot was computed, still counts")
	require.Equal(t, "queues", refusal.limit)
	_, _, queues, _ := qs.usage("acme")
	require.EqualValues(t, 2, queues)

	// A snapshot computed after both epochs ended counts billing itself.
	now = base.Add(60 * time.Second)
	apply(base.Add(50*time.Second), 2, "orders", "billing")
	messages, _, queues, _ := qs.usage("acme")
	require.EqualValues(t, 2, messages, "nothing counted twice once the snapshot has it")
	require.EqualValues(t, 2, queues)
	// Left: the epoch fetched at 30 s (it ended after 50 s − skew) and the new one.
	require.Len(t, qs.epochs, 2, "the epochs that ended before the snapshot was computed are gone")
	require.Equal(t, base.Add(30*time.Second), qs.epochs[0].start)
}

// The broker renders computedAt null before its usage job first ran: the snapshot is
// then of unknown time, and a malformed time refuses the snapshot.
func TestComputedAt(t *testing.T) {
	t.Parallel()
	at, err := computedAt(&api.TenancyUsage{})
	require.NoError(t, err)
	require.True(t, at.IsZero())

	at, err = computedAt(&api.TenancyUsage{ComputedAt: api.String("2026-01-01T00:00:02.500Z")})
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 1, 1, 0, 0, 2, 500e6, time.UTC), at)

	_, err = computedAt(&api.TenancyUsage{ComputedAt: api.String("yesterday")})
	var pe *time.ParseError
	require.ErrorAs(t, err, &pe)
}
