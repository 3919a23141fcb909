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

// readTimestamp reads a timestamp of a request, as PostgreSQL's timestamptz input
// would take the common forms: RFC 3339 in either case ("t", "z"), a space instead of
// the "T", an offset written +hh:mm, +hhmm or +hh; without an offset a date-time is
// UTC, and a date is midnight UTC.
func readTimestamp(v string) (time.Time, bool) {
	v = strings.ToUpper(v) // RFC 3339 allows "t" and "z"; no other letter is valid
	for _, layout := range timestampLayouts {
		if t, err := time.Parse(layout, v); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}
