package queue

// Options is a queue's configuration (docs/api.md describes each option). Durations
// keep the upstream units: seconds everywhere except RetryDelay, in milliseconds.
type Options struct {
	Priority                  int
	LeaseTime                 int
	RetryLimit                int
	RetryDelay                int
	MaxSize                   int
	TTL                       int
	DeadLetterQueue           bool
	DLQAfterMaxRetries        bool
	DelayedProcessing         int
	WindowBuffer              int
	RetentionSeconds          int
	CompletedRetentionSeconds int
	RetentionEnabled          bool
	EncryptionEnabled         bool
	MaxWaitTimeSeconds        int
}

// DefaultOptions are the values configure applies to every option a request leaves
// out (full replacement, not merge) and that auto-created queues get.
//
// retryDelay and ttl default to 0 here, where upstream stores 1000 ms and 3600 s but
// never applies them: queen enforces both, and enforcing upstream's numbers by default
// would delay every retry by a second and silently expire every message after an
// hour. With 0 the default behaviour is upstream's; a queue configured with a value
// gets it enforced (see [Enforced] for values upstream stored).
func DefaultOptions() Options {
	return Options{LeaseTime: 300, RetryLimit: 3}
}

// Enforced says whether queen applies a queue's stored TTL and RetryDelay. Upstream
// stores both on every queue and applies neither, so queen applies them only when they
// were set through its own configure and have not been changed since by another
// broker; otherwise it treats them as 0 and the field is false. A stored 0 means "off"
// either way and is reported as enforced.
type Enforced struct {
	TTL        bool
	RetryDelay bool
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
