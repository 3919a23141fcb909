package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/broker"
	"github.com/queenmq/queen/internal/encryption"
	"github.com/queenmq/queen/internal/pgtest"
	"github.com/queenmq/queen/internal/queue"
	"github.com/queenmq/queen/internal/store"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		err    error
		status int
		code   string
		msg    string
		field  string
	}{
		{"Validation", queue.Invalid("items[0].queue", "Queue must be a string"), 400, "invalid_argument", "Queue must be a string", "items[0].queue"},
		{"WrappedValidation", fmt.Errorf("push: %w", queue.Invalid("batch", "bad batch")), 400, "invalid_argument", "bad batch", "batch"},
		{"BodyTooLarge", &http.MaxBytesError{Limit: 10}, 413, "payload_too_large", "request body exceeds 10 bytes", ""},
		{"NotFound", fmt.Errorf("get: %w", queue.ErrNotFound), 404, "not_found", "Not found", ""},
		{"NotFoundWithMessage", notFound("Queue not found", queue.ErrNotFound), 404, "not_found", "Queue not found", ""},
		{"BrokerConflict", fmt.Errorf("push: %w", queue.Conflict("queue %q is sealed", "q")), 409, "conflict", `queue "q" is sealed`, ""},
		{"DatabaseConflictHidesItsText", fmt.Errorf("%w: %w", queue.ErrConflict,
			errors.New(`ERROR: duplicate key value violates unique constraint "queues_name_key" (SQLSTATE 23505)`)),
			409, "conflict", "the request conflicts with stored state", ""},
		{"Unavailable", fmt.Errorf("%w: dial tcp", queue.ErrUnavailable), 503, "unavailable", "database unavailable", ""},
		{"Timeout", fmt.Errorf("%w: %w", queue.ErrTimeout, errors.New("ERROR: canceling statement due to statement timeout")),
			504, "timeout", "the database did not answer in time; the request may or may not have taken effect", ""},
		{"DeadlineExceeded", fmt.Errorf("pop: %w", context.DeadlineExceeded),
			504, "timeout", "the database did not answer in time; the request may or may not have taken effect", ""},
		{"ServerSideCancel", fmt.Errorf("pop: %w", context.Canceled), 503, "unavailable",
			"the request was canceled by the broker before it completed; retry", ""},
		{"Other", errors.New("pq: relation does not exist"), 500, "internal", "internal server error", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			status, body := classify(tc.err)
			require.Equal(t, tc.status, status)
			require.Equal(t, tc.code, string(body.Code))
			require.Equal(t, tc.msg, body.Error)
			require.Equal(t, tc.field, body.Field)
		})
	}
}

func TestWriteError(t *testing.T) {
	t.Parallel()
	s := New(Options{}, nil, testLogger(t))
	request := func(ctx context.Context) *http.Request {
		return httptest.NewRequestWithContext(context.WithValue(ctx, ctxKeyRequestID, "req-1"), http.MethodGet, "/x", nil)
	}

	t.Run("InternalIsGenericWithRequestID", func(t *testing.T) {
		t.Parallel()
		w := httptest.NewRecorder()
		s.writeError(w, request(t.Context()), errors.New("secret table name"))
		require.Equal(t, http.StatusInternalServerError, w.Code)
		require.JSONEq(t, `{"success":false,"error":"internal server error","code":"internal","request_id":"req-1"}`, w.Body.String())
		require.NotContains(t, w.Body.String(), "secret")
	})

	t.Run("UnavailableSetsRetryAfter", func(t *testing.T) {
		t.Parallel()
		w := httptest.NewRecorder()
		s.writeError(w, request(t.Context()), queue.ErrUnavailable)
		require.Equal(t, http.StatusServiceUnavailable, w.Code)
		require.Equal(t, "1", w.Header().Get("Retry-After"))
	})

	t.Run("TimeoutIsNotAnOutage", func(t *testing.T) {
		t.Parallel()
		w := httptest.NewRecorder()
		s.writeError(w, request(t.Context()), fmt.Errorf("%w: %w", queue.ErrTimeout, context.DeadlineExceeded))
		require.Equal(t, http.StatusGatewayTimeout, w.Code)
		require.Empty(t, w.Header().Get("Retry-After"))
		require.JSONEq(t, `{"success":false,"error":"the database did not answer in time; the request may or may not have taken effect",`+
			`"code":"timeout","request_id":"req-1"}`, w.Body.String())
	})

	t.Run("ClientGoneWritesNothing", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		w := httptest.NewRecorder()
		s.writeError(w, request(ctx), fmt.Errorf("pop: %w", context.Canceled))
		require.False(t, w.Flushed)
		require.Empty(t, w.Body.String())
		require.Empty(t, w.Header())
	})
}

func TestRecoverer(t *testing.T) {
	t.Parallel()
	s := New(Options{}, nil, testLogger(t))

	t.Run("PanicIs500JSON", func(t *testing.T) {
		t.Parallel()
		h := s.requestID(s.accessLog(s.recoverer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
			panic("bug")
		}))))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/x", nil))
		require.Equal(t, http.StatusInternalServerError, w.Code)
		require.Equal(t, "application/json", w.Header().Get("Content-Type"))
		require.True(t, strings.HasPrefix(w.Body.String(), `{"success":false,"error":"internal server error","code":"internal"`), w.Body.String())
	})

	t.Run("PanicAfterWriteKeepsStatus", func(t *testing.T) {
		t.Parallel()
		h := s.accessLog(s.recoverer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusAccepted)
			panic("late bug")
		})))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/x", nil))
		require.Equal(t, http.StatusAccepted, w.Code)
		require.Empty(t, w.Body.String())
	})

	t.Run("AbortHandlerPropagates", func(t *testing.T) {
		t.Parallel()
		h := s.recoverer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }))
		require.PanicsWithValue(t, http.ErrAbortHandler, func() {
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/x", nil))
		})
	})
}

// TestConflictMessage: a conflict the broker describes reaches the client with the
// broker's words (here a push to an encrypted queue through a broker without the key).
func TestConflictMessage(t *testing.T) {
	t.Parallel()
	st, err := store.Open(store.Options{ConnString: pgtest.NewDBURL(t), MaxConns: 4})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	sealer, err := encryption.New(bytes.Repeat([]byte{3}, 32))
	require.NoError(t, err)
	opts := queue.DefaultOptions()
	opts.EncryptionEnabled = true
	_, _, err = broker.New(brokerConfig(withSealer(sealer)), st, testLogger(t)).
		Configure(t.Context(), queue.Queue{Name: "sealed", Options: opts})
	require.NoError(t, err)

	b := start(t, Options{}, st)
	r := b.post(t, "/api/v1/push", `{"items":[{"queue":"sealed","payload":{"n":1}}]}`)
	requireError(t, r, http.StatusConflict, "conflict",
		`queue "sealed" has encryptionEnabled but QUEEN_ENCRYPTION_KEY is not configured on this broker`, "")
}
