package analytics

import (
	"time"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
)

// Limits and default windows of the status and analytics views.
const (
	// maxRange is the longest from..to window a view accepts.
	maxRange = 366 * 24 * time.Hour
	// maxCountPoints caps the buckets of /status/analytics.
	maxCountPoints = 10000
	// defaultWindow is the window of every view but /status/analytics, whose window
	// is defaultCountWindow.
	defaultWindow      = time.Hour
	defaultCountWindow = 24 * time.Hour
)

// Filter selects what a view covers: the window [From, To) (zero From = To minus the
// view's default, zero To = now), exact-match filters (empty = any) and the scope.
// Each view says which filters it applies, and whether it serves a tenant scope.
type Filter struct {
	From      time.Time
	To        time.Time
	Queue     string
	Namespace string
	Task      string
	Hostname  string
	WorkerID  string
	// Group is a consumer group name (the consumer-lag view).
	Group string
	// Scope is the request's scope; Queue (and Group) are stored names in it. The
	// zero value is the global scope: every queue, under its stored name.
	Scope queue.Scope
}

// bucketFor is the series bucket width for a window of length d: up to 1 h → finest
// (the recorder's bucket, a minute by default), 6 h → 5 min, 24 h → 15 min, 7 d →
// 60 min, else 360 min. finest divides a minute, so every width is a multiple of it.
func bucketFor(d, finest time.Duration) time.Duration {
	switch {
	case d <= time.Hour:
		return finest
	case d <= 6*time.Hour:
		return 5 * time.Minute
	case d <= 24*time.Hour:
		return 15 * time.Minute
	case d <= 7*24*time.Hour:
		return time.Hour
	}
	return 6 * time.Hour
}

// intervalBucket is the bucket width of an interval name of /status/analytics.
func intervalBucket(interval string) (time.Duration, bool) {
	switch interval {
	case "minute":
		return time.Minute, true
	case "hour":
		return time.Hour, true
	case "day":
		return 24 * time.Hour, true
	}
	return 0, false
}

// window is a validated view window: [From, To) cut into buckets of Bucket, aligned
// to multiples of Bucket since the Unix epoch. From is the start of the first whole
// bucket at or after the requested from; the last bucket holds To and may be partial.
type window struct {
	From   time.Time
	To     time.Time
	Bucket time.Duration
}

// newWindow validates from..to (zero from = to − def, zero to = now) and aligns it to
// bucket (zero = bucketFor the window's length and finest).
func newWindow(from, to time.Time, def, bucket, finest time.Duration) (window, error) {
	if to.IsZero() {
		to = time.Now()
	}
	if from.IsZero() {
		from = to.Add(-def)
	}
	to, from = to.UTC(), from.UTC()
	if !from.Before(to) {
		return window{}, queue.Invalid("from", "from must be before to")
	}
	if to.Sub(from) > maxRange {
		return window{}, queue.Invalid("from", "from..to must span at most %d days", int(maxRange/(24*time.Hour)))
	}
	if bucket == 0 {
		bucket = bucketFor(to.Sub(from), finest)
	}
	start := from.Truncate(bucket)
	if start.Before(from) {
		start = start.Add(bucket)
	}
	if !start.Before(to) {
		start = to.Add(-time.Nanosecond).Truncate(bucket)
	}
	return window{From: start, To: to, Bucket: bucket}, nil
}

// Buckets returns the starts of the buckets that hold a part of the window, newest
// first.
func (w window) Buckets() []time.Time {
	var out []time.Time
	for t := w.To.Add(-time.Nanosecond).Truncate(w.Bucket); t.Add(w.Bucket).After(w.From); t = t.Add(-w.Bucket) {
		out = append(out, t)
	}
	return out
}

// Minutes is the bucket width in whole minutes: 0 for a bucket under a minute.
func (w window) Minutes() int { return int(w.Bucket / time.Minute) }

// Seconds is the bucket width in seconds.
func (w window) Seconds() int { return int(w.Bucket / time.Second) }

// minutesOf is the bucket width in minutes, fractions included: parked averages are
// stored as shares of a minute's average.
func (w window) minutesOf() float64 { return w.Bucket.Minutes() }

// timeRange is the window as the views report it.
func (w window) timeRange() api.TimeRange {
	return api.TimeRange{From: api.FormatMillis(w.From), To: api.FormatMillis(w.To)}
}

// perSecond is n per second over one bucket.
func (w window) perSecond(n int64) float64 { return float64(n) / w.Bucket.Seconds() }

// series is the store filter of f over w: the window, its bucket width, f's
// exact-match filters and its scope's prefix.
func (w window) series(f Filter) store.SeriesFilter {
	return store.SeriesFilter{From: w.From, To: w.To, Bucket: w.Bucket, Queue: f.Queue, Namespace: f.Namespace,
		Task: f.Task, Hostname: f.Hostname, WorkerID: f.WorkerID, Prefix: f.Scope.Prefix()}
}

// viewWindow checks the named filters of f and returns its window with the default
// length def and the bucket width bucketFor the window's length and finest.
func viewWindow(f Filter, def, finest time.Duration, filters ...string) (window, error) {
	if err := checkFilters(f, filters...); err != nil {
		return window{}, err
	}
	return newWindow(f.From, f.To, def, 0, finest)
}

// checkFilters checks the named exact-match filters of f ("queue", "namespace",
// "task", "hostname", "workerId", "group"): each is empty or a valid name.
func checkFilters(f Filter, filters ...string) error {
	values := map[string]string{"queue": f.Queue, "namespace": f.Namespace, "task": f.Task,
		"hostname": f.Hostname, "workerId": f.WorkerID, "group": f.Group}
	for _, field := range filters {
		if v := values[field]; v != "" {
			if err := queue.CheckName(field, v); err != nil {
				return err
			}
		}
	}
	return nil
}
