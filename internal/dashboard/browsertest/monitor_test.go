package browsertest

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
)

// request is one request of a tab as the Network domain reports it.
type request struct {
	method, url, path string
	auth              string // the Authorization header sent, "" for none
	status            int64  // 0 until the response arrives
	mime              string
	headers           map[string]string // response headers, lower-case names
	loader            cdp.LoaderID      // the document that sent it ("" from a worker)
	sent              time.Time
	done              bool
}

// monitor collects what makes a tab unclean, and its requests. Its event method runs
// on chromedp's reading goroutine, so it only records, under the lock.
type monitor struct {
	host string // host:port of the app's origin

	mu       sync.Mutex
	problems []string
	reqs     []*request
	byID     map[network.RequestID]*request
	inflight int
	changed  chan struct{} // closed and replaced on every change of inflight
}

func newMonitor(host string) *monitor {
	return &monitor{host: host, byID: map[network.RequestID]*request{}, changed: make(chan struct{})}
}

func (m *monitor) event(ev any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg := d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			msg += " " + d.Exception.Description
		}
		m.problems = append(m.problems, fmt.Sprintf("exception at %s:%d: %s", d.URL, d.LineNumber+1, msg))
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			parts := make([]string, 0, len(ev.Args))
			for _, a := range ev.Args {
				if a.Description != "" {
					parts = append(parts, a.Description)
				} else {
					parts = append(parts, string(a.Value))
				}
			}
			m.problems = append(m.problems, "console."+string(ev.Type)+": "+strings.Join(parts, " "))
		}
	case *log.EventEntryAdded:
		// Failed responses are judged from the Network events, with their allowances.
		if ev.Entry.Level == log.EntryLevelError && ev.Entry.Source != log.EntrySourceNetwork {
			m.problems = append(m.problems, fmt.Sprintf("log %s error: %s (%s)", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
		}
	case *network.EventRequestWillBeSent:
		r := &request{method: ev.Request.Method, url: ev.Request.URL, loader: ev.LoaderID, sent: time.Now()}
		if u, err := url.Parse(ev.Request.URL); err == nil {
			r.path = u.Path
			switch {
			case u.Scheme == "data" || u.Scheme == "blob" || u.Scheme == "about":
			case u.Host != m.host:
				m.problems = append(m.problems, "off-origin request: "+ev.Request.URL)
			}
		}
		for k, v := range ev.Request.Headers {
			if strings.EqualFold(k, "Authorization") {
				r.auth = fmt.Sprint(v)
			}
		}
		if old, ok := m.byID[ev.RequestID]; ok && ev.RedirectResponse != nil {
			m.finish(old)
		}
		if ev.Type == network.ResourceTypeDocument {
			// A new document: what the old one had in flight is abandoned.
			for _, o := range m.byID {
				m.finish(o)
			}
		}
		m.byID[ev.RequestID] = r
		m.reqs = append(m.reqs, r)
		if strings.HasSuffix(r.path, "/favicon.svg") {
			// The browser's own favicon fetch, not the page's: Chromium does not always
			// report its end, and nothing on the page waits for it. It is still recorded
			// (and judged if it fails); it just never holds waitIdle.
			r.done = true
			break
		}
		m.inflight++
		m.signal()
	case *page.EventFrameNavigated:
		// A document committed in the main frame: the requests of the documents before
		// it are over, whether or not the browser reports their cancellation (a poll
		// the old page sent while the navigation was pending may never be reported).
		if ev.Frame != nil && ev.Frame.ParentID == "" {
			for _, r := range m.byID {
				if r.loader != "" && r.loader != ev.Frame.LoaderID {
					m.finish(r)
				}
			}
		}
	case *network.EventResponseReceived:
		if r, ok := m.byID[ev.RequestID]; ok {
			r.status = ev.Response.Status
			r.mime = ev.Response.MimeType
			r.headers = map[string]string{}
			for k, v := range ev.Response.Headers {
				r.headers[strings.ToLower(k)] = fmt.Sprint(v)
			}
		}
	case *network.EventLoadingFinished:
		m.finish(m.byID[ev.RequestID])
	case *network.EventLoadingFailed:
		if r, ok := m.byID[ev.RequestID]; ok && !ev.Canceled {
			m.problems = append(m.problems, fmt.Sprintf("request failed: %s %s: %s %s", r.method, r.url, ev.ErrorText, ev.BlockedReason))
		}
		m.finish(m.byID[ev.RequestID])
	}
}

func (m *monitor) finish(r *request) {
	if r != nil && !r.done {
		r.done = true
		m.inflight--
		m.signal()
	}
}

func (m *monitor) signal() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// waitIdle returns once no request is in flight.
func (m *monitor) waitIdle(ctx context.Context) error {
	for {
		m.mu.Lock()
		n, ch := m.inflight, m.changed
		var open []string
		for _, r := range m.byID {
			if !r.done {
				state := "no response"
				if r.status != 0 {
					state = fmt.Sprintf("%d, body pending", r.status)
				}
				open = append(open, fmt.Sprintf("%s %s (%s after %s, loader %s)", r.method, r.url, state,
					time.Since(r.sent).Round(time.Millisecond), r.loader))
			}
		}
		m.mu.Unlock()
		if n <= 0 {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("still in flight: %s: %w", strings.Join(open, ", "), ctx.Err())
		}
	}
}

// requests returns a copy of the requests seen since the last reset.
func (m *monitor) requests() []request {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]request, 0, len(m.reqs))
	for _, r := range m.reqs {
		c := *r
		out = append(out, c)
	}
	return out
}

// reset forgets the problems and requests seen so far.
func (m *monitor) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.problems = nil
	m.reqs = nil
}

// allowance says whether a failed response is expected: status and the request.
type allowance func(r request) bool

// allow is an allowance for status on requests whose path starts with prefix (and
// whose method is method, when given).
func allow(status int64, method, prefix string) allowance {
	return func(r request) bool {
		return r.status == status && (method == "" || r.method == method) && strings.HasPrefix(r.path, prefix)
	}
}

// clean fails the test on any problem seen since the last reset, and on any response
// of 400 or more that no allowance accepts; then it resets.
func (tb *tab) clean(what string, allowed ...allowance) {
	tb.t.Helper()
	tb.waitIdle()
	m := tb.mon
	m.mu.Lock()
	problems := append([]string(nil), m.problems...)
	for _, r := range m.reqs {
		if r.status < 400 {
			continue
		}
		ok := false
		for _, a := range allowed {
			ok = ok || a(*r)
		}
		if !ok {
			problems = append(problems, fmt.Sprintf("%s %s answered %d", r.method, r.url, r.status))
		}
	}
	m.mu.Unlock()
	m.reset()
	if len(problems) > 0 {
		tb.t.Errorf("%s is not clean:\n  %s", what, strings.Join(problems, "\n  "))
	}
}
