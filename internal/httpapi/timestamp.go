package httpapi

import (
	"strings"
	"time"
)

// timestampLayouts are the forms readTimestamp takes, in the order it tries them.
var timestampLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02T15:04:05.999999999Z0700",
	"2006-01-02 15:04:05.999999999Z0700",
	"2006-01-02T15:04:05.999999999Z07",
	"2006-01-02 15:04:05.999999999Z07",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04",
	"2006-01-02 15:04",
	"2006-01-02",
}

// Timestamps of requests must fall within the years RFC 3339 can write, in UTC: a
// time outside them would be stored, and answered in a form no client parses.
var (
	firstTimestamp = time.Date(1, time.January, 1, 0, 0, 0, 0, time.UTC)
	lastTimestamp  = time.Date(10000, time.January, 1, 0, 0, 0, 0, time.UTC)
)

// readTimestamp reads a timestamp of a request, as PostgreSQL's timestamptz input
// would take the common forms: RFC 3339 in either case ("t", "z"), a space instead of
// the "T", an offset written +hh:mm, +hhmm or +hh; without an offset a date-time is
// UTC, and a date is midnight UTC. A time outside the years 0001–9999 in UTC is
// refused.
func readTimestamp(v string) (time.Time, bool) {
	v = strings.ToUpper(v) // RFC 3339 allows "t" and "z"; no other letter is valid
	for _, layout := range timestampLayouts {
		if t, err := time.Parse(layout, v); err == nil {
			return t, !t.Before(firstTimestamp) && t.Before(lastTimestamp)
		}
	}
	return time.Time{}, false
}
