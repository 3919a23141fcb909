package gateway

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
	snapshot := func(computed time.Time, messages int64, queues ...string) *usageSnapshot {
		s := &usageSnapshot{ComputedAt: computed}
		s.Tenants = append(s.Tenants, struct {
			Tenant     string   `json:"tenant"`
			Queues     []string `json:"queues"`
			Partitions int64    `json:"partitions"`
			Messages   int64    `json:"messages"`
			Bytes      int64    `json:"bytes"`
		}{Tenant: "acme", Queues: queues, Messages: messages})
		return s
	}
	qs.apply(snapshot(now, 1, "orders"))

	now = base.Add(10 * time.Second)
	refusal, failedOpen := qs.admit("acme", limits, demand{messages: 1, queues: []string{"billing"}})
	require.Nil(t, refusal)
	require.False(t, failedOpen)
	// Fetched at 30 s, computed at 2 s: it knows nothing of billing.
	now = base.Add(30 * time.Second)
	qs.apply(snapshot(base.Add(2*time.Second), 1, "orders"))
	refusal, _ = qs.admit("acme", limits, demand{messages: 1, queues: []string{"third"}})
	require.NotNil(t, refusal, "billing, admitted after the snapshot was computed, still counts")
	require.Equal(t, "queues", refusal.limit)
	_, _, queues, _ := qs.usage("acme")
	require.EqualValues(t, 2, queues)

	// A snapshot computed after both epochs ended counts billing itself.
	now = base.Add(60 * time.Second)
	qs.apply(snapshot(base.Add(50*time.Second), 2, "orders", "billing"))
	messages, _, queues, _ := qs.usage("acme")
	require.EqualValues(t, 2, messages, "nothing counted twice once the snapshot has it")
	require.EqualValues(t, 2, queues)
	// Left: the epoch fetched at 30 s (it ended after 50 s − skew) and the new one.
	require.Len(t, qs.epochs, 2, "the epochs that ended before the snapshot was computed are gone")
	require.Equal(t, base.Add(30*time.Second), qs.epochs[0].start)
}
