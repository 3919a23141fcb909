package httpapi

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPostgresStatsNames: besides queen's own keys, every object carries the names
// upstream's dashboard reads, with the same numbers.
func TestPostgresStatsNames(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	requireStatus(t, http.StatusCreated, b.post(t, "/api/v1/push", `{"items":[{"queue":"pg-names","payload":{"a":1}}]}`))
	r := b.get(t, "/api/v1/analytics/postgres-stats")
	requireStatus(t, http.StatusOK, r)
	m := r.object(t)
	requireTypes(t, m, map[string]string{"database": "string"})

	cache := obj(t, m["databaseCache"])
	require.Equal(t, cache["hitRatio"], cache["cacheHitRatio"])
	summary := obj(t, m["cacheSummary"])
	require.Equal(t, summary["heapHitRatio"], obj(t, summary["tables"])["hitRatio"])
	require.Equal(t, summary["indexHitRatio"], obj(t, summary["indexes"])["hitRatio"])
	requireTypes(t, obj(t, m["bufferConfig"]), map[string]string{"sharedBuffersSize": "string"})

	messages := findBy(t, m["tableSizes"], "table", "messages")
	requireTypes(t, messages, map[string]string{"totalSize": "string", "tableSize": "string", "indexSize": "string"})
	for _, list := range []string{"tableCache", "indexCache"} {
		for _, row := range arr(t, m[list]) {
			e := obj(t, row)
			require.Equal(t, e["blocksHit"], e["cacheHits"], list)
			require.Equal(t, e["blocksRead"], e["diskReads"], list)
			require.Equal(t, e["hitRatio"], e["cacheHitRatio"], list)
		}
	}
	for _, row := range arr(t, m["deadTuples"]) {
		e := obj(t, row)
		require.Equal(t, e["deadRatio"], e["deadPercentage"])
		require.Contains(t, e, "lastAutovacuum")
	}
	for _, row := range arr(t, m["hotUpdates"]) {
		e := obj(t, row)
		require.Equal(t, e["updates"], e["totalUpdates"])
		require.Equal(t, e["hotRatio"], e["hotUpdatePercentage"])
	}
	for _, row := range arr(t, m["autovacuumStatus"]) {
		requireTypes(t, obj(t, row), map[string]string{"deadTuples": "number"})
	}
}
