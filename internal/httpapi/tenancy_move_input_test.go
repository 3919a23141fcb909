package httpapi_test

import (
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/store"
)

// moveRoutes are the broker routes that move a tenant between cells, each with a
// valid request for it.
var moveRoutes = []struct {
	method, path string
	body         any
}{
	{http.MethodPost, "/internal/api/tenancy/fence", map[string]any{"tenant": "acme", "fenced": false}},
	{http.MethodGet, "/internal/api/tenancy/export/heads?tenant=acme", nil},
	{http.MethodPost, "/internal/api/tenancy/export/messages", map[string]any{"tenant": "acme"}},
	{http.MethodPost, "/internal/api/tenancy/export/ids", map[string]any{"tenant": "acme", "partitionId": someUUID}},
	{http.MethodGet, "/internal/api/tenancy/export/state?tenant=acme", nil},
	{http.MethodPost, "/internal/api/tenancy/import/state", map[string]any{"tenant": "acme", "mode": "structure"}},
	{http.MethodPost, "/internal/api/tenancy/import/messages", map[string]any{"tenant": "acme", "messages": []any{}}},
	{http.MethodPost, "/internal/api/tenancy/import/prune", map[string]any{"tenant": "acme", "partitionId": someUUID, "keep": []any{}}},
	{http.MethodPost, "/internal/api/tenancy/drop", map[string]any{"tenant": "acme"}},
}

// someUUID is a well-formed id that names nothing.
const someUUID = "0191e0a4-5b7c-7d3e-8f10-2a3b4c5d6e7f"

// TestTenantMoveRoutesRefuseBadInput: every malformed request to the move routes is a
// 400 invalid_argument naming the field (a missing or malformed tenant, a limit out
// of 1..5000, a malformed cursor, an unknown key, rows not the tenant's or not rows);
// messages into a partition the cell lacks are a 409; a tenant's request (the
// tenancy header) is a 403; no answer carries database text; and nothing of acme's
// changes.
func TestTenantMoveRoutesRefuseBadInput(t *testing.T) {
	t.Parallel()
	c := startCell(t, "")
	c.push(t, "acme", "orders", "p1", "a", 3)
	before := c.snapshot(t, "acme")
	row := func(pid string) map[string]any {
		return map[string]any{"id": someUUID, "partition_id": pid, "transaction_id": "x", "payload": 1,
			"created_at": "2025-01-01T00:00:00Z"}
	}
	badCursor := map[string]any{"partitionId": someUUID, "createdAt": "2025-01-01T00:00:00Z", "id": someUUID}
	with2 := func(m map[string]any, k string, v any) map[string]any {
		m = maps.Clone(m)
		m[k] = v
		return m
	}
	with := func(k string, v any) map[string]any { return with2(badCursor, k, v) }
	cases := []struct {
		name, method, path string
		body               any
		status             int
		field              string
	}{
		{"HeadsWithoutTenant", http.MethodGet, "/internal/api/tenancy/export/heads", nil, 400, "tenant"},
		{"HeadsMalformedTenant", http.MethodGet, "/internal/api/tenancy/export/heads?tenant=Acme_1", nil, 400, "tenant"},
		{"HeadsReservedTenant", http.MethodGet, "/internal/api/tenancy/export/heads?tenant=queen", nil, 400, "tenant"},
		{"StateWithoutTenant", http.MethodGet, "/internal/api/tenancy/export/state?tenant=", nil, 400, "tenant"},
		{"MessagesWithoutTenant", http.MethodPost, "/internal/api/tenancy/export/messages", map[string]any{"limit": 10}, 400, "tenant"},
		{"MessagesTenantNotAString", http.MethodPost, "/internal/api/tenancy/export/messages", map[string]any{"tenant": 7}, 400, "tenant"},
		{"LimitZero", http.MethodPost, "/internal/api/tenancy/export/messages", map[string]any{"tenant": "acme", "limit": 0}, 400, "limit"},
		{"LimitOverPage", http.MethodPost, "/internal/api/tenancy/export/messages", map[string]any{"tenant": "acme", "limit": 5001}, 400, "limit"},
		{"LimitFraction", http.MethodPost, "/internal/api/tenancy/export/messages", map[string]any{"tenant": "acme", "limit": 1.5}, 400, "limit"},
		{"LimitString", http.MethodPost, "/internal/api/tenancy/export/messages", map[string]any{"tenant": "acme", "limit": "10"}, 400, "limit"},
		{"AfterNotAnObject", http.MethodPost, "/internal/api/tenancy/export/messages", map[string]any{"tenant": "acme", "after": "x"}, 400, "after"},
		{"AfterPartition", http.MethodPost, "/internal/api/tenancy/export/messages",
			map[string]any{"tenant": "acme", "after": with("partitionId", "p1")}, 400, "after.partitionId"},
		{"AfterCreatedAt", http.MethodPost, "/internal/api/tenancy/export/messages",
			map[string]any{"tenant": "acme", "after": with("createdAt", "yesterday")}, 400, "after.createdAt"},
		{"AfterID", http.MethodPost, "/internal/api/tenancy/export/messages",
			map[string]any{"tenant": "acme", "after": with("id", 12)}, 400, "after.id"},
		{"SinceNotAnObject", http.MethodPost, "/internal/api/tenancy/export/messages", map[string]any{"tenant": "acme", "since": []any{}}, 400, "since"},
		{"SinceKeyNotAPartition", http.MethodPost, "/internal/api/tenancy/export/messages",
			map[string]any{"tenant": "acme", "since": map[string]any{"p1": badCursor}}, 400, "since"},
		{"SinceCreatedAt", http.MethodPost, "/internal/api/tenancy/export/messages",
			map[string]any{"tenant": "acme", "since": map[string]any{someUUID: with("createdAt", "2025-13-01")}}, 400, "since." + someUUID + ".createdAt"},
		{"MessagesUnknownKey", http.MethodPost, "/internal/api/tenancy/export/messages", map[string]any{"tenant": "acme", "sinse": map[string]any{}}, 400, "sinse"},
		{"IDsWithoutPartition", http.MethodPost, "/internal/api/tenancy/export/ids", map[string]any{"tenant": "acme"}, 400, "partitionId"},
		{"IDsMalformedPartition", http.MethodPost, "/internal/api/tenancy/export/ids", map[string]any{"tenant": "acme", "partitionId": "p1"}, 400, "partitionId"},
		{"ImportStateWithoutMode", http.MethodPost, "/internal/api/tenancy/import/state", map[string]any{"tenant": "acme"}, 400, "mode"},
		{"ImportStateUnknownMode", http.MethodPost, "/internal/api/tenancy/import/state", map[string]any{"tenant": "acme", "mode": "some"}, 400, "mode"},
		{"ImportStateUnknownKey", http.MethodPost, "/internal/api/tenancy/import/state",
			map[string]any{"tenant": "acme", "mode": "all", "queus": []any{}}, 400, "queus"},
		{"ImportStateRowsNotAnArray", http.MethodPost, "/internal/api/tenancy/import/state",
			map[string]any{"tenant": "acme", "mode": "structure", "queues": map[string]any{}}, 400, "queues"},
		{"ImportStateAnotherTenantsQueue", http.MethodPost, "/internal/api/tenancy/import/state",
			map[string]any{"tenant": "acme", "mode": "structure", "queues": []any{map[string]any{"id": someUUID, "name": "bob:orders"}}}, 400, "queues"},
		{"ImportStateMalformedRow", http.MethodPost, "/internal/api/tenancy/import/state",
			map[string]any{"tenant": "acme", "mode": "structure", "queues": []any{map[string]any{"id": "not-a-uuid", "name": "acme:x"}}}, 400, "queues"},
		{"ImportStateWrongTypeInRow", http.MethodPost, "/internal/api/tenancy/import/state",
			map[string]any{"tenant": "acme", "mode": "all", "kv": []any{map[string]any{"tenant": "acme", "ns": "n", "key": "k", "version": "many"}}}, 400, "kv"},
		{"ImportStateInfiniteTime", http.MethodPost, "/internal/api/tenancy/import/state",
			map[string]any{"tenant": "acme", "mode": "structure", "queues": []any{map[string]any{"id": someUUID, "name": "acme:x",
				"created_at": "infinity"}}}, 400, "queues.created_at"},
		{"ImportStateNullCreatedAt", http.MethodPost, "/internal/api/tenancy/import/state",
			map[string]any{"tenant": "acme", "mode": "structure", "queues": []any{map[string]any{"id": someUUID, "name": "acme:x",
				"created_at": nil}}}, 400, "queues.created_at"},
		{"ImportStateTimeAfterYear9999", http.MethodPost, "/internal/api/tenancy/import/state",
			map[string]any{"tenant": "acme", "mode": "all", "groups": []any{map[string]any{"consumer_group": "acme:g",
				"queue_name": "acme:orders", "subscription_timestamp": "10000-01-01T00:00:00Z"}}}, 400, "groups.subscription_timestamp"},
		{"ImportStateOptionOfTheWrongKind", http.MethodPost, "/internal/api/tenancy/import/state",
			map[string]any{"tenant": "acme", "mode": "structure", "queues": []any{map[string]any{"id": someUUID, "name": "acme:x",
				"queen_options": map[string]any{"retentionSinkHold": "", "minPopWaitTime": "x"}}}}, 400, "queues[0].queen_options.minPopWaitTime"},
		{"ImportStateOptionOver32Bits", http.MethodPost, "/internal/api/tenancy/import/state",
			map[string]any{"tenant": "acme", "mode": "structure", "queues": []any{map[string]any{"id": someUUID, "name": "acme:x",
				"queen_options": map[string]any{"ttl": 2147483648}}}}, 400, "queues[0].queen_options.ttl"},
		{"ImportStateBooleanOptionAsNumber", http.MethodPost, "/internal/api/tenancy/import/state",
			map[string]any{"tenant": "acme", "mode": "structure", "queues": []any{map[string]any{"id": someUUID, "name": "acme:x",
				"queen_options": map[string]any{"dlqOff": 1}}}}, 400, "queues[0].queen_options.dlqOff"},
		{"ImportMessagesInfiniteCreatedAt", http.MethodPost, "/internal/api/tenancy/import/messages",
			map[string]any{"tenant": "acme", "messages": []any{with2(row(someUUID), "created_at", "-infinity")}}, 400, "messages.created_at"},
		{"ImportMessagesMissing", http.MethodPost, "/internal/api/tenancy/import/messages", map[string]any{"tenant": "acme"}, 400, "messages"},
		{"ImportMessagesNotAnArray", http.MethodPost, "/internal/api/tenancy/import/messages", map[string]any{"tenant": "acme", "messages": "x"}, 400, "messages"},
		{"ImportMessagesMalformedRow", http.MethodPost, "/internal/api/tenancy/import/messages",
			map[string]any{"tenant": "acme", "messages": []any{map[string]any{"id": "zz", "partition_id": "p1"}}}, 400, "messages"},
		{"ImportMessagesUnknownPartition", http.MethodPost, "/internal/api/tenancy/import/messages",
			map[string]any{"tenant": "acme", "messages": []any{row(someUUID)}}, 409, ""},
		{"PruneWithoutKeep", http.MethodPost, "/internal/api/tenancy/import/prune", map[string]any{"tenant": "acme", "partitionId": someUUID}, 400, "keep"},
		{"PruneMalformedKeep", http.MethodPost, "/internal/api/tenancy/import/prune",
			map[string]any{"tenant": "acme", "partitionId": someUUID, "keep": []any{someUUID, "x"}}, 400, "keep[1]"},
		{"FenceWithoutFenced", http.MethodPost, "/internal/api/tenancy/fence", map[string]any{"tenant": "acme"}, 400, "fenced"},
		{"FenceFencedNotABoolean", http.MethodPost, "/internal/api/tenancy/fence", map[string]any{"tenant": "acme", "fenced": "yes"}, 400, "fenced"},
		{"FenceUnknownKey", http.MethodPost, "/internal/api/tenancy/fence", map[string]any{"tenant": "acme", "fenced": true, "force": true}, 400, "force"},
		{"DropWithoutTenant", http.MethodPost, "/internal/api/tenancy/drop", map[string]any{}, 400, "tenant"},
		{"DropMalformedJSON", http.MethodPost, "/internal/api/tenancy/drop", `{"tenant":`, 400, ""},
	}
	t.Run("Requests", func(t *testing.T) { // returns when its parallel subtests have
		for _, tc := range cases {
			runBadInput(t, c, tc.name, tc.method, tc.path, tc.body, tc.status, tc.field)
		}
		for _, rt := range moveRoutes {
			t.Run("TenantRefused"+strings.ReplaceAll(rt.path, "/", "_"), func(t *testing.T) {
				t.Parallel()
				a := c.call(t, "acme", rt.method, rt.path, rt.body)
				require.Equal(t, http.StatusForbidden, a.status, "%s", a.body)
				require.Equal(t, "forbidden", a.object(t)["code"])
			})
		}
	})
	require.Equal(t, before, c.snapshot(t, "acme"), "nothing of acme's changed")
}

// runBadInput runs one request of TestTenantMoveRoutesRefuseBadInput as a subtest.
func runBadInput(t *testing.T, c *cell, name, method, path string, body any, status int, field string) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		t.Parallel()
		a := c.call(t, "", method, path, body)
		require.Equal(t, status, a.status, "%s", a.body)
		requireNoDatabaseText(t, a)
		got := a.object(t)
		if status == http.StatusConflict {
			require.Equal(t, "conflict", got["code"], "%s", a.body)
			return
		}
		require.Equal(t, "invalid_argument", got["code"], "%s", a.body)
		if field != "" {
			require.Equal(t, field, got["field"], "%s", a.body)
		}
	})
}

// requireNoDatabaseText fails when a's body carries PostgreSQL's words.
func requireNoDatabaseText(t *testing.T, a answer) {
	t.Helper()
	for _, s := range []string{"SQLSTATE", "pq:", "ERROR:", "jsonb", "violates", "syntax for type"} {
		require.NotContains(t, string(a.body), s, "no database text in the answer")
	}
}

// TestTenantStateKeysMatchTheStore: the state export has exactly the store's keys,
// and the import takes each of them (an empty array for each imports nothing).
func TestTenantStateKeysMatchTheStore(t *testing.T) {
	t.Parallel()
	c := startCell(t, "")
	state := c.ok(t, http.MethodGet, "/internal/api/tenancy/export/state?tenant=acme", nil)
	require.ElementsMatch(t, store.TenantStateKeys(), slices.Collect(maps.Keys(state)))
	body := map[string]any{"tenant": "acme", "mode": "all"}
	for _, k := range store.TenantStateKeys() {
		require.Equal(t, []any{}, state[k], "acme has no %s", k)
		body[k] = []any{}
	}
	require.Equal(t, map[string]any{"tenant": "acme", "mode": "all"}, c.ok(t, http.MethodPost, "/internal/api/tenancy/import/state", body))
}
