package tenant

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"hash/crc32"
	"math/big"
	"strings"
	"time"
)

// API key layout: "qk_" + id + "_" + secret + check. The id is the public lookup key;
// the secret carries at least 256 bits from crypto/rand; the check is the CRC-32 of
// everything before it, so that malformed keys are refused without a lookup and
// scanners can recognise leaked keys.
const (
	keyPrefix   = "qk_"
	keyIDLen    = 12
	secretLen   = 43
	checkLen    = 6
	keyLen      = len(keyPrefix) + keyIDLen + 1 + secretLen + checkLen
	idAlphabet  = "abcdefghijklmnopqrstuvwxyz234567"
	b62Alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
)

// KeyPrefix starts every API key, and any query value that starts with it is taken
// for a leaked key.
const KeyPrefix = keyPrefix

// NewKey returns a fresh key id and the full key text. The text is shown once and
// never stored: only HashKey of it is.
func NewKey() (id, key string) {
	id = randomString(idAlphabet, keyIDLen)
	body := keyPrefix + id + "_" + randomString(b62Alphabet, secretLen)
	return id, body + checkDigits(body)
}

// ParseKey returns the id of a well-formed key and whether it is one: prefix,
// lengths, alphabets and the check digits must all be right.
func ParseKey(key string) (id string, ok bool) {
	if len(key) != keyLen || !strings.HasPrefix(key, keyPrefix) {
		return "", false
	}
	id = key[len(keyPrefix) : len(keyPrefix)+keyIDLen]
	if key[len(keyPrefix)+keyIDLen] != '_' || !only(id, idAlphabet) {
		return "", false
	}
	body, check := key[:keyLen-checkLen], key[keyLen-checkLen:]
	if !only(body[len(keyPrefix)+keyIDLen+1:], b62Alphabet) ||
		subtle.ConstantTimeCompare([]byte(check), []byte(checkDigits(body))) != 1 {
		return "", false
	}
	return id, true
}

// HashKey is what the database stores of a key: SHA-256 of the whole text. A
// 256-bit secret defeats offline guessing, so a slow hash would only cost CPU.
func HashKey(key string) []byte {
	sum := sha256.Sum256([]byte(key))
	return sum[:]
}

// dummyHash is compared against when a key id is unknown, so that a miss costs what
// a hit does.
var dummyHash = HashKey(keyPrefix + strings.Repeat("a", keyIDLen) + "_" + strings.Repeat("0", secretLen+checkLen))

// HashMatches compares the hash of key with stored in constant time; a nil stored
// (unknown id) compares against a dummy and fails.
func HashMatches(key string, stored []byte) bool {
	h := HashKey(key)
	if stored == nil {
		subtle.ConstantTimeCompare(h, dummyHash)
		return false
	}
	return subtle.ConstantTimeCompare(h, stored) == 1
}

func checkDigits(body string) string {
	n := crc32.ChecksumIEEE([]byte(body))
	out := make([]byte, checkLen)
	for i := checkLen - 1; i >= 0; i-- {
		out[i] = b62Alphabet[n%62]
		n /= 62
	}
	return string(out)
}

func randomString(alphabet string, n int) string {
	out := make([]byte, n)
	size := big.NewInt(int64(len(alphabet)))
	for i := range out {
		v, err := rand.Int(rand.Reader, size)
		if err != nil {
			panic(err) // crypto/rand does not fail
		}
		out[i] = alphabet[v.Int64()]
	}
	return string(out)
}

func only(s, alphabet string) bool {
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(alphabet, s[i]) < 0 {
			return false
		}
	}
	return true
}

// Scope is what a key may do. Scopes are a set, not a ladder: see [Scope.Allows].
type Scope string

// Key scopes. Read, write and admin each include the ones before them; push is a
// producer's scope, beside read: it may push and schedule timers, nothing else.
const (
	ScopePush  Scope = "push"
	ScopeRead  Scope = "read"
	ScopeWrite Scope = "write"
	ScopeAdmin Scope = "admin"
)

// ParseScope checks a scope name.
func ParseScope(s string) (Scope, error) {
	switch Scope(s) {
	case ScopePush, ScopeRead, ScopeWrite, ScopeAdmin:
		return Scope(s), nil
	}
	return "", invalid("scope", "must be push, read, write or admin")
}

// Allows reports whether a key of scope s may call a route that needs need: admin
// passes every route; write every route but admin ones; read only read routes; push
// only push routes (the push and the timer scheduling). An unknown scope, held or
// needed, passes nothing.
func (s Scope) Allows(need Scope) bool {
	switch need {
	case ScopePush, ScopeRead:
		return s == need || s == ScopeWrite || s == ScopeAdmin
	case ScopeWrite:
		return s == ScopeWrite || s == ScopeAdmin
	case ScopeAdmin:
		return s == ScopeAdmin
	}
	return false
}

// Key is an API key's stored record; its secret is not part of it.
type Key struct {
	ID         string
	Tenant     string
	Name       string
	Scope      Scope
	Queues     []string
	CreatedAt  time.Time
	ExpiresAt  *time.Time
	RevokedAt  *time.Time
	LastUsedAt *time.Time
}

// UsableAt reports whether the key is neither revoked nor expired at now.
func (k *Key) UsableAt(now time.Time) bool {
	return k.RevokedAt == nil && (k.ExpiresAt == nil || now.Before(*k.ExpiresAt))
}

// AllQueues reports whether the allowlist admits every queue.
func (k *Key) AllQueues() bool {
	return len(k.Queues) == 0 || (len(k.Queues) == 1 && k.Queues[0] == "*")
}

// AllowsQueue reports whether the allowlist admits the relative queue name: an entry
// is an exact name or a prefix followed by '*'.
func (k *Key) AllowsQueue(name string) bool {
	if k.AllQueues() {
		return true
	}
	for _, p := range k.Queues {
		if prefix, ok := strings.CutSuffix(p, "*"); ok {
			if strings.HasPrefix(name, prefix) {
				return true
			}
		} else if p == name {
			return true
		}
	}
	return false
}

// ValidateQueuePatterns checks an allowlist: names of [A-Za-z0-9_.-], optionally
// ending in '*'. nil admits every queue; an empty list is refused, as a key that
// admits nothing is no one's intent and reading it as every queue would widen it.
func ValidateQueuePatterns(ps []string) error {
	if ps != nil && len(ps) == 0 {
		return invalid("queues", "name at least one queue or prefix; leave queues out for every queue")
	}
	for _, p := range ps {
		name := strings.TrimSuffix(p, "*")
		if p == "" || strings.Contains(name, "*") || !only(name, b62Alphabet+"_.-") {
			return invalid("queues", "entries are queue names or prefixes ending in '*'")
		}
	}
	return nil
}
