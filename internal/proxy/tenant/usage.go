package tenant

import "time"

// Usage is a tenant's metered activity over some span. The counters add up across
// replicas and minutes; StoredMessages, StoredBytes and Queues are gauges (the
// latest usage snapshot) and combine by maximum.
type Usage struct {
	Requests       int64
	PushRequests   int64
	MessagesIn     int64
	DuplicatesIn   int64
	FailedIn       int64
	BytesIn        int64
	BytesOut       int64
	PopRequests    int64
	EmptyPops      int64
	MessagesOut    int64
	Acks           int64
	RejectedRate   int64
	RejectedQuota  int64
	UpstreamErrors int64
	StoredMessages int64
	StoredBytes    int64
	Queues         int64
}

// Add folds o into u: counters are summed, gauges take the maximum.
func (u *Usage) Add(o Usage) {
	u.Requests += o.Requests
	u.PushRequests += o.PushRequests
	u.MessagesIn += o.MessagesIn
	u.DuplicatesIn += o.DuplicatesIn
	u.FailedIn += o.FailedIn
	u.BytesIn += o.BytesIn
	u.BytesOut += o.BytesOut
	u.PopRequests += o.PopRequests
	u.EmptyPops += o.EmptyPops
	u.MessagesOut += o.MessagesOut
	u.Acks += o.Acks
	u.RejectedRate += o.RejectedRate
	u.RejectedQuota += o.RejectedQuota
	u.UpstreamErrors += o.UpstreamErrors
	u.StoredMessages = max(u.StoredMessages, o.StoredMessages)
	u.StoredBytes = max(u.StoredBytes, o.StoredBytes)
	u.Queues = max(u.Queues, o.Queues)
}

// UsagePoint is a tenant's usage over one bucket of a series.
type UsagePoint struct {
	Tenant string
	Start  time.Time
	Usage
}

// Granularity is the bucket size of a usage series.
type Granularity string

// Usage series granularities, and the longest span each may cover.
const (
	GranularityMinute Granularity = "minute"
	GranularityHour   Granularity = "hour"
	GranularityDay    Granularity = "day"
)

// MaxSpan is the longest from–to span a series of g may cover.
func (g Granularity) MaxSpan() time.Duration {
	switch g {
	case GranularityMinute:
		return 24 * time.Hour
	case GranularityHour:
		return 31 * 24 * time.Hour
	case GranularityDay:
		return 400 * 24 * time.Hour
	}
	return 0
}

// Truncate is the start of t's bucket (UTC).
func (g Granularity) Truncate(t time.Time) time.Time {
	t = t.UTC()
	switch g {
	case GranularityHour:
		return t.Truncate(time.Hour)
	case GranularityDay:
		return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	}
	return t.Truncate(time.Minute)
}

// Counters returns u with the gauges zeroed, to compare counts.
func (u Usage) Counters() Usage {
	u.StoredMessages, u.StoredBytes, u.Queues = 0, 0, 0
	return u
}
