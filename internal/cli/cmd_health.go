package cli

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"time"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/buildinfo"
	"github.com/queenmq/queen/internal/client"
)

// pingCommand is `queenctl ping`.
func pingCommand() *command {
	return &command{
		name: "ping", summary: "check that the broker and its database answer",
		help: "Calls GET /health. Exits 0 when the broker is healthy, 5 when it cannot be\n" +
			"reached or answers that its database is down.",
		setup: func(*flag.FlagSet) runFunc { return runPing },
	}
}

// runPing implements ping.
func runPing(ctx context.Context, a *app, _ []string) error {
	c, err := a.client()
	if err != nil {
		return err
	}
	start := time.Now()
	h, herr := c.Health(ctx)
	if h == nil {
		return fail(herr, "health check")
	}
	elapsed := time.Since(start).Round(100 * time.Microsecond)
	if err := a.show(h, func(t *tw) {
		t.line("%s is %s: database %s, version %s, %s", a.target.server, t.state(h.Status),
			t.state(h.Database), orDash(h.Version), elapsed)
	}); err != nil {
		return err
	}
	if client.StatusCode(herr) == http.StatusServiceUnavailable {
		return &codeError{code: ExitUnavailable, msg: fmt.Sprintf("health check: the broker is %s, database %s (HTTP 503 from GET /health)",
			orDash(h.Status), orDash(h.Database))}
	}
	return fail(herr, "health check")
}

// statusCommand is `queenctl status`.
func statusCommand() *command {
	return &command{
		name: "status", summary: "show message counts, requests, leases and active queues",
		help: "Calls GET /api/v1/status: counters of the messages created in the window\n" +
			"(default: the last hour) and the queues that received messages in it.",
		setup: func(fs *flag.FlagSet) runFunc {
			var o struct{ from, to, queue, namespace, task string }
			fs.StringVar(&o.from, "from", "", "window start: RFC 3339, a date, or a duration ago (default 1h)")
			fs.StringVar(&o.to, "to", "", "window end (default now)")
			fs.StringVar(&o.queue, "queue", "", "only this queue")
			fs.StringVar(&o.namespace, "namespace", "", "only queues of this namespace")
			fs.StringVar(&o.task, "task", "", "only queues of this task")
			return func(ctx context.Context, a *app, _ []string) error {
				q := url.Values{}
				for _, f := range []struct{ key, flag, v string }{{"from", "from", o.from}, {"to", "to", o.to}} {
					ts, err := timeFlag(f.flag, f.v)
					if err != nil {
						return err
					}
					setQuery(q, f.key, ts)
				}
				setQuery(q, "queue", o.queue)
				setQuery(q, "namespace", o.namespace)
				setQuery(q, "task", o.task)
				var s api.StatusResponse
				if err := a.get(ctx, "/api/v1/status", q, &s); err != nil {
					return fail(err, "status")
				}
				return a.show(s, func(t *tw) { showStatus(t, &s) })
			}
		},
	}
}

// showStatus renders a status answer.
func showStatus(t *tw, s *api.StatusResponse) {
	m := s.Messages
	t.kv([][2]string{
		{"Window", fmt.Sprintf("%s to %s (%d-minute buckets)", s.TimeRange.From, s.TimeRange.To, s.BucketMinutes)},
		{"Messages", fmt.Sprintf("%d total, %s pending, %s processing, %s completed, %s failed, %s dead-letter",
			m.Total, t.yellow(itoa(m.Pending)), itoa(m.Processing), t.green(itoa(m.Completed)),
			redIf(t, m.Failed), redIf(t, m.DeadLetter))},
		{"Requests", fmt.Sprintf("push %d, pop %d, ack %d", m.Requests.Push, m.Requests.Pop, m.Requests.Ack)},
		{"Leases", fmt.Sprintf("%d active on %d partitions", s.Leases.Active, s.Leases.PartitionsWithLeases)},
		{"Dead letters", fmt.Sprintf("%d in %d partitions", s.DeadLetterQueue.TotalMessages, s.DeadLetterQueue.AffectedPartitions)},
	})
	t.line("")
	rows := make([][]string, len(s.Queues))
	for i, q := range s.Queues {
		rows[i] = []string{q.Name, orDash(q.Namespace), orDash(q.Task), itoa(q.Partitions), itoa(q.TotalConsumed)}
	}
	t.table([]string{"QUEUE", "NAMESPACE", "TASK", "PARTITIONS", "CONSUMED"}, rows, "No queue received messages in the window.")
	if s.ConsumerGroups != nil { // an upstream broker sends none
		t.line("")
		showGroupLags(t, s.ConsumerGroups)
	}
}

// redIf colours a count red when it is not zero.
func redIf(t *tw, n int64) string {
	if n == 0 {
		return "0"
	}
	return t.red(itoa(n))
}

// metricsCommand is `queenctl metrics`.
func metricsCommand() *command {
	return &command{
		name: "metrics", summary: "show the broker's process metrics, or its Prometheus exposition",
		help: "Calls GET /metrics (a JSON snapshot of the broker process that answers), or\n" +
			"with --prometheus GET /metrics/prometheus, printed as it is.",
		setup: func(fs *flag.FlagSet) runFunc {
			prom := fs.Bool("prometheus", false, "print the Prometheus text exposition instead")
			return func(ctx context.Context, a *app, _ []string) error {
				c, err := a.client()
				if err != nil {
					return err
				}
				if *prom {
					var raw []byte
					if _, err := c.Do(ctx, http.MethodGet, "/metrics/prometheus", nil, &raw); err != nil {
						return fail(err, "prometheus metrics")
					}
					_, err := a.stdout.Write(raw)
					return err
				}
				var m api.Metrics
				if err := a.get(ctx, "/metrics", nil, &m); err != nil {
					return fail(err, "metrics")
				}
				return a.show(m, func(t *tw) { showMetrics(t, &m) })
			}
		},
	}
}

// showMetrics renders the JSON metrics snapshot.
func showMetrics(t *tw, m *api.Metrics) {
	mib := func(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
	t.kv([][2]string{
		{"Uptime", (time.Duration(m.Uptime) * time.Second).String()},
		{"Requests", fmt.Sprintf("%.0f total, %.1f/s", m.Requests.Total, m.Requests.Rate)},
		{"Messages", fmt.Sprintf("%.0f pushed, %.1f/s", m.Messages.Total, m.Messages.Rate)},
		{"DB pool", fmt.Sprintf("size %d, idle %d, waiting %d", m.Database.PoolSize, m.Database.IdleConnections, m.Database.WaitingRequests)},
		{"Memory", fmt.Sprintf("rss %s, heap %s of %s", mib(m.Memory.RSS), mib(m.Memory.HeapUsed), mib(m.Memory.HeapTotal))},
		{"CPU", fmt.Sprintf("user %s, system %s", time.Duration(m.CPU.User)*time.Microsecond, time.Duration(m.CPU.System)*time.Microsecond)},
	})
}

// versionCommand is `queenctl version`.
func versionCommand() *command {
	return &command{
		name: "version", summary: "print queenctl's version and the broker's",
		help: "Prints queenctl's version, then asks the broker for its own (GET /health).\n" +
			"With --client nothing is sent.",
		setup: func(fs *flag.FlagSet) runFunc {
			clientOnly := fs.Bool("client", false, "only queenctl's version; do not contact the broker")
			return func(ctx context.Context, a *app, _ []string) error { return runVersion(ctx, a, *clientOnly) }
		},
	}
}

// versionInfo is the -o json/yaml shape of version.
type versionInfo struct {
	Client clientVersion  `json:"client"`
	Server *serverVersion `json:"server,omitempty"`
}

// clientVersion is queenctl's build information.
type clientVersion struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Date      string `json:"date"`
	GoVersion string `json:"goVersion"`
}

// serverVersion is what the broker reports about itself.
type serverVersion struct {
	URL      string `json:"url"`
	Version  string `json:"version"`
	Status   string `json:"status"`
	Database string `json:"database"`
}

// runVersion implements version.
func runVersion(ctx context.Context, a *app, clientOnly bool) error {
	v := versionInfo{Client: clientVersion{buildinfo.Version, buildinfo.Commit, buildinfo.Date, buildinfo.GoVersion()}}
	var herr error
	if !clientOnly {
		c, err := a.client()
		if err != nil {
			return err
		}
		var h *api.Health
		if h, herr = c.Health(ctx); h != nil {
			v.Server = &serverVersion{URL: a.target.server, Version: h.Version, Status: h.Status, Database: h.Database}
			herr = nil // an unhealthy broker still told its version
		}
	}
	if err := a.show(v, func(t *tw) {
		t.line("queenctl %s (commit %s, built %s, %s %s/%s)", buildinfo.Version, buildinfo.Commit, buildinfo.Date,
			buildinfo.GoVersion(), runtime.GOOS, runtime.GOARCH)
		if v.Server != nil {
			t.line("broker   %s at %s (%s)", orDash(v.Server.Version), v.Server.URL, t.state(v.Server.Status))
		}
	}); err != nil {
		return err
	}
	return fail(herr, "broker version")
}

// get calls GET path?query and decodes the JSON answer into out. A 200 answer whose
// body is upstream's {"error":...} failure shape is an error too.
func (a *app) get(ctx context.Context, path string, query url.Values, out any) error {
	return a.call(ctx, http.MethodGet, path, query, nil, out)
}

// call sends a request and decodes the JSON answer into out (when not nil).
func (a *app) call(ctx context.Context, method, path string, query url.Values, body, out any) error {
	c, err := a.client()
	if err != nil {
		return err
	}
	if len(query) > 0 {
		path += "?" + query.Encode()
	}
	var raw []byte
	if _, err := c.Do(ctx, method, path, body, &raw); err != nil {
		return err
	}
	return decodeAnswer(method, path, raw, out)
}

// setQuery sets key when value is not empty.
func setQuery(q url.Values, key, value string) {
	if value != "" {
		q.Set(key, value)
	}
}
