package queue

// Options is a queue's configuration (semantics.md §2.1, §4.2). Durations keep the
// upstream units: seconds everywhere except RetryDelay, in milliseconds.
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
func DefaultOptions() Options {
	return Options{LeaseTime: 300, RetryLimit: 3, RetryDelay: 1000, TTL: 3600}
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
