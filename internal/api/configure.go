package api

// ConfigureRequest is the body of POST /api/v1/configure. By default the call merges:
// an option the request does not carry keeps its stored value; with Mode
// [ConfigureModeReplace] every option it does not carry is reset to its default.
type ConfigureRequest struct {
	// Queue is the queue name; required.
	Queue string `json:"queue"`
	// Mode is ConfigureModeMerge (also when empty) or ConfigureModeReplace.
	Mode string `json:"mode,omitempty"`
	// Namespace groups queues for namespace pops; absent keeps the stored one.
	Namespace *string `json:"namespace,omitempty"`
	// Task is the second grouping level; absent keeps the stored one.
	Task *string `json:"task,omitempty"`
	// Options holds the queue options; nil sends none, so every option takes its default.
	Options *QueueOptions `json:"options,omitempty"`
}

// QueueOptions is the options object of a configure request. Every field is a pointer
// with omitempty so that a client sends only what it sets and the server can tell an
// explicit zero from an absent option (absent means the server's default, see docs/api.md).
type QueueOptions struct {
	// LeaseTime is the lease duration in seconds (default 300).
	LeaseTime *int `json:"leaseTime,omitempty"`
	// RetryLimit is the number of failed-batch retries before the DLQ (default 3).
	RetryLimit *int `json:"retryLimit,omitempty"`
	// RetryDelay is in milliseconds (default 0): a failed batch is redelivered no sooner.
	RetryDelay *int `json:"retryDelay,omitempty"`
	// Priority orders queues in namespace pops, higher first (default 0).
	Priority *int `json:"priority,omitempty"`
	// MaxSize caps the messages stored in the queue (default 0 = unlimited).
	MaxSize *int `json:"maxSize,omitempty"`
	// TTL is in seconds (default 0 = never): older messages are not delivered.
	TTL *int `json:"ttl,omitempty"`
	// DelayedProcessing hides messages younger than this many seconds (default 0).
	DelayedProcessing *int `json:"delayedProcessing,omitempty"`
	// WindowBuffer keeps a partition unpoppable until its newest message is this many
	// seconds old (default 0).
	WindowBuffer *int `json:"windowBuffer,omitempty"`
	// RetentionSeconds is the retention of pending messages (default 0).
	RetentionSeconds *int `json:"retentionSeconds,omitempty"`
	// CompletedRetentionSeconds is the retention of completed messages (default 0).
	CompletedRetentionSeconds *int `json:"completedRetentionSeconds,omitempty"`
	// RetentionEnabled turns the retention jobs on for this queue (default false).
	RetentionEnabled *bool `json:"retentionEnabled,omitempty"`
	// EncryptionEnabled stores payloads encrypted (default false).
	EncryptionEnabled *bool `json:"encryptionEnabled,omitempty"`
	// DeadLetterQueue may only be true: queen dead-letters every message that exhausts
	// retryLimit, and refuses false.
	DeadLetterQueue *bool `json:"deadLetterQueue,omitempty"`
	// DLQAfterMaxRetries may only be true, like DeadLetterQueue.
	DLQAfterMaxRetries *bool `json:"dlqAfterMaxRetries,omitempty"`
	// MaxWaitTimeSeconds makes eviction delete pending messages older than this (default 0).
	MaxWaitTimeSeconds *int `json:"maxWaitTimeSeconds,omitempty"`
	// MinPopWaitTime is in milliseconds, clamped to 0 … 60000 (default 0; stored only).
	MinPopWaitTime *int `json:"minPopWaitTime,omitempty"`
	// DedupWindowSeconds is stored only (default 3600).
	DedupWindowSeconds *int `json:"dedupWindowSeconds,omitempty"`
	// RetentionSinkHold is stored only (default "").
	RetentionSinkHold *string `json:"retentionSinkHold,omitempty"`
	// RetentionSinkHoldMaxSeconds is stored only (default 604800, 60 … 31536000).
	RetentionSinkHoldMaxSeconds *int `json:"retentionSinkHoldMaxSeconds,omitempty"`
}

// Configure modes (the mode field of a configure request).
const (
	// ConfigureModeMerge keeps every option the request does not name (the default).
	ConfigureModeMerge = "merge"
	// ConfigureModeReplace resets every option the request does not name.
	ConfigureModeReplace = "replace"
)

// QueueOptionsEcho is the complete option set of a queue, every field present. It is the
// options echo of [ConfigureResponse]; the field order matches upstream's.
type QueueOptionsEcho struct {
	// Namespace and Task are set in the queue detail's options only (so its options
	// object can be posted back to configure as is); the configure echo omits them.
	Namespace *string `json:"namespace,omitempty"`
	// Task: see Namespace.
	Task *string `json:"task,omitempty"`
	// Priority orders queues in namespace pops, higher first.
	Priority int `json:"priority"`
	// LeaseTime is the lease duration in seconds.
	LeaseTime int `json:"leaseTime"`
	// RetryLimit is the number of failed-batch retries before the DLQ.
	RetryLimit int `json:"retryLimit"`
	// RetryDelay is in milliseconds.
	RetryDelay int `json:"retryDelay"`
	// MaxSize is stored only.
	MaxSize int `json:"maxSize"`
	// TTL is in seconds: older messages are not delivered (when enforced, see
	// [EnforcedOptions]).
	TTL int `json:"ttl"`
	// DeadLetterQueue is always true: queen dead-letters every message that exhausts
	// retryLimit, whatever the stored column holds.
	DeadLetterQueue bool `json:"deadLetterQueue"`
	// DLQAfterMaxRetries is always true, like DeadLetterQueue.
	DLQAfterMaxRetries bool `json:"dlqAfterMaxRetries"`
	// DelayedProcessing is in seconds.
	DelayedProcessing int `json:"delayedProcessing"`
	// WindowBuffer is in seconds.
	WindowBuffer int `json:"windowBuffer"`
	// RetentionSeconds is the retention of pending messages.
	RetentionSeconds int `json:"retentionSeconds"`
	// CompletedRetentionSeconds is the retention of completed messages.
	CompletedRetentionSeconds int `json:"completedRetentionSeconds"`
	// RetentionEnabled turns the retention jobs on for this queue.
	RetentionEnabled bool `json:"retentionEnabled"`
	// EncryptionEnabled stores payloads encrypted.
	EncryptionEnabled bool `json:"encryptionEnabled"`
	// MaxWaitTimeSeconds makes eviction delete pending messages older than this.
	MaxWaitTimeSeconds int `json:"maxWaitTimeSeconds"`
	// MinPopWaitTime is in milliseconds (0 … 60000); stored and echoed, not applied.
	MinPopWaitTime int `json:"minPopWaitTime"`
	// DedupWindowSeconds is stored and echoed; queen deduplicates a partition's
	// transaction ids without a window.
	DedupWindowSeconds int `json:"dedupWindowSeconds"`
	// RetentionSinkHold is stored and echoed, not applied.
	RetentionSinkHold string `json:"retentionSinkHold"`
	// RetentionSinkHoldMaxSeconds is stored and echoed, not applied.
	RetentionSinkHoldMaxSeconds int `json:"retentionSinkHoldMaxSeconds"`
}

// ConfigureResponse is the 200 answer of POST /api/v1/configure. Clients require
// Configured to be true and the CLI tests assert the Options echo.
type ConfigureResponse struct {
	// Configured is always true on success.
	Configured bool `json:"configured"`
	// QueueID is the queue's UUID.
	QueueID string `json:"queueId"`
	// PartitionID is the UUID of the queue's Default partition.
	PartitionID string `json:"partitionId"`
	// Queue echoes the queue name.
	Queue string `json:"queue"`
	// Namespace is the stored namespace ("" when none).
	Namespace string `json:"namespace"`
	// Task is the stored task ("" when none).
	Task string `json:"task"`
	// Options is the full option set now stored for the queue.
	Options QueueOptionsEcho `json:"options"`
}

// Int returns a pointer to v, for the optional fields of request types.
func Int(v int) *int { return &v }

// Bool returns a pointer to v, for the optional fields of request types.
func Bool(v bool) *bool { return &v }

// String returns a pointer to v, for the optional and nullable fields of wire types.
func String(v string) *string { return &v }

// InvalidOptionBody is the 400 answer of POST /api/v1/configure for an option value
// out of its documented set (retentionSinkHold, retentionSinkHoldMaxSeconds).
type InvalidOptionBody struct {
	// Error is the human-readable message.
	Error string `json:"error"`
	// Code is ErrorCodeInvalidArgument.
	Code ErrorCode `json:"code"`
	// Field is "options.<name>".
	Field string `json:"field"`
	// Invalid is the option's name.
	Invalid string `json:"invalid"`
}
