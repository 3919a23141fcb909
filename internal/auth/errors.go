package auth

import "errors"

// Sentinels of the three ways a request can be refused. Every error returned by
// [Verifier.Verify] and [Principal.Require] is an *[Error] wrapping one of them.
var (
	// ErrUnauthenticated: no token, or a token that does not verify (401).
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrForbidden: a valid token without the role the route needs (403).
	ErrForbidden = errors.New("forbidden")
	// ErrKeysUnavailable: the JWKS could not be fetched, so the token cannot be judged
	// either way; a server-side problem the client may retry (503).
	ErrKeysUnavailable = errors.New("verification keys unavailable")
)

// Client-facing messages. They are fixed strings: none quotes anything from the token.
const (
	MsgAuthRequired         = "Authentication required"
	MsgInsufficientRole     = "Insufficient permissions"
	MsgMalformed            = "Invalid token"
	MsgUnsupportedAlg       = "Unsupported token algorithm"
	MsgBadSignature         = "Invalid token signature"
	MsgExpired              = "Token has expired"
	MsgNotYetValid          = "Token is not valid yet"
	MsgBadIssuer            = "Invalid token issuer"
	MsgBadAudience          = "Invalid token audience"
	MsgBadClaims            = "Invalid token claims"
	MsgUnknownKeyID         = "Unknown key ID"
	MsgKeyAlgorithmMismatch = "Token key does not match the token algorithm"
	MsgKeysUnavailable      = "Failed to fetch JWKS"
)

// Error is a refusal: Message is safe to send to the client, and the error matches
// exactly one of ErrUnauthenticated, ErrForbidden and ErrKeysUnavailable with
// errors.Is. Error() is the message, so logging the error never logs token material.
type Error struct {
	kind    error
	Message string
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the sentinel.
func (e *Error) Unwrap() error { return e.kind }

func unauthenticated(msg string) *Error { return &Error{kind: ErrUnauthenticated, Message: msg} }

func forbidden() *Error { return &Error{kind: ErrForbidden, Message: MsgInsufficientRole} }

func keysUnavailable() *Error { return &Error{kind: ErrKeysUnavailable, Message: MsgKeysUnavailable} }
