package httpapi

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/queenmq/queen/internal/analytics"
	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/queue"
)

// queueOption is one entry of the configure options table: exactly one of intp,
// boolp and strp is set.
type queueOption struct {
	name  string
	intp  func(*queue.Options) *int
	boolp func(*queue.Options) *bool
	strp  func(*queue.Options) *string
	// lo and hi clamp an integer option (both 0: no clamp).
	lo, hi int
}

// queueOptions lists every option configure reads. Unknown keys in the
// request are ignored.
var queueOptions = []queueOption{
	{name: "leaseTime", intp: func(o *queue.Options) *int { return &o.LeaseTime }},
	{name: "retryLimit", intp: func(o *queue.Options) *int { return &o.RetryLimit }},
	{name: "retryDelay", intp: func(o *queue.Options) *int { return &o.RetryDelay }},
	{name: "priority", intp: func(o *queue.Options) *int { return &o.Priority }},
	{name: "maxSize", intp: func(o *queue.Options) *int { return &o.MaxSize }},
	{name: "ttl", intp: func(o *queue.Options) *int { return &o.TTL }},
	{name: "delayedProcessing", intp: func(o *queue.Options) *int { return &o.DelayedProcessing }},
	{name: "windowBuffer", intp: func(o *queue.Options) *int { return &o.WindowBuffer }},
	{name: "retentionSeconds", intp: func(o *queue.Options) *int { return &o.RetentionSeconds }},
	{name: "completedRetentionSeconds", intp: func(o *queue.Options) *int { return &o.CompletedRetentionSeconds }},
	{name: "maxWaitTimeSeconds", intp: func(o *queue.Options) *int { return &o.MaxWaitTimeSeconds }},
	{name: "retentionEnabled", boolp: func(o *queue.Options) *bool { return &o.RetentionEnabled }},
	{name: "encryptionEnabled", boolp: func(o *queue.Options) *bool { return &o.EncryptionEnabled }},
	{name: "deadLetterQueue", boolp: func(o *queue.Options) *bool { return &o.DeadLetterQueue }},
	{name: "dlqAfterMaxRetries", boolp: func(o *queue.Options) *bool { return &o.DLQAfterMaxRetries }},
	{name: "minPopWaitTime", intp: func(o *queue.Options) *int { return &o.MinPopWaitTime }, hi: queue.MaxMinPopWaitTime},
	{name: "dedupWindowSeconds", intp: func(o *queue.Options) *int { return &o.DedupWindowSeconds }, hi: math.MaxInt32},
	{name: "retentionSinkHold", strp: func(o *queue.Options) *string { return &o.RetentionSinkHold }},
	{name: "retentionSinkHoldMaxSeconds", intp: func(o *queue.Options) *int { return &o.RetentionSinkHoldMaxSeconds }},
}

// handleConfigure is POST /api/v1/configure. With mode "merge" (the default, also
// when mode is absent or null) an existing queue keeps every option the request does
// not name, a named option set to null takes its default and any other value is set;
// with mode "replace" every option not named is reset to its default. A new queue
// takes the defaults. Options are read from the options object and, for keys it lacks,
// from the top level of the body. namespace and task count at the top level only as
// non-empty strings (anything else there is as if absent); in options a string sets
// them, null resets them to "", and another type keeps them. An option of the wrong
// type is 400 naming options.<name>; an invalid retentionSinkHold or
// retentionSinkHoldMaxSeconds is 400 with "invalid" naming the option. The answer
// echoes the options as now stored.
func (s *Server) handleConfigure(w http.ResponseWriter, r *http.Request) error {
	body, err := readObject(r, false)
	if err != nil {
		return err
	}
	e := queue.ConfigureEdit{}
	var p presence
	if e.Name, p = body.str("queue"); p != present || e.Name == "" {
		return queue.Invalid("queue", "queue is required")
	}
	if e.Name, err = scopeName(r, "queue", e.Name); err != nil {
		return err
	}
	if e.Replace, err = configureMode(body); err != nil {
		return err
	}
	bag := object{}
	for k, v := range body {
		if k == "namespace" || k == "task" {
			// At the top level only a name counts: the 1.x JS and Python clients send
			// null for the ones their caller left unset.
			if name, p := body.str(k); p != present || name == "" {
				continue
			}
		}
		bag[k] = v
	}
	if opts, p := body.obj("options"); p == present {
		for k, v := range opts {
			bag[k] = v
		}
	}
	e.Namespace, e.Task = groupingEdit(bag, "namespace"), groupingEdit(bag, "task")
	set, err := configureSet(bag)
	if err != nil {
		var bad *invalidOptionError
		if errors.As(err, &bad) {
			return writeJSON(w, http.StatusBadRequest, api.InvalidOptionBody{
				Error: bad.msg, Code: api.ErrorCodeInvalidArgument, Field: "options." + bad.name, Invalid: bad.name,
			})
		}
		return err
	}
	e.ApplyFunc = set.apply
	e.Keys = set.keys
	stored, partitionID, err := s.broker.ConfigureEdit(r.Context(), e)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.ConfigureResponse{
		Configured: true, QueueID: stored.ID, PartitionID: partitionID, Queue: unscopeName(r, stored.Name),
		Namespace: stored.Namespace, Task: stored.Task, Options: optionsEcho(stored.Options),
	})
}

// configureMode reads the top-level mode: true for "replace", false for "merge",
// absent or null; anything else is a 400 naming mode.
func configureMode(body object) (replace bool, err error) {
	raw := body.raw("mode")
	if raw == nil {
		return false, nil
	}
	if mode, p := body.str("mode"); p == present && (mode == api.ConfigureModeMerge || mode == api.ConfigureModeReplace) {
		return mode == api.ConfigureModeReplace, nil
	}
	return false, queue.Invalid("mode", "mode must be \"merge\" or \"replace\", got %s", string(raw))
}

// groupingEdit reads namespace or task from the folded options: a string sets it, null
// resets it to "", and anything else (absent, another type) keeps the stored value.
func groupingEdit(bag object, key string) *string {
	v, ok := bag[key]
	if !ok {
		return nil
	}
	if isNull(v) {
		return api.String("")
	}
	if s, p := bag.str(key); p == present {
		return &s
	}
	return nil
}

// invalidOptionError is an option value configure refuses with "invalid" in the
// answer (the 1.x sink-hold options).
type invalidOptionError struct{ name, msg string }

func (e *invalidOptionError) Error() string { return e.msg }

// optionSet is what a configure names: each option's value, nil for a null (reset to
// the default).
type optionSet struct {
	keys   []string
	values []func(*queue.Options)
}

// apply sets the named options onto o.
func (s optionSet) apply(o *queue.Options) {
	for _, f := range s.values {
		f(o)
	}
}

// configureSet reads every option present in bag (null = reset to its default).
func configureSet(bag object) (optionSet, error) {
	var set optionSet
	defaults := queue.DefaultOptions()
	for _, opt := range queueOptions {
		raw, ok := bag[opt.name]
		if !ok {
			continue
		}
		f, err := optionValue(opt, bag, raw, &defaults)
		if err != nil {
			return set, err
		}
		set.keys = append(set.keys, opt.name)
		set.values = append(set.values, f)
	}
	return set, nil
}

// optionValue reads one named option and returns the function that sets it.
func optionValue(opt queueOption, bag object, raw []byte, defaults *queue.Options) (func(*queue.Options), error) {
	field := "options." + opt.name
	switch {
	case isNull(raw) && opt.intp != nil:
		v := *opt.intp(defaults)
		return func(o *queue.Options) { *opt.intp(o) = v }, nil
	case isNull(raw) && opt.boolp != nil:
		v := *opt.boolp(defaults)
		return func(o *queue.Options) { *opt.boolp(o) = v }, nil
	case isNull(raw):
		v := *opt.strp(defaults)
		return func(o *queue.Options) { *opt.strp(o) = v }, nil
	case opt.intp != nil:
		n, p := bag.integer(opt.name, math.MinInt32, math.MaxInt32)
		if p != present {
			return nil, queue.Invalid(field, "%s must be an integer of 32 bits (%d to %d)", field, math.MinInt32, math.MaxInt32)
		}
		v := int(n)
		if opt.hi != 0 {
			v = min(max(v, opt.lo), opt.hi)
		}
		if opt.name == "retentionSinkHoldMaxSeconds" &&
			(v < queue.MinRetentionSinkHoldMaxSeconds || v > queue.MaxRetentionSinkHoldMaxSeconds) {
			return nil, &invalidOptionError{name: opt.name, msg: fmt.Sprintf("%s must be between %d and %d, got %d",
				opt.name, queue.MinRetentionSinkHoldMaxSeconds, queue.MaxRetentionSinkHoldMaxSeconds, v)}
		}
		return func(o *queue.Options) { *opt.intp(o) = v }, nil
	case opt.boolp != nil:
		v, p := bag.boolean(opt.name)
		if p != present {
			return nil, queue.Invalid(field, "%s must be a boolean", field)
		}
		return func(o *queue.Options) { *opt.boolp(o) = v }, nil
	}
	v, p := bag.str(opt.name)
	if p != present || !queue.IsSinkHold(v) {
		return nil, &invalidOptionError{name: opt.name, msg: fmt.Sprintf(
			"%s must be a string matching ^[A-Za-z0-9._-]{0,%d}$", opt.name, queue.MaxRetentionSinkHoldLength)}
	}
	return func(o *queue.Options) { *opt.strp(o) = v }, nil
}

// optionsEcho renders the full option set as queen applies it (the store reports
// deadLetterQueue and dlqAfterMaxRetries as true for a queue whose flags queen's
// configure never set).
func optionsEcho(o queue.Options) api.QueueOptionsEcho {
	return api.QueueOptionsEcho{
		Priority: o.Priority, LeaseTime: o.LeaseTime, RetryLimit: o.RetryLimit, RetryDelay: o.RetryDelay,
		MaxSize: o.MaxSize, TTL: o.TTL, DeadLetterQueue: o.DeadLetterQueue, DLQAfterMaxRetries: o.DLQAfterMaxRetries,
		DelayedProcessing: o.DelayedProcessing, WindowBuffer: o.WindowBuffer, RetentionSeconds: o.RetentionSeconds,
		CompletedRetentionSeconds: o.CompletedRetentionSeconds, RetentionEnabled: o.RetentionEnabled,
		EncryptionEnabled: o.EncryptionEnabled, MaxWaitTimeSeconds: o.MaxWaitTimeSeconds,
		MinPopWaitTime: o.MinPopWaitTime, DedupWindowSeconds: o.DedupWindowSeconds,
		RetentionSinkHold: o.RetentionSinkHold, RetentionSinkHoldMaxSeconds: o.RetentionSinkHoldMaxSeconds,
	}
}

// handleQueueList is GET /api/v1/resources/queues: {"queues":[...]},
// newest first. Upstream ignores the query; here namespace and task filter by exact
// match (empty = no filter) and limit/offset page the filtered list (limit 0 = all).
func (s *Server) handleQueueList(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	namespace, _ := queryString(q, "namespace")
	task, _ := queryString(q, "task")
	limit, _, err := queryInt(q, "limit")
	if err != nil {
		return err
	}
	offset, _, err := queryInt(q, "offset")
	if err != nil {
		return err
	}
	if limit < 0 {
		return queue.Invalid("limit", "limit must not be negative")
	}
	if offset < 0 {
		return queue.Invalid("offset", "offset must not be negative")
	}
	all, err := s.broker.QueueList(r.Context(), scopeOf(r))
	if err != nil {
		return err
	}
	list := api.QueueList{Queues: []api.QueueSummary{}}
	skipped := int64(0)
	for _, qi := range all {
		if (namespace != "" && qi.Namespace != namespace) || (task != "" && qi.Task != task) {
			continue
		}
		if skipped < offset {
			skipped++
			continue
		}
		if limit > 0 && int64(len(list.Queues)) >= limit {
			break
		}
		list.Queues = append(list.Queues, api.QueueSummary{
			ID: qi.ID, Name: unscopeName(r, qi.Name), Namespace: qi.Namespace, Task: qi.Task,
			CreatedAt: api.FormatMillis(qi.CreatedAt), Partitions: qi.PartitionCount,
			Messages: api.QueueMessageCounts{
				Total: int(qi.Totals.Total), Pending: int(qi.Totals.Pending), Processing: int(qi.Totals.Processing),
				Completed: int(qi.Totals.Completed),
			},
		})
	}
	return writeJSON(w, http.StatusOK, list)
}

// handleQueueGet is GET /api/v1/resources/queues/{queue}: the queue with
// its partitions and counters, or 404 {"error":"Queue not found"}. Added to upstream's
// shape: the stored options (all 21 keys, spelled as configure takes them, so the
// object can be posted back), whether queen applies the stored ttl and retryDelay, and
// how far each consumer group is behind.
func (s *Server) handleQueueGet(w http.ResponseWriter, r *http.Request) error {
	stored, err := scopedQueueParam(r)
	if err != nil {
		return err
	}
	qi, err := s.broker.QueueGet(r.Context(), stored)
	if errors.Is(err, queue.ErrNotFound) {
		return notFound("Queue not found", err)
	}
	if err != nil {
		return err
	}
	opts := optionsEcho(qi.Options)
	opts.Namespace, opts.Task = api.String(qi.Namespace), api.String(qi.Task)
	d := api.QueueDetail{
		ID: qi.ID, Name: unscopeName(r, qi.Name), Namespace: qi.Namespace, Task: qi.Task,
		CreatedAt:  api.FormatMillis(qi.CreatedAt),
		Partitions: make([]api.PartitionDetail, len(qi.Partitions)),
		Totals:     counters(qi.Totals),
		Options:    &opts,
		EnforcedOptions: &api.EnforcedOptions{TTL: qi.Enforced.TTL, RetryDelay: qi.Enforced.RetryDelay,
			MaxSize: qi.Enforced.MaxSize},
	}
	for i, p := range qi.Partitions {
		d.Partitions[i] = api.PartitionDetail{
			ID: p.ID, Name: p.Name, CreatedAt: api.FormatMillis(p.CreatedAt), Stats: counters(p.Counters),
			OldestMessage: optionalTime(p.OldestMessage), NewestMessage: optionalTime(p.NewestMessage),
		}
	}
	groups, err := s.broker.QueueConsumerGroups(r.Context(), stored)
	if err != nil {
		return err
	}
	d.ConsumerGroups = analytics.GroupLags(scopeOf(r), groups)
	return writeJSON(w, http.StatusOK, d)
}

// handleQueueDelete is DELETE /api/v1/resources/queues/{queue}: 200
// {"deleted":true,"queue":...,"existed":bool}, whether or not the queue existed.
func (s *Server) handleQueueDelete(w http.ResponseWriter, r *http.Request) error {
	name, err := pathParam(r, "queue")
	if err != nil {
		return err
	}
	stored, err := scopeName(r, "queue", name)
	if err != nil {
		return err
	}
	existed, err := s.broker.QueueDelete(r.Context(), stored)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.QueueDeleteResponse{Deleted: true, Queue: name, Existed: existed})
}

func counters(c queue.Counters) api.Counters {
	return api.Counters{
		Total: int(c.Total), Pending: int(c.Pending), Processing: int(c.Processing),
		Completed: int(c.Completed), Failed: int(c.Failed), DeadLetter: int(c.DeadLetter),
	}
}

func optionalTime(t *time.Time) *string {
	if t == nil {
		return nil
	}
	return api.String(api.FormatMillis(*t))
}
