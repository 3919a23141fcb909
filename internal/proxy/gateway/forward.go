package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/cors"
	"github.com/queenmq/queen/internal/proxy/brokerauth"
	"github.com/queenmq/queen/internal/proxy/tenant"
)

// maxMeteredAnswer bounds the push and transaction answers the proxy reads whole to
// meter them.
const maxMeteredAnswer = 32 << 20

// hopHeaders are never copied from a broker's answer.
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te",
	"Trailer", "Transfer-Encoding", "Upgrade", "Set-Cookie"}

// forward sends the request to a broker of the request's cell and streams the answer
// back. cred nil is a public request (no credential); body nil streams the client's
// body. A tenant's request waits while its move holds it, and is sent again to the
// tenant's cell when a broker answers that the tenant is fenced there.
func (s *Server) forward(w http.ResponseWriter, r *http.Request, x *exchange, cred *principal, body *requestBody) error {
	ctx, cancel := context.WithTimeout(r.Context(), s.backendTimeout(r, x.route))
	defer cancel()
	var (
		resp *http.Response
		up   *Backend
		err  error
	)
	tenantID := ""
	if cred != nil && cred.tenant != nil {
		tenantID = cred.tenant.ID
	}
	if tenantID != "" && s.moves.moving(tenantID) && (body == nil || body.raw == nil) && r.Body != nil && r.Body != http.NoBody {
		// Read a streamed body whole while the tenant moves, so that it can be sent again.
		raw, rerr := io.ReadAll(r.Body)
		if rerr != nil {
			return errorf(http.StatusBadRequest, codeInvalidArgument, "could not read the request body")
		}
		body = &requestBody{raw: raw, parsed: &parsedBody{}}
		x.bytesIn = int64(len(raw))
	}
	var counted *countingReader
	if (body == nil || body.raw == nil) && r.Body != nil && r.Body != http.NoBody {
		counted = &countingReader{r: r.Body}
		r.Body = counted
	}
	defer func() {
		if counted != nil {
			x.bytesIn = counted.n.Load()
		}
	}()
	replayable := body != nil && body.raw != nil || r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0
	holdUntil := time.Now().Add(holdMax)
	for {
		if tenantID != "" {
			if err := s.holdWhileMoving(ctx, tenantID, holdUntil); err != nil {
				if r.Context().Err() != nil {
					x.status = statusClientClosed
					return nil
				}
				return err
			}
		}
		ce, cerr := s.cellFor(r, cred)
		if cerr != nil {
			return cerr
		}
		x.cell = ce.name
		if cred != nil && tenantID == "" {
			w.Header().Set(CellHeader, ce.name) // which cell an operator's answer speaks for
		}
		changed := s.moves.next()
		resp, up, err = s.sendToCell(ctx, r, x, ce, cred, body)
		if up == nil || err != nil || tenantID == "" || !replayable || !fencedAnswer(resp) {
			break
		}
		// The tenant is fenced at this cell: its move is pausing or done. Read the
		// moves again and send the request where the tenant is now.
		resp.Body.Close()
		s.askReload()
		if err := s.waitChange(ctx, changed, holdUntil); err != nil {
			if r.Context().Err() != nil {
				x.status = statusClientClosed
				return nil
			}
			return err
		}
	}
	if up == nil && err == nil {
		return noBackend()
	}
	if up != nil {
		x.backend = up.URL.Host
	}
	if err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			// A streamed body outgrew the limit while it was being sent (chunked: no
			// Content-Length to refuse it by): the client's fault, not the broker's.
			return tooLarge(mbe.Limit)
		}
		s.countBackendError(x)
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return &apiError{status: http.StatusGatewayTimeout, code: codeGatewayTimeout, msg: "the broker did not answer in time", result: "upstream_error"}
		}
		if r.Context().Err() != nil {
			x.status = statusClientClosed // the client went away; nothing to write
			return nil
		}
		if isDialError(err) {
			return noBackend()
		}
		return &apiError{status: http.StatusBadGateway, code: codeBadGateway, msg: "the broker connection failed", result: "upstream_error"}
	}
	defer resp.Body.Close()
	return s.relay(w, resp, x, cred, body, counted)
}

// sendToCell sends the request to a healthy broker of the cell, once more to another
// when the first cannot be dialled and the body can be sent again. up is nil when no
// broker of the cell is up.
func (s *Server) sendToCell(ctx context.Context, r *http.Request, x *exchange, ce *cell, cred *principal, body *requestBody) (*http.Response, *Backend, error) {
	var (
		resp  *http.Response
		up    *Backend
		err   error
		tried *Backend
	)
	for attempt := 0; attempt < 2; attempt++ {
		next := ce.pool.pick(tried)
		if next == nil {
			break
		}
		up = next
		resp, err = s.send(ctx, r, x, up, cred, body)
		if off := (*tenancyOffError)(nil); errors.As(err, &off) {
			// A new connection found the broker restarted with tenancy off (or another
			// header): it gets no more traffic until its checks see tenancy on.
			ce.pool.misconfigured(up, off.info)
		}
		if err == nil || !isDialError(err) || (body == nil && r.Body != http.NoBody && r.ContentLength != 0) {
			break
		}
		tried = up
	}
	return resp, up, err
}

func (s *Server) countBackendError(x *exchange) {
	if x.tenant != "" {
		s.meter.Add(x.tenant, func(u *tenant.Usage) { u.UpstreamErrors++ })
	}
}

// send makes one attempt at up.
func (s *Server) send(ctx context.Context, r *http.Request, x *exchange, up *Backend, cred *principal, body *requestBody) (*http.Response, error) {
	target := up.URL.String() + r.URL.EscapedPath()
	if r.URL.RawQuery != "" {
		target += "?" + r.URL.RawQuery
	}
	var rd io.Reader = r.Body
	length := r.ContentLength
	if body != nil && body.raw != nil {
		rd, length = bytes.NewReader(body.raw), int64(len(body.raw))
	} else if r.ContentLength == 0 {
		rd = http.NoBody
	}
	out, err := http.NewRequestWithContext(ctx, r.Method, target, rd)
	if err != nil {
		return nil, err
	}
	out.ContentLength = length
	// traceparent and tracestate carry the client's W3C trace context to the broker,
	// which stores it with pushed messages (docs/tracing.md).
	for _, h := range []string{"Content-Type", "Accept", "Traceparent", "Tracestate"} {
		if v := r.Header.Get(h); v != "" {
			out.Header.Set(h, v)
		}
	}
	out.Header.Set("X-Request-Id", requestIDOf(r))
	if x.pageUser != "" { // a hint for the dashboard's page, trusted for nothing
		out.Header.Set("X-Proxy-User", x.pageUser)
		out.Header.Set("X-Proxy-Role", x.pageRole)
	}
	s.setForwarded(out, r)
	if cred != nil {
		if cred.tenant != nil {
			out.Header.Set(s.opts.TenancyHeader, cred.tenant.ID)
		}
		if s.opts.Minter != nil {
			tok, err := s.opts.Minter.Token(brokerauth.Claims{Subject: cred.subject(),
				Role: s.opts.Roles[cred.scope], Tenant: cred.tenantID()})
			if err != nil {
				return nil, err
			}
			out.Header.Set("Authorization", "Bearer "+tok)
		}
	}
	up.inflight.Add(1)
	s.metrics.inflight.Inc()
	if x.route.pop { // a pop waits at the broker until its answer's headers come
		s.metrics.parked.Inc()
		defer s.metrics.parked.Dec()
	}
	resp, err := s.transport.RoundTrip(out)
	up.inflight.Add(-1)
	s.metrics.inflight.Dec()
	return resp, err
}

// setForwarded sets X-Forwarded-For, -Proto and -Host; a client's own
// X-Forwarded-For (every line of it, in order) is kept only from a trusted proxy.
func (s *Server) setForwarded(out, r *http.Request) {
	host := peerHost(r)
	xff := host
	if prior := forwardedFor(r); len(prior) > 0 && s.trusted(host) {
		xff = strings.Join(append(prior, host), ", ")
	}
	out.Header.Set("X-Forwarded-For", xff)
	proto := "http"
	if s.opts.TLS {
		proto = "https"
	}
	out.Header.Set("X-Forwarded-Proto", proto)
	out.Header.Set("X-Forwarded-Host", r.Host)
}

// trusted reports whether host is the address of a trusted proxy.
func (s *Server) trusted(host string) bool {
	ip, err := netip.ParseAddr(host)
	return err == nil && s.trustedAddr(ip)
}

func (s *Server) trustedAddr(ip netip.Addr) bool {
	for _, p := range s.opts.TrustedProxies {
		if p.Contains(ip.Unmap()) {
			return true
		}
	}
	return false
}

// backendTimeout is how long the proxy waits for the broker's answer: for a pop, the
// long-poll capPopTimeout writes into its query plus 10 s; else the backend timeout
// (QUEEN_PROXY_UPSTREAM_TIMEOUT).
func (s *Server) backendTimeout(r *http.Request, rt *route) time.Duration {
	if !rt.pop {
		return s.opts.BackendTimeout
	}
	return s.capPopTimeout(r) + 10*time.Second
}

// capPopTimeout writes into a pop's query the longest the broker may hold it: the
// pop's own timeout, or upstream's default of 30 s when it names none (a broker's
// DEFAULT_TIMEOUT may be longer), at most QUEEN_PROXY_MAX_POP_TIMEOUT; and returns it.
// A timeout the broker refuses (not an integer, negative) is left for its 400.
func (s *Server) capPopTimeout(r *http.Request) time.Duration {
	q := r.URL.Query()
	wait := min(30*time.Second, s.opts.MaxPopTimeout)
	if v := q.Get("timeout"); v != "" {
		ms, err := api.ParseQueryInt(v)
		if err != nil || ms < 0 {
			return wait
		}
		wait = s.opts.MaxPopTimeout
		if ms < wait.Milliseconds() {
			wait = time.Duration(ms) * time.Millisecond
		}
	}
	q.Set("timeout", strconv.FormatInt(wait.Milliseconds(), 10))
	r.URL.RawQuery = q.Encode()
	return wait
}

// isDialError reports a failure before any byte of the request was written: the
// broker could not be dialled, or a new connection to it failed its tenancy check.
func isDialError(err error) bool {
	var op *net.OpError
	var cc *connCheckError
	return errors.As(err, &op) && op.Op == "dial" || errors.As(err, &cc)
}

// relay writes the broker's answer: push and transaction answers are read whole and
// metered, everything else streams, flushed as it arrives.
func (s *Server) relay(w http.ResponseWriter, resp *http.Response, x *exchange, cred *principal, body *requestBody, counted *countingReader) error {
	h := w.Header()
	for k, v := range resp.Header {
		switch {
		case cors.IsHeader(k): // the proxy's own CORS policy answers (Server.cors)
		case k == "Vary":
			h[k] = append(h[k], v...)
		default:
			h[k] = v
		}
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
	h.Set("X-Request-Id", x.id)
	x.status = resp.StatusCode
	if body != nil && body.raw != nil {
		x.bytesIn = int64(len(body.raw))
	} else if counted != nil {
		x.bytesIn = counted.n.Load()
	}
	var n int64
	var err error
	var m *meterDelta
	metered := cred.tenantID() != ""
	switch {
	case metered && (x.route.body == bodyPush || x.route.body == bodyTransaction):
		var raw []byte
		raw, err = io.ReadAll(io.LimitReader(resp.Body, maxMeteredAnswer))
		w.WriteHeader(resp.StatusCode)
		if err == nil {
			var wn int
			wn, err = w.Write(raw)
			n = int64(wn)
		}
		m = meterPushAnswer(x.route.body, resp.StatusCode, raw)
	case metered && x.route.pop:
		w.WriteHeader(resp.StatusCode)
		counter := newPopCounter()
		n, err = copyFlushing(w, io.TeeReader(resp.Body, counter))
		m = &meterDelta{popRequests: 1, messagesOut: counter.count()}
		if resp.StatusCode == http.StatusNoContent || m.messagesOut == 0 {
			m.emptyPops = 1
		}
	default:
		w.WriteHeader(resp.StatusCode)
		n, err = copyFlushing(w, resp.Body)
		m = &meterDelta{}
		if body != nil && body.parsed != nil && body.parsed.acks > 0 && resp.StatusCode < 500 {
			m.acks = int64(body.parsed.acks)
		}
	}
	x.bytesOut = n
	if !metered {
		return nil
	}
	x.result = "forwarded"
	if resp.StatusCode >= 500 {
		x.result = "upstream_error"
		m.backendErrors = 1
	}
	s.record(cred.tenantID(), x, m)
	if err != nil {
		x.status = resp.StatusCode
	}
	return nil
}

// copyFlushing copies src to w, flushing after every read so that a long-poll's
// answer reaches the client as soon as the broker sends it.
func copyFlushing(w http.ResponseWriter, src io.Reader) (int64, error) {
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	var total int64
	for {
		n, err := src.Read(buf)
		if n > 0 {
			wn, werr := w.Write(buf[:n])
			total += int64(wn)
			if werr != nil {
				return total, werr
			}
			_ = rc.Flush()
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// meterDelta is what one forwarded request adds to its tenant's minute.
type meterDelta struct {
	pushRequests, messagesIn, duplicatesIn, failedIn int64
	popRequests, emptyPops, messagesOut, acks        int64
	backendErrors                                    int64
}

// meterPushAnswer counts a push's or transaction's answer: queued and buffered items
// are messages in, and a committed transaction's acks are acks.
func meterPushAnswer(kind bodyKind, status int, raw []byte) *meterDelta {
	m := &meterDelta{}
	if kind == bodyPush {
		m.pushRequests = 1
		if status != http.StatusOK && status != http.StatusCreated {
			return m
		}
		t, ok := scanPushAnswer(raw)
		if !ok {
			// A malformed answer still counts what the decoder got through.
			t, _ = tallyPushAnswer(raw)
		}
		m.messagesIn, m.duplicatesIn, m.failedIn = t.in, t.duplicates, t.failed
		return m
	}
	var tx struct {
		Success bool `json:"success"`
		Results []struct {
			Type    string `json:"type"`
			Success bool   `json:"success"`
		} `json:"results"`
	}
	if err := json.Unmarshal(raw, &tx); err == nil && tx.Success {
		for _, r := range tx.Results {
			switch {
			case r.Type == api.TxOpPush && r.Success:
				m.messagesIn++
			case r.Type == api.TxOpAck:
				m.acks++ // a committed transaction answered every ack
			}
		}
	}
	return m
}

// tallyPushAnswer counts a push answer's results through encoding/json, the
// reference for scanPushAnswer and the path for every answer it refuses. The tally
// holds whatever the decoder filled in, even when it also returns an error.
func tallyPushAnswer(raw []byte) (pushTally, error) {
	var t pushTally
	var results []struct {
		Status string `json:"status"`
	}
	err := json.Unmarshal(raw, &results)
	for _, r := range results {
		switch r.Status {
		case api.PushStatusQueued, api.PushStatusBuffered:
			t.in++
		case api.PushStatusDuplicate:
			t.duplicates++
		case api.PushStatusFailed:
			t.failed++
		}
	}
	return t, err
}

// record adds one forwarded request to the tenant's metering and metrics.
func (s *Server) record(tenantID string, x *exchange, m *meterDelta) {
	s.meter.Add(tenantID, func(u *tenant.Usage) {
		u.Requests++
		u.BytesIn += x.bytesIn
		u.BytesOut += x.bytesOut
		u.PushRequests += m.pushRequests
		u.MessagesIn += m.messagesIn
		u.DuplicatesIn += m.duplicatesIn
		u.FailedIn += m.failedIn
		u.PopRequests += m.popRequests
		u.EmptyPops += m.emptyPops
		u.MessagesOut += m.messagesOut
		u.Acks += m.acks
		u.UpstreamErrors += m.backendErrors
	})
	s.metrics.tenantMessages.WithLabelValues(tenantID, "in").Add(float64(m.messagesIn))
	s.metrics.tenantMessages.WithLabelValues(tenantID, "out").Add(float64(m.messagesOut))
	s.metrics.tenantBytes.WithLabelValues(tenantID, "in").Add(float64(x.bytesIn))
	s.metrics.tenantBytes.WithLabelValues(tenantID, "out").Add(float64(x.bytesOut))
	s.metrics.tenantAcks.WithLabelValues(tenantID).Add(float64(m.acks))
}

// countingReader counts the bytes of a streamed request body. The count is atomic: the
// transport may still be sending the body (its own goroutine) when the broker has
// answered and relay reads the count.
type countingReader struct {
	r io.ReadCloser
	n atomic.Int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n.Add(int64(n))
	return n, err
}

func (c *countingReader) Close() error { return c.r.Close() }
