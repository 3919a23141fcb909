package checker

import (
	"net/http"
	"time"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/client"
)

// Routes of the requests a run records ([Request.Route]).
const (
	RoutePush        = "POST /api/v1/push"
	RoutePop         = "GET /api/v1/pop/queue/{queue}"
	RouteAck         = "POST /api/v1/ack"
	RouteAckBatch    = "POST /api/v1/ack/batch"
	RouteTransaction = "POST /api/v1/transaction"
)

// Request is one HTTP request of the run's traffic and how it was answered.
type Request struct {
	// Route is one of the Route constants.
	Route  string
	Broker int
	// Sent is when the request was sent, Received when its answer (or its transport
	// error) arrived.
	Sent, Received time.Duration
	// Status is the HTTP status of the answer: 200 for every 2xx (the client does not
	// say which), 0 when no answer came (transport error).
	Status int
	// Code and Message are the error code and message of an answer >= 400, or of a
	// 2xx answer that carried an error.
	Code, Message string
	// Items, Queued and Buffered count a push's items, those answered queued or
	// duplicate (stored), and those answered buffered (spooled).
	Items, Queued, Buffered int
}

// ok reports whether q was answered 2xx.
func (q *Request) ok() bool { return q.Status >= 200 && q.Status < 300 }

// disrupted reports whether push q shows the database away: no answer, an error
// status, or an item spooled instead of stored.
func (q *Request) disrupted() bool { return !q.ok() || q.Buffered > 0 }

// allQueued reports whether push q stored every item.
func (q *Request) allQueued() bool { return q.ok() && q.Items > 0 && q.Queued == q.Items }

// newRequest describes a request answered at received with err (nil: 2xx).
func newRequest(route string, b int, sent, received time.Duration, err error) Request {
	q := Request{Route: route, Broker: b, Sent: sent, Received: received}
	if err == nil {
		q.Status = http.StatusOK
		return q
	}
	if e := client.AsError(err); e != nil {
		q.Status, q.Code, q.Message = e.StatusCode, string(e.Code), e.Message
	}
	return q
}

// request records one request of the traffic.
func (r *run) request(q Request) {
	r.reqMu.Lock()
	r.requests = append(r.requests, q)
	r.reqMu.Unlock()
}

// checkStatuses counts the 5xx answers and, with Only503, requires that none had a
// status other than 503, the one that says "retry later" (the database is away, the
// broker is stopping): a 500 is a fault of the broker, whatever the database did.
// A 504 timeout in the window of a fault that may cause them is counted apart.
func (v *verifier) checkStatuses() {
	for i := range v.h.Requests {
		q := &v.h.Requests[i]
		switch {
		case q.Status == http.StatusServiceUnavailable:
			v.rep.Unavailable++
		case q.Status == http.StatusGatewayTimeout && q.Code == string(api.ErrorCodeTimeout) && inTimeoutsWindow(v.h, q):
			v.rep.FaultTimeouts++
		case q.Status >= 500:
			v.rep.ServerErrors++
			if !v.h.Only503 {
				continue
			}
			v.rep.add("status", "%s to broker %d (sent at %s) answered %d %s: %s",
				q.Route, q.Broker, secs(q.Sent), q.Status, q.Code, q.Message)
		}
	}
}

// pushRequest describes a push of items answered with res (nil after an error).
func pushRequest(b int, sent, received time.Duration, items int, res []api.PushResult, err error) Request {
	q := newRequest(RoutePush, b, sent, received, err)
	q.Items = items
	for _, pr := range res {
		switch pr.Status {
		case api.PushStatusQueued, api.PushStatusDuplicate:
			q.Queued++
		case api.PushStatusBuffered:
			q.Buffered++
		}
	}
	return q
}
