package queue

// Options is a queue's configuration (docs/api.md describes each option). Durations
// keep the upstream units: seconds everywhere except RetryDelay, in milliseconds.
type Options struct {
	Priority   int
	LeaseTime  int
	RetryLimit int
	RetryDelay int
	MaxSize    int
	TTL        int
	// DeadLetterQueue and DLQAfterMaxRetries: a message that exhausts RetryLimit (or
	// is nacked with status dlq) goes to the dead-letter queue unless both are false,
	// when it is dropped.
	DeadLetterQueue           bool
	DLQAfterMaxRetries        bool
	DelayedProcessing         int
	WindowBuffer              int
	RetentionSeconds          int
	CompletedRetentionSeconds int
	RetentionEnabled          bool
	EncryptionEnabled         bool
	MaxWaitTimeSeconds        int
	// MinPopWaitTime (ms, 0…MaxMinPopWaitTime), DedupWindowSeconds,
	// RetentionSinkHold and RetentionSinkHoldMaxSeconds are the 1.x options queen
	// stores and echoes but does not apply.
	MinPopWaitTime              int
	DedupWindowSeconds          int
	RetentionSinkHold           string
	RetentionSinkHoldMaxSeconds int
}

// Bounds of the 1.x options queen stores and echoes (docs/api.md).
const (
	// MaxMinPopWaitTime is the ceiling minPopWaitTime is clamped to, in milliseconds.
	MaxMinPopWaitTime = 60000
	// DefaultDedupWindowSeconds is dedupWindowSeconds when not set.
	DefaultDedupWindowSeconds = 3600
	// DefaultRetentionSinkHoldMaxSeconds is retentionSinkHoldMaxSeconds when not set.
	DefaultRetentionSinkHoldMaxSeconds = 604800
	// MinRetentionSinkHoldMaxSeconds and MaxRetentionSinkHoldMaxSeconds bound
	// retentionSinkHoldMaxSeconds; a value outside is refused.
	MinRetentionSinkHoldMaxSeconds = 60
	MaxRetentionSinkHoldMaxSeconds = 31536000
	// MaxRetentionSinkHoldLength is the longest retentionSinkHold accepted.
	MaxRetentionSinkHoldLength = 64
)

// DefaultOptions are the values configure applies to every option a request leaves
// out (full replacement, not merge) and that auto-created queues get.
//
// retryDelay and ttl default to 0 here, where upstream stores 1000 ms and 3600 s but
// never applies them: queen enforces both, and enforcing upstream's numbers by default
// would delay every retry by a second and silently expire every message after an
// hour. With 0 the default behaviour is upstream's; a queue configured with a value
// gets it enforced (see [Enforced] for values upstream stored).
func DefaultOptions() Options {
	return Options{LeaseTime: 300, RetryLimit: 3, DeadLetterQueue: true, DLQAfterMaxRetries: true,
		DedupWindowSeconds: DefaultDedupWindowSeconds, RetentionSinkHoldMaxSeconds: DefaultRetentionSinkHoldMaxSeconds}
}

// IsSinkHold reports whether s is a valid retentionSinkHold: at most
// MaxRetentionSinkHoldLength characters from A–Z, a–z, 0–9, '.', '_' and '-'.
func IsSinkHold(s string) bool {
	if len(s) > MaxRetentionSinkHoldLength {
		return false
	}
	for _, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

// Enforced says whether queen applies a queue's stored TTL, RetryDelay and MaxSize.
// Upstream stores them (ttl and retryDelay on every queue) and applies none to live
// pushes and pops, so queen applies them only when they were set through its own
// configure and have not been changed since by another broker; otherwise it treats
// them as 0 and the field is false. A stored 0 means "off" either way and is reported
// as enforced.
type Enforced struct {
	TTL        bool
	RetryDelay bool
	MaxSize    bool
}

// Validate rejects negative values, naming the option.
func (o Options) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{
		{"priority", o.Priority}, {"leaseTime", o.LeaseTime}, {"retryLimit", o.RetryLimit},
		{"retryDelay", o.RetryDelay}, {"maxSize", o.MaxSize}, {"ttl", o.TTL},
		{"delayedProcessing", o.DelayedProcessing}, {"windowBuffer", o.WindowBuffer},
		{"retentionSeconds", o.RetentionSeconds}, {"completedRetentionSeconds", o.CompletedRetentionSeconds},
		{"maxWaitTimeSeconds", o.MaxWaitTimeSeconds},
	} {
		if f.v < 0 && f.name != "priority" {
			return Invalid("options."+f.name, "options.%s must not be negative", f.name)
		}
	}
	if !IsSinkHold(o.RetentionSinkHold) {
		return Invalid("options.retentionSinkHold",
			"options.retentionSinkHold must match ^[A-Za-z0-9._-]{0,%d}$", MaxRetentionSinkHoldLength)
	}
	if o.RetentionSinkHoldMaxSeconds < MinRetentionSinkHoldMaxSeconds || o.RetentionSinkHoldMaxSeconds > MaxRetentionSinkHoldMaxSeconds {
		return Invalid("options.retentionSinkHoldMaxSeconds", "options.retentionSinkHoldMaxSeconds must be between %d and %d",
			MinRetentionSinkHoldMaxSeconds, MaxRetentionSinkHoldMaxSeconds)
	}
	return nil
}

// Queue is a configured queue as stored.
type Queue struct {
	ID        string
	Name      string
	Namespace string
	Task      string
	Options   Options
}

// ConfigureEdit is one configure of a queue. Under merge (Replace false) an existing
// queue's stored values are the base and only what the request named changes; under
// replace, and for a queue that does not exist yet, the base is DefaultOptions with
// no namespace or task.
type ConfigureEdit struct {
	Name    string
	Replace bool
	// Namespace and Task are set when not nil.
	Namespace, Task *string
	// ApplyFunc sets the options the request named onto the base (a null resets one to
	// its DefaultOptions value).
	ApplyFunc func(*Options)
	// Keys are the names (as configure spells them) of the options ApplyFunc sets.
	Keys []string
}
