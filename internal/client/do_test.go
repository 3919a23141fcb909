package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/client"
)

func TestDo(t *testing.T) {
	t.Parallel()

	t.Run("EncodesBodyAndDecodesOut", func(t *testing.T) {
		t.Parallel()
		b := answer(t, http.StatusOK, `{"status":"ok"}`)
		var out struct{ Status string }
		status, err := b.client.Do(t.Context(), http.MethodPost, "/internal/api/notify",
			map[string]string{"queue": "orders"}, &out)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, "ok", out.Status)
		r := b.only(t)
		require.Equal(t, "/internal/api/notify", r.RequestURI)
		require.Equal(t, `{"queue":"orders"}`, r.Body)
	})
	t.Run("RawBodyAndRawOut", func(t *testing.T) {
		t.Parallel()
		b := answer(t, http.StatusOK, `[1,2]`)
		var raw []byte
		_, err := b.client.Do(t.Context(), http.MethodPost, "/x", json.RawMessage(`{"a":1}`), &raw)
		require.NoError(t, err)
		require.Equal(t, `[1,2]`, string(raw))
		require.Equal(t, `{"a":1}`, b.only(t).Body)
	})
	t.Run("QueryStringKept", func(t *testing.T) {
		t.Parallel()
		b := answer(t, http.StatusOK, ``)
		var out map[string]any
		status, err := b.client.Do(t.Context(), http.MethodGet, "/api/v1/dlq?queue=orders&limit=5", nil, &out)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, status)
		require.Nil(t, out, "an empty body decodes to the zero value")
		require.Equal(t, "/api/v1/dlq?queue=orders&limit=5", b.only(t).RequestURI)
	})
	t.Run("GetWithBodyIsRefused", func(t *testing.T) {
		t.Parallel()
		b := answer(t, http.StatusOK, `{}`)
		_, err := b.client.Do(t.Context(), http.MethodGet, "/health", map[string]int{"a": 1}, nil)
		require.ErrorContains(t, err, "must not have a body")
		require.Empty(t, b.requests())
	})
	t.Run("ErrorStatusReturnsStatusAndError", func(t *testing.T) {
		t.Parallel()
		b := answer(t, http.StatusNotFound, `{"error":"Not found"}`)
		status, err := b.client.Do(t.Context(), http.MethodDelete, "/api/v1/nope", nil, nil)
		require.Equal(t, http.StatusNotFound, status)
		require.True(t, client.IsNotFound(err))
	})
}

func TestErrorDecoding(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name     string
		status   int
		body     string
		wantMsg  string
		wantCode api.ErrorCode
	}{
		{"FlatWithCode", 400, `{"error":"queue is required","code":"invalid_argument","field":"queue"}`, "queue is required", api.ErrorCodeInvalidArgument},
		{"UpstreamFlatCodeInferred", 401, `{"error":"Invalid token"}`, "Invalid token", api.ErrorCodeUnauthenticated},
		{"NestedTolerated", 403, `{"error":{"code":"forbidden","message":"admin only"}}`, "admin only", api.ErrorCodeForbidden},
		{"RawTextBody", 404, "Not Found\n", "Not Found", api.ErrorCodeNotFound},
		{"EmptyBody", 500, "", "Internal Server Error", api.ErrorCodeInternal},
		{"DBFailure", 500, `{"success":false,"error":"boom"}`, "boom", api.ErrorCodeInternal},
		{"Conflict", 409, `{"error":"hash mismatch"}`, "hash mismatch", api.ErrorCodeConflict},
		{"TooLarge", 413, `{"error":"too big","code":"payload_too_large"}`, "too big", api.ErrorCodePayloadTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := answer(t, tc.status, tc.body)
			_, err := b.client.Do(t.Context(), http.MethodGet, "/api/v1/x", nil, nil)
			e := client.AsError(err)
			require.NotNil(t, e, "%v", err)
			require.Equal(t, tc.status, e.StatusCode)
			require.Equal(t, tc.wantMsg, e.Message)
			require.Equal(t, tc.wantCode, e.Code)
			require.Equal(t, tc.body, string(e.Body))
			require.Equal(t, http.MethodGet, e.Method)
			require.Equal(t, "/api/v1/x", e.Path)
			require.Contains(t, e.Error(), tc.wantMsg)
		})
	}

	t.Run("HelpersOnForeignErrors", func(t *testing.T) {
		t.Parallel()
		require.False(t, client.IsNotFound(nil))
		require.False(t, client.IsNotFound(errors.New("x")))
		require.Zero(t, client.StatusCode(errors.New("x")))
		require.True(t, client.IsConflict(&client.Error{Code: api.ErrorCodeAlreadyExists}))
	})
}

func TestRetries(t *testing.T) {
	t.Parallel()

	t.Run("OffByDefault", func(t *testing.T) {
		t.Parallel()
		b := answer(t, http.StatusServiceUnavailable, `{"error":"down"}`)
		_, err := b.client.ListQueues(t.Context())
		require.True(t, client.IsUnavailable(err))
		require.Len(t, b.requests(), 1)
	})
	t.Run("ServerErrorsRetriedThenSucceed", func(t *testing.T) {
		t.Parallel()
		b := setup(t, []reply{{500, `{"error":"a"}`}, {502, "bad gateway"}, {200, `{"queues":[]}`}},
			client.WithRetries(2), client.WithBackoff(time.Millisecond))
		_, err := b.client.ListQueues(t.Context())
		require.NoError(t, err)
		require.Len(t, b.requests(), 3)
	})
	t.Run("RetriesExhaustedReturnLastAnswer", func(t *testing.T) {
		t.Parallel()
		b := setup(t, []reply{{500, `{"error":"a"}`}, {503, `{"error":"b"}`}},
			client.WithRetries(1), client.WithBackoff(time.Millisecond))
		_, err := b.client.ListQueues(t.Context())
		require.Equal(t, "b", client.AsError(err).Message)
		require.Len(t, b.requests(), 2)
	})
	t.Run("ClientErrorsNotRetried", func(t *testing.T) {
		t.Parallel()
		b := answer(t, http.StatusBadRequest, `{"error":"nope"}`, client.WithRetries(3), client.WithBackoff(time.Millisecond))
		_, err := b.client.Push(t.Context(), api.PushItem{Queue: "q"})
		require.True(t, client.IsInvalidArgument(err))
		require.Len(t, b.requests(), 1)
	})
	t.Run("TransportErrorsRetriedWithSameBody", func(t *testing.T) {
		t.Parallel()
		var calls atomic.Int32
		var bodies []string
		hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			body, _ := io.ReadAll(r.Body)
			bodies = append(bodies, string(body))
			if calls.Add(1) < 3 {
				return nil, errors.New("connection reset")
			}
			return &http.Response{StatusCode: 201, Body: io.NopCloser(strings.NewReader(`[]`)), Request: r}, nil
		})}
		c := client.New("http://queen.invalid", client.WithHTTPClient(hc), client.WithRetries(2), client.WithBackoff(time.Millisecond))
		_, err := c.Push(t.Context(), api.PushItem{Queue: "q"})
		require.NoError(t, err)
		require.Len(t, bodies, 3)
		require.Equal(t, bodies[0], bodies[2], "a retry resends the same transaction id")
	})
	t.Run("TransportErrorWithoutRetries", func(t *testing.T) {
		t.Parallel()
		hc := &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
			return nil, errors.New("connection refused")
		})}
		c := client.New("http://queen.invalid", client.WithHTTPClient(hc))
		_, err := c.Health(t.Context())
		require.ErrorContains(t, err, "connection refused")
		require.Nil(t, client.AsError(err))
	})
	t.Run("CancelDuringBackoffReturnsPromptly", func(t *testing.T) {
		t.Parallel()
		// In a synctest bubble the clock only moves when every goroutine waits, so the
		// call's duration is exact: the 50 ms deadline, not the hour of backoff.
		synctest.Test(t, func(t *testing.T) {
			var calls atomic.Int32
			hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				calls.Add(1)
				return &http.Response{StatusCode: http.StatusInternalServerError, Request: r,
					Header: http.Header{"Content-Type": {"application/json"}},
					Body:   io.NopCloser(strings.NewReader(`{"error":"x"}`))}, nil
			})}
			c := client.New("http://queen.invalid", client.WithHTTPClient(hc), client.WithRetries(5), client.WithBackoff(time.Hour))
			ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := c.ListQueues(ctx)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			require.Equal(t, 50*time.Millisecond, time.Since(start), "the call ends at the deadline, within the backoff")
			require.EqualValues(t, 1, calls.Load())
		})
	})
}
