package gateway

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The gateway's error bodies are the broker's flat shape plus the 429 fields, byte
// for byte: clients parse them, and the key order is part of what is pinned.
func TestWriteErrorBytes(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name    string
		err     *apiError
		status  int
		want    string
		headers map[string]string
	}{
		{
			name:    "RateLimited",
			err:     &apiError{status: http.StatusTooManyRequests, code: codeRateLimited, msg: "request rate over the tenant's limit", limit: "requests", retryAfter: 1500 * time.Millisecond},
			status:  http.StatusTooManyRequests,
			want:    `{"error":"request rate over the tenant's limit","code":"rate_limited","limit":"requests","retryAfterMs":1500,"request_id":"r-1"}` + "\n",
			headers: map[string]string{"Retry-After": "2", "Content-Type": "application/json"},
		},
		{
			name:   "InvalidArgumentWithField",
			err:    &apiError{status: http.StatusBadRequest, code: codeInvalidArgument, msg: "username is required", field: "username"},
			status: http.StatusBadRequest,
			want:   `{"error":"username is required","code":"invalid_argument","field":"username","request_id":"r-1"}` + "\n",
		},
		{
			name:    "Unauthenticated",
			err:     errorf(http.StatusUnauthorized, codeUnauthenticated, "Authentication required"),
			status:  http.StatusUnauthorized,
			want:    `{"error":"Authentication required","code":"unauthenticated","request_id":"r-1"}` + "\n",
			headers: map[string]string{"WWW-Authenticate": "Bearer"},
		},
		{
			name:   "GatewayTimeout",
			err:    errorf(http.StatusGatewayTimeout, codeGatewayTimeout, "the broker did not answer in time"),
			status: http.StatusGatewayTimeout,
			want:   `{"error":"the broker did not answer in time","code":"timeout","request_id":"r-1"}` + "\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			writeError(rec, "r-1", tc.err)
			require.Equal(t, tc.status, rec.Code)
			require.Equal(t, tc.want, rec.Body.String())
			for k, v := range tc.headers {
				require.Equal(t, v, rec.Header().Get(k), k)
			}
		})
	}
}

// A transaction the gateway refuses itself is answered in the transaction's envelope,
// as the broker refuses one before the database: a transaction id, success false, a
// reason the 1.x clients branch on, no results.
func TestWriteTxErrorBytes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  *apiError
		want string
	}{
		{errorf(http.StatusBadRequest, codeInvalidArgument, "invalid JSON body"),
			`{"transactionId":"tx-1","success":false,"error":"invalid JSON body","code":"invalid_argument","request_id":"r-1","reason":"bad_request","results":[]}` + "\n"},
		{tooLarge(100).(*apiError),
			`{"transactionId":"tx-1","success":false,"error":"request body larger than 100 bytes","code":"payload_too_large","request_id":"r-1","reason":"payload_too_large","results":[]}` + "\n"},
		{&apiError{status: http.StatusTooManyRequests, code: codeQuotaExceeded, msg: "over quota", limit: "messages", retryAfter: time.Second},
			`{"transactionId":"tx-1","success":false,"error":"over quota","code":"quota_exceeded","limit":"messages","retryAfterMs":1000,"request_id":"r-1","reason":"quota_exceeded","results":[]}` + "\n"},
	} {
		w := httptest.NewRecorder()
		writeTxError(w, "r-1", "tx-1", tc.err)
		require.Equal(t, tc.err.status, w.Code)
		require.Equal(t, tc.want, w.Body.String())
	}
}
