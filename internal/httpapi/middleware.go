package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/cors"
)

// headerRequestID carries the request id in both directions.
const headerRequestID = "X-Request-Id"

// maxRequestIDLength bounds a client-supplied request id; longer or non-printable ids
// are replaced by a generated one, so a client cannot inject into the logs.
const maxRequestIDLength = 128

// statusClientClosed is logged (never sent) when the client went away before an
// answer was written (nginx's convention).
const statusClientClosed = 499

type ctxKey int

const ctxKeyRequestID ctxKey = iota

// requestIDFrom returns the request id stored by the requestID middleware, or "".
func requestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(ctxKeyRequestID).(string)
	return id
}

// requestID adopts the client's X-Request-Id when it is short and printable, else
// generates one; the id is echoed on the response and stored in the context.
func (s *Server) requestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(headerRequestID)
		if !validRequestID(id) {
			id = s.ids.New()
		}
		w.Header().Set(headerRequestID, id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKeyRequestID, id)))
	})
}

func validRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLength {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

// accessLog logs one line per request once it is answered: Info for 5xx, Debug
// otherwise. It logs the route pattern, never the query, the body or any header.
func (s *Server) accessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		// The router adopts a route context it finds in the request context instead of
		// making its own, so creating it here lets the log read the matched pattern.
		rctx := chi.NewRouteContext()
		rctx.Routes = s.router
		r = r.WithContext(context.WithValue(r.Context(), chi.RouteCtxKey, rctx))
		defer func() {
			status := ww.Status()
			if status == 0 {
				status = http.StatusOK
				if r.Context().Err() != nil {
					status = statusClientClosed
				}
			}
			level := slog.LevelDebug
			if status >= 500 && status != statusClientClosed {
				level = slog.LevelInfo
			}
			route := s.routeLabel(r)
			s.logger.LogAttrs(r.Context(), level, "http request",
				slog.String("method", r.Method),
				slog.String("route", route),
				slog.Int("status", status),
				slog.Duration("duration", time.Since(start)),
				slog.Int("bytes", ww.BytesWritten()),
				slog.String("request_id", requestIDFrom(r.Context())),
			)
			if ww.Status() == 0 && r.Context().Err() != nil {
				// Nothing was answered because the client's side of the connection ended:
				// it left, or it closed only its sending half (a short body) and waits.
				// net/http would send 200 with an empty body, which reads as success; close
				// the connection without an answer instead, as any broken exchange: the
				// client cannot tell what happened and retries (pushes by transactionId).
				panic(http.ErrAbortHandler)
			}
		}()
		next.ServeHTTP(ww, r)
	})
}

// recoverer turns a panic into a 500 JSON answer (when nothing was written yet) and
// logs it with its stack. http.ErrAbortHandler is re-raised, as net/http expects.
func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.logger.LogAttrs(r.Context(), slog.LevelError, "panic in http handler",
				slog.String("request_id", requestIDFrom(r.Context())),
				slog.String("method", r.Method),
				slog.Any("err", fmt.Errorf("panic: %v", v)),
				slog.String("stack", string(debug.Stack())),
			)
			if ww, ok := w.(middleware.WrapResponseWriter); ok && ww.Status() != 0 {
				return // headers are out; nothing sensible left to send
			}
			writeErrorBody(w, http.StatusInternalServerError, api.ErrorBody{
				Success: api.Bool(false), Error: msgInternal, Code: api.ErrorCodeInternal,
				RequestID: requestIDFrom(r.Context()),
			})
		}()
		next.ServeHTTP(w, r)
	})
}

// cors answers every OPTIONS request 204 with no body (as upstream does) and, only
// when CORS is configured and the Origin is allowed, adds upstream's Access-Control-*
// headers to every answer but the Prometheus scrape's (a scraper is no browser).
// Without CORSAllowedOrigins no such header is ever sent.
func (s *Server) cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics/prometheus" {
			cors.Apply(w.Header(), s.opts.CORSAllowedOrigins, r)
		}
		if r.Method == http.MethodOptions {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// limitBody caps the request body at MaxBodyBytes. A declared Content-Length over the
// limit is refused before any byte is read; otherwise http.MaxBytesReader stops the
// read and the decoder reports *http.MaxBytesError, mapped to 413 by writeError.
func (s *Server) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > s.opts.MaxBodyBytes && !ownEnvelope(r.URL.Path) {
			s.writeError(w, r, &http.MaxBytesError{Limit: s.opts.MaxBodyBytes})
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes)
		next.ServeHTTP(w, r)
	})
}

// ownEnvelope reports whether path belongs to a route family that answers an
// oversize body in its own envelope, from its handler, whose read stops at the same
// limit: the transaction (reason payload_too_large), the KV routes (kv_body_too_large)
// and the timer routes (timers_body_too_large). With or without a Content-Length,
// such a client then sees one answer. The ephemeral family reads no body: its every
// request is the 404 the 1.x clients take for "not supported".
func ownEnvelope(path string) bool {
	const v1 = "/api/v1"
	switch path {
	case transactionPath, v1 + "/kv", v1 + "/timers", ephemeralSwitch:
		return true
	}
	return strings.HasPrefix(path, v1+"/kv/") || strings.HasPrefix(path, v1+"/resources/kv/") ||
		strings.HasPrefix(path, v1+"/timers/") || strings.HasPrefix(path, ephemeralPrefix)
}
