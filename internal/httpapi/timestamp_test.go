package httpapi

import (
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestTimestampForms(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 3, 12, 27, 40, 0, time.UTC)
	for _, v := range []string{
		"2026-12-03T12:27:40Z", "2026-12-03t12:27:40z", "2026-12-03 12:27:40Z", "2026-12-03 12:27:40",
		"2026-12-03T12:27:40", "2026-12-03T12:27:40+00:00", "2026-12-03T13:27:40+0100", "2026-12-03 14:27:40+02",
		"2026-12-03 12:27:40+00:00", "2026-12-03T11:27:40.000-01:00",
	} {
		got, err := parseTimestamp("timestamp", v)
		require.NoError(t, err, v)
		require.True(t, at.Equal(got), "%s: %v", v, got)
		// In a query the "+" of the offset may arrive unescaped, as a space.
		q, err := url.ParseQuery("from=" + v)
		require.NoError(t, err, v)
		got, err = queryTimestamp(q, "from")
		require.NoError(t, err, v)
		require.True(t, at.Equal(got), "query %s: %v", v, got)
	}
	day, err := parseTimestamp("timestamp", "2026-12-03")
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC), day)
	for _, v := range []string{"yesterday", "2026-13-03", "2026-12-03X12:27:40", "12:27:40"} {
		_, err := parseTimestamp("timestamp", v)
		require.Error(t, err, v)
		_, err = queryTimestamp(url.Values{"from": {v}}, "from")
		require.Error(t, err, v)
	}
}
