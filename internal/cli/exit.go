package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/queenmq/queen/internal/client"
)

// Exit statuses of queenctl. They are part of its interface: scripts branch on them,
// so a value, once published in docs/queenctl.md, never changes meaning.
const (
	// ExitOK: the command did what was asked.
	ExitOK = 0
	// ExitFailure: the broker refused the request or the operation did not take
	// effect (an ack, lease extension or transaction answered success:false, a pushed
	// item failed, HTTP 400/409/500 ...).
	ExitFailure = 1
	// ExitUsage: the command line or the config file is wrong; nothing was sent.
	ExitUsage = 2
	// ExitNotFound: the queue, message, consumer group, partition or lease does not
	// exist (HTTP 404, or a "... not found" outcome).
	ExitNotFound = 3
	// ExitAuth: the broker wants a token (HTTP 401) or the token lacks the role
	// (HTTP 403).
	ExitAuth = 4
	// ExitUnavailable: the broker could not be reached (connection refused, DNS,
	// timeout), answered 503 (database down, unhealthy, push maintenance) or 504 (the
	// database did not answer in time): try again later.
	ExitUnavailable = 5
	// ExitInterrupted: SIGINT or SIGTERM stopped a command midway (tail stops with 0,
	// since that is how it is meant to end).
	ExitInterrupted = 130
)

// usageError is a mistake on the command line or in the config file: nothing was
// sent to the broker.
type usageError struct{ msg string }

// Error implements error.
func (e *usageError) Error() string { return e.msg }

// usagef returns a [*usageError].
func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// codeError is an outcome reported in a 200 body (ack, lease, transaction, message
// delete ...) that must still end the command with a non-zero status.
type codeError struct {
	code int
	msg  string
}

// Error implements error.
func (e *codeError) Error() string { return e.msg }

// outcomeError turns a failed body-level outcome into a [*codeError]: ExitNotFound when
// the broker's text says "not found", else ExitFailure.
func outcomeError(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	code := ExitFailure
	lower := strings.ToLower(msg)
	// "unresolvable" and "unknown transactionId": a broker with the Queen 1.x ack
	// answers saying the message was not found.
	if strings.Contains(lower, "not found") || strings.Contains(lower, "unresolvable") ||
		strings.Contains(lower, "unknown transactionid") {
		code = ExitNotFound
	}
	return &codeError{code: code, msg: msg}
}

// opError names what failed ("queue \"orders\"", "push line 17") around the cause.
type opError struct {
	what string
	err  error
}

// Error implements error.
func (e *opError) Error() string { return e.what + ": " + e.err.Error() }

// Unwrap returns the cause.
func (e *opError) Unwrap() error { return e.err }

// fail wraps err with what failed; nil stays nil.
func fail(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return &opError{what: fmt.Sprintf(format, args...), err: err}
}

// exitCode maps the error a command returned to the exit status. ctx is the
// command's context: once it is cancelled (a signal), any error is an interruption.
func exitCode(ctx context.Context, err error) int {
	var (
		ue *usageError
		ce *codeError
	)
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ue):
		return ExitUsage
	case errors.As(err, &ce):
		return ce.code
	case ctx.Err() != nil:
		return ExitInterrupted
	}
	if e := client.AsError(err); e != nil {
		switch {
		case e.StatusCode == http.StatusUnauthorized, e.StatusCode == http.StatusForbidden:
			return ExitAuth
		case client.IsNotFound(err):
			return ExitNotFound
		case e.StatusCode == http.StatusServiceUnavailable, e.StatusCode == http.StatusGatewayTimeout:
			return ExitUnavailable
		}
		return ExitFailure
	}
	if isUnreachable(err) {
		return ExitUnavailable
	}
	return ExitFailure
}

// isUnreachable reports a transport failure: the request got no HTTP answer.
func isUnreachable(err error) bool {
	var (
		ue *url.Error
		ne net.Error
	)
	return errors.As(err, &ue) || errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded)
}

// describe renders err for the error line on stderr: the chain of what failed, then
// a readable cause. Broker answers show their message, status and route; transport
// failures name the server and where its address came from.
func describe(err error, t *target) string {
	var parts []string
	for err != nil {
		var op *opError
		if !errors.As(err, &op) {
			break
		}
		parts = append(parts, op.what)
		err = op.err
	}
	if err != nil {
		parts = append(parts, cause(err, t))
	}
	return strings.Join(parts, ": ")
}

// cause is the readable form of a leaf error.
func cause(err error, t *target) string {
	server := "the broker"
	if t != nil {
		server = t.server
	}
	if e := client.AsError(err); e != nil {
		msg := fmt.Sprintf("%s (HTTP %d from %s %s)", e.Message, e.StatusCode, e.Method, pathOnly(e.Path))
		switch e.StatusCode {
		case http.StatusUnauthorized:
			msg += "; the broker requires a token: give one with --token, QUEEN_TOKEN or a context"
			if t != nil && t.token != "" {
				msg = fmt.Sprintf("%s (HTTP 401 from %s %s); the token from %s was refused",
					e.Message, e.Method, pathOnly(e.Path), t.tokenFrom)
			}
		case http.StatusForbidden:
			msg += "; the token's role does not allow this"
		}
		return msg
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		from := ""
		if t != nil {
			from = " (" + t.serverFrom + ")"
		}
		return fmt.Sprintf("cannot reach the broker at %s%s: %v", server, from, ue.Err)
	}
	return err.Error()
}

// pathOnly drops the query string of a request path.
func pathOnly(p string) string {
	p, _, _ = strings.Cut(p, "?")
	return p
}
