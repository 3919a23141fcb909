package httpapi

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/queue"
)

// queueOption is one entry of the configure options table: exactly one of intp and
// boolp is set.
type queueOption struct {
	name  string
	intp  func(*queue.Options) *int
	boolp func(*queue.Options) *bool
	// onlyTrue marks a flag whose false value queen cannot honour: a message that
	// exhausts retryLimit always goes to the dead-letter queue (as upstream, whose
	// clients rely on it), so an explicit false is refused instead of stored and ignored.
	onlyTrue bool
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
	{name: "deadLetterQueue", boolp: func(o *queue.Options) *bool { return &o.DeadLetterQueue }, onlyTrue: true},
	{name: "dlqAfterMaxRetries", boolp: func(o *queue.Options) *bool { return &o.DLQAfterMaxRetries }, onlyTrue: true},
}

// handleConfigure is POST /api/v1/configure: a full replacement of the
// queue's configuration. Options start from queue.DefaultOptions and only those in the
// request are applied, so an option left out is reset to its default. namespace and
// task that are absent, null or not strings are stored as "". An options value that is
// not an object is ignored; an option of the wrong type is 400 naming options.<name>.
func (s *Server) handleConfigure(w http.ResponseWriter, r *http.Request) error {
	body, err := readObject(r, false)
	if err != nil {
		return err
	}
	q := queue.Queue{Options: queue.DefaultOptions()}
	var p presence
	if q.Name, p = body.str("queue"); p != present || q.Name == "" {
		return queue.Invalid("queue", "queue is required")
	}
	if q.Name, err = scopeName(r, "queue", q.Name); err != nil {
		return err
	}
	q.Namespace, _ = body.str("namespace")
	q.Task, _ = body.str("task")
	if opts, p := body.obj("options"); p == present {
		if err := applyOptions(&q.Options, opts); err != nil {
			return err
		}
	}
	stored, partitionID, err := s.broker.Configure(r.Context(), q)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.ConfigureResponse{
		Configured: true, QueueID: stored.ID, PartitionID: partitionID, Queue: unscopeName(r, stored.Name),
		Namespace: stored.Namespace, Task: stored.Task, Options: optionsEcho(stored.Options),
	})
}

// applyOptions sets every option present in opts; null means absent.
func applyOptions(dst *queue.Options, opts object) error {
	for _, opt := range queueOptions {
		field := "options." + opt.name
		if opt.intp != nil {
			v, p := opts.integer(opt.name, math.MinInt32, math.MaxInt32)
			if p == wrongType {
				return queue.Invalid(field, "%s must be an integer", field)
			}
			if p == present {
				*opt.intp(dst) = int(v)
			}
			continue
		}
		v, p := opts.boolean(opt.name)
		if p == wrongType {
			return queue.Invalid(field, "%s must be a boolean", field)
		}
		if p == present && !v && opt.onlyTrue {
			return &queue.ValidationError{Field: field, Message: fmt.Sprintf(
				"%s=false is not supported: messages that exhaust retryLimit always go to the dead-letter queue", field)}
		}
		if p == present {
			*opt.boolp(dst) = v
		}
	}
	return nil
}

// alwaysDeadLetters is what every answer reports for deadLetterQueue and
// dlqAfterMaxRetries, whatever the stored columns hold (false by default, and an
// adopted upstream database may hold false): queen dead-letters every message that
// exhausts retryLimit, and configure refuses false for both.
const alwaysDeadLetters = true

// optionsEcho renders the full option set as queen applies it: the stored values, but
// deadLetterQueue and dlqAfterMaxRetries, which are always true.
func optionsEcho(o queue.Options) api.QueueOptionsEcho {
	return api.QueueOptionsEcho{
		Priority: o.Priority, LeaseTime: o.LeaseTime, RetryLimit: o.RetryLimit, RetryDelay: o.RetryDelay,
		MaxSize: o.MaxSize, TTL: o.TTL, DeadLetterQueue: alwaysDeadLetters, DLQAfterMaxRetries: alwaysDeadLetters,
		DelayedProcessing: o.DelayedProcessing, WindowBuffer: o.WindowBuffer, RetentionSeconds: o.RetentionSeconds,
		CompletedRetentionSeconds: o.CompletedRetentionSeconds, RetentionEnabled: o.RetentionEnabled,
		EncryptionEnabled: o.EncryptionEnabled, MaxWaitTimeSeconds: o.MaxWaitTimeSeconds,
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
// shape: the stored options and whether queen applies the stored ttl and retryDelay.
func (s *Server) handleQueueGet(w http.ResponseWriter, r *http.Request) error {
	name, err := pathParam(r, "queue")
	if err != nil {
		return err
	}
	stored, err := scopeName(r, "queue", name)
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
	d := api.QueueDetail{
		ID: qi.ID, Name: unscopeName(r, qi.Name), Namespace: qi.Namespace, Task: qi.Task,
		CreatedAt:       api.FormatMillis(qi.CreatedAt),
		Partitions:      make([]api.PartitionDetail, len(qi.Partitions)),
		Totals:          counters(qi.Totals),
		Options:         &opts,
		EnforcedOptions: &api.EnforcedOptions{TTL: qi.Enforced.TTL, RetryDelay: qi.Enforced.RetryDelay},
	}
	for i, p := range qi.Partitions {
		d.Partitions[i] = api.PartitionDetail{
			ID: p.ID, Name: p.Name, CreatedAt: api.FormatMillis(p.CreatedAt), Stats: counters(p.Counters),
			OldestMessage: optionalTime(p.OldestMessage), NewestMessage: optionalTime(p.NewestMessage),
		}
	}
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
