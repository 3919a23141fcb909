package httpapi

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestReadTimestampKeepsToRFC3339Years: the forms PostgreSQL reads are taken, and a
// time outside the years 0001–9999 in UTC is refused, offsets included.
func TestReadTimestampKeepsToRFC3339Years(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"2026-01-02T15:04:05Z", time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC), true},
		{"2026-01-02", time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC), true},
		{"0001-01-01T00:00:00Z", time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), true},
		{"9999-12-31T23:59:59.999999Z", time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC), true},
		{"0001-01-01T00:30:00+01:00", time.Time{}, false}, // year 0 in UTC
		{"0000-01-01T00:00:00Z", time.Time{}, false},
		{"9999-12-31T23:59:59-23:59", time.Time{}, false}, // year 10000 in UTC
		{"infinity", time.Time{}, false},
		{"2026-13-45", time.Time{}, false},
	} {
		got, ok := readTimestamp(tc.in)
		require.Equal(t, tc.ok, ok, tc.in)
		if ok {
			require.True(t, tc.want.Equal(got), "%s: %s", tc.in, got)
		}
	}
}

// TestSubscriptionFromIsATimestampOrNow: a pop's subscriptionFrom that is not "now" nor
// a timestamp in the years 0001–9999 is a 400 naming it, on every pop route, and stores
// nothing; the read routes that list groups keep answering (an infinite start used to
// be stored, and then every one of them answered 500).
func TestSubscriptionFromIsATimestampOrNow(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	ctx := t.Context()
	requireStatus(t, http.StatusOK, b.post(t, "/api/v1/configure", `{"queue":"sf-q","namespace":"sf-ns"}`))
	b.pushOne(t, "sf-q", "p1", "sf-1", `1`)

	bad := []string{"infinity", "-infinity", "Infinity", "2026-13-45", "maybe", "0000-01-01T00:00:00Z",
		"9999-12-31T23:59:59-23:59", "99999-01-01", "4000-01-01 BC", "epoch"}
	routes := []string{"/api/v1/pop/queue/sf-q?", "/api/v1/pop/queue/sf-q/partition/p1?", "/api/v1/pop?namespace=sf-ns&"}
	for i, v := range bad {
		for j, route := range routes {
			group := "sf-bad-" + strconv.Itoa(i) + "-" + strconv.Itoa(j)
			requireError(t, b.get(t, route+"wait=false&consumerGroup="+group+"&subscriptionFrom="+url.QueryEscape(v)),
				http.StatusBadRequest, "invalid_argument",
				`subscriptionFrom must be "now", an RFC 3339 timestamp or a date (YYYY-MM-DD) in the years 0001–9999`,
				"subscriptionFrom")
		}
	}
	var stored int
	require.NoError(t, b.db.QueryRow(ctx, `SELECT count(*) FROM queen.consumer_groups_metadata
		WHERE consumer_group LIKE 'sf-bad-%'`).Scan(&stored))
	require.Zero(t, stored, "a refused pop stores no subscription")

	// Valid starts: before the message it is delivered, after it not; an offset whose
	// "+" arrived unescaped (a space) is read as the offset.
	m := b.popOne(t, "sf-q", "consumerGroup=sf-past&subscriptionFrom=2020-01-01")
	require.Len(t, m["messages"].([]any), 1)
	m = b.popOne(t, "sf-q", "consumerGroup=sf-offset&subscriptionFrom=2020-01-01T00:00:00+01:00")
	require.Len(t, m["messages"].([]any), 1)
	var ts time.Time
	require.NoError(t, b.db.QueryRow(ctx, `SELECT subscription_timestamp FROM queen.consumer_groups_metadata
		WHERE consumer_group = 'sf-offset'`).Scan(&ts))
	require.True(t, ts.Equal(time.Date(2019, 12, 31, 23, 0, 0, 0, time.UTC)), "stored %s", ts)
	for _, v := range []string{"now", "NOW", "9999-12-31T23:59:59Z"} {
		requireStatus(t, http.StatusNoContent,
			b.get(t, "/api/v1/pop/queue/sf-q?wait=false&consumerGroup=sf-late-"+url.QueryEscape(v)+"&subscriptionFrom="+url.QueryEscape(v)))
	}

	for _, path := range []string{"/api/v1/consumer-groups", "/api/v1/status", "/api/v1/resources/queues/sf-q",
		"/api/v1/status/queues/sf-q", "/api/v1/consumer-groups/sf-past", "/api/v1/consumer-groups/lagging"} {
		requireStatus(t, http.StatusOK, b.get(t, path))
	}

	// The other timestamps of requests keep to the same years.
	requireError(t, b.post(t, "/api/v1/consumer-groups/sf-past/subscription",
		`{"subscriptionTimestamp":"9999-12-31T23:59:59-23:59"}`), http.StatusBadRequest, "invalid_argument",
		"subscriptionTimestamp must be an RFC 3339 timestamp (e.g. 2026-01-02T15:04:05Z) in the years 0001–9999",
		"subscriptionTimestamp")
	requireError(t, b.post(t, "/api/v1/consumer-groups/sf-past/queues/sf-q/seek",
		`{"timestamp":"0001-01-01T00:30:00+01:00"}`), http.StatusBadRequest, "invalid_argument",
		"timestamp must be an RFC 3339 timestamp (e.g. 2026-01-02T15:04:05Z) in the years 0001–9999", "timestamp")
	requireError(t, b.get(t, "/api/v1/status?to="+url.QueryEscape("9999-12-31T23:59:59-23:59")),
		http.StatusBadRequest, "invalid_argument",
		"to must be an RFC 3339 timestamp or a date (YYYY-MM-DD) in the years 0001–9999", "to")
}
