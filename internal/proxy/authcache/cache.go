package authcache

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/queenmq/queen/internal/proxy/store"
	"github.com/queenmq/queen/internal/proxy/tenant"
)

// Cache looks keys up through the store and remembers the answers. It is safe for
// concurrent use.
type Cache struct {
	store *store.Store
	ttl   time.Duration
	now   func() time.Time

	mu      sync.Mutex
	entries map[string]entry
	used    map[string]struct{}
}

// entry is one lookup's answer; cred nil is a miss.
type entry struct {
	cred *store.Credential
	at   time.Time
}

// New returns an empty cache over st with entries kept for ttl.
func New(st *store.Store, ttl time.Duration, now func() time.Time) *Cache {
	return &Cache{store: st, ttl: ttl, now: now, entries: map[string]entry{}, used: map[string]struct{}{}}
}

// Lookup returns the credential of the key id, or tenant.ErrNotFound. A store
// outage answers from an expired entry when there is one, else returns the
// store's tenant.ErrUnavailable.
func (c *Cache) Lookup(ctx context.Context, id string) (*store.Credential, error) {
	now := c.now()
	c.mu.Lock()
	e, ok := c.entries[id]
	c.mu.Unlock()
	if ok && now.Sub(e.at) < c.ttl {
		return e.answer()
	}
	cred, err := c.store.KeyLookup(ctx, id)
	switch {
	case err == nil, errors.Is(err, tenant.ErrNotFound):
		c.mu.Lock()
		c.entries[id] = entry{cred: cred, at: now}
		c.mu.Unlock()
		if cred == nil {
			return nil, tenant.ErrNotFound
		}
		return cred, nil
	case ok:
		// The store failed (unreachable, or slow): what worked keeps working.
		return e.answer()
	}
	return nil, err
}

func (e entry) answer() (*store.Credential, error) {
	if e.cred == nil {
		return nil, tenant.ErrNotFound
	}
	return e.cred, nil
}

// MarkUsed records that a key authenticated a request, for TakeUsed.
func (c *Cache) MarkUsed(id string) {
	c.mu.Lock()
	c.used[id] = struct{}{}
	c.mu.Unlock()
}

// TakeUsed returns and forgets the keys used since the last call.
func (c *Cache) TakeUsed() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.used))
	for id := range c.used {
		out = append(out, id)
	}
	clear(c.used)
	return out
}

// Evict applies one auth-channel payload.
func (c *Cache) Evict(payload string) {
	kind, id, _ := strings.Cut(payload, ":")
	c.mu.Lock()
	defer c.mu.Unlock()
	switch kind {
	case "key":
		delete(c.entries, id)
	case "tenant":
		for k, e := range c.entries {
			if e.cred != nil && e.cred.Tenant.ID == id {
				delete(c.entries, k)
			}
		}
	default:
		clear(c.entries)
	}
}

// ExpireAll marks every entry expired: the next use of each asks the store again,
// but while the store is unreachable the entries still answer. It is what a lost
// listener connection calls, and a new one, since notifications may have been
// missed in between.
func (c *Cache) ExpireAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.entries {
		e.at = time.Time{}
		c.entries[k] = e
	}
}
