package broker

import (
	"context"
	"sync"
	"time"
)

// queueCacheTTL is how long queueFlags keeps an entry: a queue's encryption flag
// changed through another replica applies here within this time.
const queueCacheTTL = 5 * time.Second

// queueFlags caches, per queue name, the configuration the push path needs before SQL
// (today: whether payloads are encrypted). Entries live queueCacheTTL, so a flag changed through another replica applies here within that time; a configure
// through this replica applies at once.
type queueFlags struct {
	ttl time.Duration

	mu      sync.Mutex
	entries map[string]queueFlagEntry
}

type queueFlagEntry struct {
	encrypted bool
	expires   time.Time
}

func newQueueFlags(ttl time.Duration) *queueFlags {
	return &queueFlags{ttl: ttl, entries: make(map[string]queueFlagEntry)}
}

// encrypted returns, for each name, whether its queue encrypts payloads; unknown
// queues (created by this push) do not. Misses are loaded in one query.
func (b *Broker) encryptedQueues(ctx context.Context, names []string) (map[string]bool, error) {
	qf := b.queueFlags
	now := time.Now()
	out := make(map[string]bool, len(names))
	var missing []string
	qf.mu.Lock()
	for _, n := range names {
		if _, done := out[n]; done {
			continue
		}
		if e, ok := qf.entries[n]; ok && now.Before(e.expires) {
			out[n] = e.encrypted
			continue
		}
		out[n] = false
		missing = append(missing, n)
	}
	qf.mu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	flags, err := b.store.QueueEncryptionFlags(ctx, missing)
	if err != nil {
		return nil, err
	}
	qf.mu.Lock()
	for _, n := range missing {
		out[n] = flags[n]
		qf.entries[n] = queueFlagEntry{encrypted: flags[n], expires: now.Add(qf.ttl)}
	}
	qf.mu.Unlock()
	return out, nil
}

// forget drops a queue's cached flags (after configure or delete on this replica).
func (qf *queueFlags) forget(name string) {
	qf.mu.Lock()
	delete(qf.entries, name)
	qf.mu.Unlock()
}
