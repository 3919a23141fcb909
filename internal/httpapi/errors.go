package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"unicode/utf8"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/auth"
	"github.com/queenmq/queen/internal/queue"
)

// Client-facing messages of the generic rows of the error table.
const (
	msgNotFound       = "Not found"
	msgUnavailable    = "database unavailable"
	msgOutcomeUnknown = "the database connection was lost during the request (a database restart or failover); it may or may not have taken effect: retry"
	msgTimeout        = "the database did not answer in time; the request may or may not have taken effect"
	msgCanceled       = "the request was canceled by the broker before it completed; retry"
	msgConflict       = "the request conflicts with stored state"
	msgInternal       = "internal server error"
)

// handlerFunc is the shape of every route handler: it writes a successful answer
// itself and returns any failure, which [Server.handle] passes to writeError.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// handle adapts a handlerFunc to http.HandlerFunc: the request's path and query
// parameters are checked first (checkParams), and errors go to the one mapping table.
func (s *Server) handle(h handlerFunc) http.HandlerFunc { return s.serve(checked(h)) }

// serve adapts h without the parameter check, for adapters that run it themselves
// inside their own error shape (streamRoute).
func (s *Server) serve(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.writeError(w, r, err)
		}
	}
}

// checked runs checkParams before h.
func checked(h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if err := checkParams(r); err != nil {
			return err
		}
		return h(w, r)
	}
}

// httpError is a failure whose status, code and client message the handler chose
// explicitly, for answers the sentinel rows cannot express (e.g. 404
// {"error":"Queue not found"}). err is the cause, kept for errors.Is and the log.
type httpError struct {
	status int
	code   api.ErrorCode
	msg    string
	err    error
}

func (e *httpError) Error() string {
	if e.err != nil {
		return e.msg + ": " + e.err.Error()
	}
	return e.msg
}

func (e *httpError) Unwrap() error { return e.err }

// notFound returns a 404 not_found answer with msg as the client message.
func notFound(msg string, cause error) error {
	return &httpError{status: http.StatusNotFound, code: api.ErrorCodeNotFound, msg: msg, err: cause}
}

// writeError is the single place where an error becomes an HTTP answer. The table
// (mirrored in docs/api.md):
//
//	error                                   status                 code
//	*httpError (handler's explicit choice)  its status             its code
//	*queue.ValidationError, bad body        400                    invalid_argument (+ field)
//	*http.MaxBytesError (body over limit)   413                    payload_too_large
//	queue.ErrNotFound                       404                    not_found
//	*queue.ConflictError (broker-written)   409                    conflict (its message)
//	queue.ErrConflict (e.g. unique key)     409                    conflict (fixed message)
//	*auth.Error, no or invalid token        401 + WWW-Authenticate unauthenticated (its message)
//	*auth.Error, role below the route's     403 + WWW-Authenticate forbidden
//	*auth.Error, JWKS cannot be fetched     503 + Retry-After: 1   unavailable
//	*queue.UnavailableError (e.g. push      503 + Retry-After: 1   unavailable (its message)
//	maintenance without a spool)
//	queue.ErrOutcomeUnknown (with           503 + Retry-After: 1   unavailable ("may or may not
//	ErrUnavailable: connection lost after                          have taken effect")
//	the statement was sent)
//	queue.ErrUnavailable                    503 + Retry-After: 1   unavailable
//	queue.ErrTimeout, deadline exceeded     504                    timeout
//	context.Canceled (by the broker)        503 + Retry-After: 1   unavailable ("canceled by the broker")
//	client gone (request context done)      nothing is written
//	anything else                           500                    internal
//
// Only messages written by the broker reach a client: the sentinel rows answer fixed
// messages, so no database text does. 4xx answers carry the domain message and are
// logged at Debug. 5xx answers carry a generic message, "success":false (upstream's
// DB-failure shape) and the request id; the full error is logged at Error with the
// request id. Error bodies are api.ErrorBody: "error" is always the message string.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	reqID := requestIDFrom(r.Context())
	if r.Context().Err() != nil {
		s.logger.LogAttrs(r.Context(), slog.LevelDebug, "client went away",
			slog.String("request_id", reqID), slog.Any("err", err))
		return
	}
	status, body := classify(err)
	body.Error = clipMessage(unscopeText(r, body.Error)) // a tenant sees its own names, not the stored ones
	if status >= 500 {
		body.Success = api.Bool(false)
		body.RequestID = reqID
		level := slog.LevelError
		if ue := (*queue.UnavailableError)(nil); errors.As(err, &ue) {
			level = slog.LevelDebug // a deliberate refusal (push maintenance), not a fault
		}
		s.logger.LogAttrs(r.Context(), level, "request failed",
			slog.String("request_id", reqID), slog.String("method", r.Method),
			slog.Int("status", status), slog.Any("err", err))
	} else {
		s.logger.LogAttrs(r.Context(), slog.LevelDebug, "request rejected",
			slog.String("request_id", reqID), slog.Int("status", status),
			slog.String("code", string(body.Code)), slog.String("err", err.Error()))
	}
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	if challenge := authChallenge(err); challenge != "" {
		w.Header().Set("WWW-Authenticate", challenge)
	}
	writeErrorBody(w, status, body)
}

// classify maps err to a status and the error body's message, code and field.
func classify(err error) (int, api.ErrorBody) {
	var (
		he  *httpError
		ve  *queue.ValidationError
		mbe *http.MaxBytesError
		ue  *queue.UnavailableError
		ce  *queue.ConflictError
		ae  *auth.Error
	)
	switch {
	case errors.As(err, &he):
		return he.status, api.ErrorBody{Error: he.msg, Code: he.code}
	case errors.As(err, &ae):
		return classifyAuth(ae)
	case errors.As(err, &ve):
		return http.StatusBadRequest, api.ErrorBody{Error: ve.Message, Code: api.ErrorCodeInvalidArgument, Field: ve.Field}
	case errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge, api.ErrorBody{
			Error: fmt.Sprintf("request body exceeds %d bytes", mbe.Limit), Code: api.ErrorCodePayloadTooLarge,
		}
	case errors.Is(err, queue.ErrNotFound):
		return http.StatusNotFound, api.ErrorBody{Error: msgNotFound, Code: api.ErrorCodeNotFound}
	case errors.As(err, &ce):
		return http.StatusConflict, api.ErrorBody{Error: ce.Message, Code: api.ErrorCodeConflict}
	case errors.Is(err, queue.ErrConflict):
		return http.StatusConflict, api.ErrorBody{Error: msgConflict, Code: api.ErrorCodeConflict}
	case errors.As(err, &ue):
		return http.StatusServiceUnavailable, api.ErrorBody{Error: ue.Message, Code: api.ErrorCodeUnavailable}
	case errors.Is(err, queue.ErrOutcomeUnknown):
		return http.StatusServiceUnavailable, api.ErrorBody{Error: msgOutcomeUnknown, Code: api.ErrorCodeUnavailable}
	case errors.Is(err, queue.ErrUnavailable):
		return http.StatusServiceUnavailable, api.ErrorBody{Error: msgUnavailable, Code: api.ErrorCodeUnavailable}
	case errors.Is(err, queue.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		// Not an outage, and the statement may have committed: never "unavailable".
		return http.StatusGatewayTimeout, api.ErrorBody{Error: msgTimeout, Code: api.ErrorCodeTimeout}
	case errors.Is(err, context.Canceled):
		// The request context is alive (checked by writeError), so this is a server-side
		// cancellation such as shutdown; the client may retry.
		return http.StatusServiceUnavailable, api.ErrorBody{Error: msgCanceled, Code: api.ErrorCodeUnavailable}
	}
	return http.StatusInternalServerError, api.ErrorBody{Error: msgInternal, Code: api.ErrorCodeInternal}
}

// routeAbsent answers the requests that route nowhere and that no one else may
// serve, as the 1.x clients read them: a path of a 1.x family queen does not build
// gets that family's 404; any other path under /api/ or /auth/, and
// any request that is not a GET or HEAD, gets 404
// {"error":"Not Found","code":"no_such_route"}. The GET and HEAD requests left go to
// next: the dashboard, then notFound. [api.AbsentRoute] decides, for queen-proxy too.
func (s *Server) routeAbsent(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := routingPath(r)
		if body, ok := api.AbsentRoute(r.Method, path); ok {
			writeErrorBody(w, http.StatusNotFound, body)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// notFound answers the GET and HEAD requests outside /api/ and /auth/ that route
// nowhere and that the dashboard does not serve: 404
// {"error":"Not found","code":"not_found"}.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	writeErrorBody(w, http.StatusNotFound, api.ErrorBody{Error: msgNotFound, Code: api.ErrorCodeNotFound})
}

// maxMessageBytes bounds an error message: a message that quotes the value it refuses
// (a 70 000-character mode) is cut there, so a bad request cannot make a large answer.
const maxMessageBytes = 1024

// clipMessage cuts msg to maxMessageBytes, at a character boundary, marking the cut.
func clipMessage(msg string) string {
	if len(msg) <= maxMessageBytes {
		return msg
	}
	cut := maxMessageBytes
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + "…"
}
