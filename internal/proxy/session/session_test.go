package session_test

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/proxy/session"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestTokenSignVerify(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	s := session.NewSigner([]byte("0123456789abcdef0123456789abcdef"), time.Hour, c.now)
	tok, claims := s.Sign(session.Claims{ID: "j1", Subject: "alice", Role: "read-write", Tenant: "acme"})
	require.Equal(t, session.Audience, claims.Audience)
	got, err := s.Verify(tok)
	require.NoError(t, err)
	require.Equal(t, claims, got)

	payload, err := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[1])
	require.NoError(t, err)
	require.Contains(t, string(payload), `"qp_role":"read-write"`)
	require.NotContains(t, string(payload), `"role"`, "a session token must carry no broker role claim")

	other := session.NewSigner([]byte("another key of thirty-two bytes!"), time.Hour, c.now)
	_, err = other.Verify(tok)
	require.ErrorIs(t, err, session.ErrInvalid)
	parts := strings.Split(tok, ".")
	forged := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"jti":"j1","sub":"mallory","qp_role":"admin","aud":"queen-proxy","exp":9999999999}`)) + "." + parts[2]
	_, err = s.Verify(forged)
	require.ErrorIs(t, err, session.ErrInvalid)

	c.t = c.t.Add(time.Hour)
	_, err = s.Verify(tok)
	require.ErrorIs(t, err, session.ErrInvalid, "an expired token verifies")
}

func TestLockout(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	l := session.NewLockout(c.now)
	for i := range session.MaxUserFailures {
		blocked, _ := l.Blocked("bob", "10.0.0.1")
		require.False(t, blocked, "blocked after %d failures", i)
		l.Fail("bob", "10.0.0.1")
		c.t = c.t.Add(time.Second)
	}
	blocked, wait := l.Blocked("bob", "10.0.0.2")
	require.True(t, blocked, "the user is not locked after 10 failures")
	require.Equal(t, session.Window-10*time.Second, wait)
	blocked, _ = l.Blocked("carol", "10.0.0.1")
	require.False(t, blocked, "another user from the address is locked after 10 failures")

	// 50 failures from one address lock it for every user.
	for i := range session.MaxIPFailures - session.MaxUserFailures {
		l.Fail("u"+string(rune('a'+i%26)), "10.0.0.1")
	}
	blocked, _ = l.Blocked("dave", "10.0.0.1")
	require.True(t, blocked)

	// The window slides.
	c.t = c.t.Add(session.Window)
	blocked, _ = l.Blocked("bob", "10.0.0.1")
	require.False(t, blocked)
}

func TestFailures(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	f := session.NewFailures(session.MaxKeyFailures, c.now)
	for i := range session.MaxKeyFailures {
		blocked, _ := f.Blocked("10.0.0.1")
		require.False(t, blocked, "blocked after %d failures", i)
		f.Fail("10.0.0.1")
		c.t = c.t.Add(time.Second)
	}
	blocked, wait := f.Blocked("10.0.0.1")
	require.True(t, blocked, "the address is not refused after %d failures", session.MaxKeyFailures)
	require.Equal(t, session.Window-session.MaxKeyFailures*time.Second, wait, "the wait ends when the oldest failure leaves the window")
	blocked, _ = f.Blocked("10.0.0.2")
	require.False(t, blocked, "another address is refused")

	// One more failure past the limit does not lengthen the wait beyond the window.
	f.Fail("10.0.0.1")
	_, wait = f.Blocked("10.0.0.1")
	require.Equal(t, session.Window-(session.MaxKeyFailures-1)*time.Second, wait)

	// The window slides: once the oldest failures leave it, the address is free.
	c.t = c.t.Add(session.Window - session.MaxKeyFailures*time.Second + 2*time.Second)
	blocked, _ = f.Blocked("10.0.0.1")
	require.False(t, blocked)
	f.Forget("10.0.0.1")
	for range session.MaxKeyFailures - 1 {
		f.Fail("10.0.0.1")
	}
	blocked, _ = f.Blocked("10.0.0.1")
	require.False(t, blocked, "Forget kept failures")
}

func TestPassword(t *testing.T) {
	t.Parallel()
	h, err := session.HashPassword("correct horse", 0)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(h, "$2a$12$"), "the default cost is not 12: %s", h)
	// The checks use a cheap hash: cost 12 takes seconds under the race detector.
	h, err = session.HashPassword("correct horse", 4)
	require.NoError(t, err)
	require.True(t, session.CheckPassword(h, "correct horse"))
	require.False(t, session.CheckPassword(h, "wrong horse"))
	require.False(t, session.CheckPassword("", "correct horse"), "an unknown user passes the dummy check")
}
