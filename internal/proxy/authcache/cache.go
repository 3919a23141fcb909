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

	mu       sync.Mutex
	entries  map[string]entry
	sessions map[string]sessionEntry
	used     map[string]struct{}
}

// sessionEntry is one session lookup's answer; ses nil is a miss.
type sessionEntry struct {
	ses *store.Session
	at  time.Time
}

// entry is one lookup's answer; cred nil is a miss.
type entry struct {
	cred *store.Credential
	at   time.Time
}

// New returns an empty cache over st with entries kept for ttl.
func New(st *store.Store, ttl time.Duration, now func() time.Time) *Cache {
	return &Cache{store: st, ttl: ttl, now: now, entries: map[string]entry{}, sessions: map[string]sessionEntry{},
		used: map[string]struct{}{}}
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

// LookupSession returns the live session of a session id (a token's jti), or
// tenant.ErrNotFound. Like Lookup, a store outage answers from an expired entry.
// An entry never outlives its session's expiry.
func (c *Cache) LookupSession(ctx context.Context, id string) (*store.Session, error) {
	now := c.now()
	c.mu.Lock()
	e, ok := c.sessions[id]
	c.mu.Unlock()
	if ok && e.ses != nil && !now.Before(e.ses.ExpiresAt) {
		return nil, tenant.ErrNotFound
	}
	if ok && now.Sub(e.at) < c.ttl {
		return e.answer()
	}
	ses, err := c.store.SessionLookup(ctx, id, now)
	switch {
	case err == nil, errors.Is(err, tenant.ErrNotFound):
		c.mu.Lock()
		if len(c.sessions) >= maxSessions {
			clear(c.sessions)
		}
		c.sessions[id] = sessionEntry{ses: ses, at: now}
		c.mu.Unlock()
		if ses == nil {
			return nil, tenant.ErrNotFound
		}
		return ses, nil
	case ok:
		return e.answer()
	}
	return nil, err
}

// maxSessions bounds the session entries: a full cache starts afresh.
const maxSessions = 100_000

func (e sessionEntry) answer() (*store.Session, error) {
	if e.ses == nil {
		return nil, tenant.ErrNotFound
	}
	return e.ses, nil
}

// ForgetSession drops a session at once on this replica (its logout); the others
// hear of it through the auth channel.
func (c *Cache) ForgetSession(id string) {
	c.mu.Lock()
	delete(c.sessions, id)
	c.mu.Unlock()
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
		for k, e := range c.sessions {
			if e.ses != nil && e.ses.Tenant != nil && e.ses.Tenant.ID == id {
				delete(c.sessions, k)
			}
		}
	case "session":
		delete(c.sessions, id)
	case "user":
		for k, e := range c.sessions {
			if e.ses != nil && e.ses.User.Username == id {
				delete(c.sessions, k)
			}
		}
	default:
		clear(c.entries)
		clear(c.sessions)
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
	for k, e := range c.sessions {
		e.at = time.Time{}
		c.sessions[k] = e
	}
}
