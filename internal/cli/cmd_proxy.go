package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/queenmq/queen/internal/client"
)

// DefaultProxyAdmin is the queen-proxy admin API queenctl proxy talks to when
// nothing else is set: the local one, on its loopback listener.
const DefaultProxyAdmin = "http://127.0.0.1:6641"

// proxyAdmin is the admin API of one queen-proxy: --admin-url and --admin-token,
// else $QUEEN_PROXY_ADMIN_URL and $QUEEN_PROXY_ADMIN_TOKEN.
type proxyAdmin struct {
	url, token string
}

// proxyFlags registers the admin API flags of a queenctl proxy command.
func proxyFlags(fs *flag.FlagSet) *proxyAdmin {
	p := &proxyAdmin{}
	fs.StringVar(&p.url, "admin-url", "", "queen-proxy admin API `URL` (env QUEEN_PROXY_ADMIN_URL; default "+DefaultProxyAdmin+")")
	fs.StringVar(&p.token, "admin-token", "", "admin `TOKEN`, or an operator's session token (env QUEEN_PROXY_ADMIN_TOKEN)")
	return p
}

// call sends one admin API request and returns the raw JSON answer.
func (p *proxyAdmin) call(ctx context.Context, a *app, method, path string, body any) (json.RawMessage, error) {
	base := p.url
	if base == "" {
		base = a.env["QUEEN_PROXY_ADMIN_URL"]
	}
	if base == "" {
		base = DefaultProxyAdmin
	}
	token := p.token
	if token == "" {
		token = a.env["QUEEN_PROXY_ADMIN_TOKEN"]
	}
	if token == "" {
		return nil, usagef("the admin API needs a token: give --admin-token or QUEEN_PROXY_ADMIN_TOKEN")
	}
	c, hc := newClient(&target{server: normalizeServer(base), serverFrom: "--admin-url", token: token, tokenFrom: "--admin-token"}, a.g.timeout)
	defer hc.CloseIdleConnections()
	var raw []byte
	if _, err := c.Do(ctx, method, path, body, &raw); err != nil {
		if e := client.AsError(err); e != nil && e.Field != "" {
			return nil, fmt.Errorf("%s (field %s)", e.Message, e.Field)
		}
		return nil, err
	}
	return raw, nil
}

// jsonFlag is a flag holding a JSON document (limits, quotas).
type jsonFlag struct{ v json.RawMessage }

func (j *jsonFlag) String() string { return string(j.v) }

func (j *jsonFlag) Set(s string) error {
	if !json.Valid([]byte(s)) {
		return fmt.Errorf("not JSON: %s", s)
	}
	j.v = json.RawMessage(s)
	return nil
}

// proxyCommand is `queenctl proxy`.
func proxyCommand() *command {
	return &command{
		name: "proxy", summary: "manage a queen-proxy: tenants, limits, quotas, keys, users, usage",
		help: "Talks to the queen-proxy admin API (--admin-url, default " + DefaultProxyAdmin + ") with its\n" +
			"admin token (--admin-token or QUEEN_PROXY_ADMIN_TOKEN). Limits and quotas are set\n" +
			"with 'tenant create' or 'tenant update' as JSON objects.",
		subs: []*command{
			{name: "tenant", aliases: []string{"tenants"}, summary: "tenants, their limits and quotas", subs: []*command{
				proxyLeaf("list", "", "list tenants", http.MethodGet, tenantsTable, func(fs *flag.FlagSet) func([]string) (string, any, error) {
					status := fs.String("status", "", "only tenants in `STATUS` (active, suspended, deleted)")
					return func([]string) (string, any, error) {
						q := url.Values{}
						if *status != "" {
							q.Set("status", *status)
						}
						return withQuery("/admin/v1/tenants", q), nil, nil
					}
				}),
				proxyLeaf("get", "ID", "show a tenant", http.MethodGet, tenantTable, idPath("/admin/v1/tenants/")),
				proxyLeaf("create", "ID", "create a tenant", http.MethodPost, tenantTable, func(fs *flag.FlagSet) func([]string) (string, any, error) {
					name := fs.String("name", "", "display `NAME`")
					limits, quotas := &jsonFlag{}, &jsonFlag{}
					fs.Var(limits, "limits", "`JSON` object of limits (requestsPerSecond, messagesPerSecond, maxConcurrent, ...)")
					fs.Var(quotas, "quotas", "`JSON` object of quotas (maxMessages, maxBytes, maxQueues)")
					return func(args []string) (string, any, error) {
						return "/admin/v1/tenants", map[string]any{"id": args[0], "name": *name,
							"limits": rawOrNil(limits), "quotas": rawOrNil(quotas)}, nil
					}
				}),
				proxyLeaf("update", "ID", "change a tenant's name, limits or quotas (JSON null resets them)", http.MethodPatch, tenantTable,
					func(fs *flag.FlagSet) func([]string) (string, any, error) {
						name := fs.String("name", "", "display `NAME`")
						limits, quotas := &jsonFlag{}, &jsonFlag{}
						fs.Var(limits, "limits", "`JSON` object merged over the limits")
						fs.Var(quotas, "quotas", "`JSON` object merged over the quotas")
						return func(args []string) (string, any, error) {
							body := map[string]any{}
							if *name != "" {
								body["name"] = *name
							}
							if limits.v != nil {
								body["limits"] = limits.v
							}
							if quotas.v != nil {
								body["quotas"] = quotas.v
							}
							if len(body) == 0 {
								return "", nil, usagef("give --name, --limits or --quotas")
							}
							return "/admin/v1/tenants/" + url.PathEscape(args[0]), body, nil
						}
					}),
				proxyLeaf("suspend", "ID", "suspend a tenant (its requests get 403)", http.MethodPatch, tenantTable, statusBody("suspended")),
				proxyLeaf("resume", "ID", "resume a suspended tenant", http.MethodPatch, tenantTable, statusBody("active")),
				proxyLeaf("delete", "ID", "delete a tenant (a tombstone: its id is never reused) and revoke its keys",
					http.MethodDelete, plainTable, idPath("/admin/v1/tenants/")),
				proxyLeaf("purge", "ID", "delete a suspended or deleted tenant's queues at the brokers", http.MethodPost, plainTable,
					idPath("/admin/v1/tenants/", "/purge")),
			}},
			{name: "key", aliases: []string{"keys"}, summary: "API keys", subs: []*command{
				proxyLeaf("list", "TENANT", "list a tenant's keys", http.MethodGet, keysTable, idPath("/admin/v1/tenants/", "/keys")),
				proxyLeaf("create", "TENANT", "mint a key (its text is shown once)", http.MethodPost, keyTable,
					func(fs *flag.FlagSet) func([]string) (string, any, error) {
						name := fs.String("name", "", "a `NAME` for the key")
						scope := fs.String("scope", "", "`SCOPE`: read, write or admin")
						queues := fs.String("queues", "", "allowlist: queue names or prefixes ending in *, comma-separated")
						expires := fs.String("expires", "", "expiry `TIME` (RFC 3339)")
						return func(args []string) (string, any, error) {
							body := map[string]any{"name": *name, "scope": *scope}
							if *queues != "" {
								body["queues"] = strings.Split(*queues, ",")
							}
							if *expires != "" {
								body["expiresAt"] = *expires
							}
							return "/admin/v1/tenants/" + url.PathEscape(args[0]) + "/keys", body, nil
						}
					}),
				proxyLeaf("rotate", "KEY_ID", "mint the key's successor; the old one works for --grace", http.MethodPost, keyTable,
					func(fs *flag.FlagSet) func([]string) (string, any, error) {
						grace := fs.Duration("grace", 0, "how long the old key keeps working (default 24h, at most 168h)")
						return func(args []string) (string, any, error) {
							body := map[string]any{}
							if *grace > 0 {
								body["graceSeconds"] = int64(grace.Seconds())
							}
							return "/admin/v1/keys/" + url.PathEscape(args[0]) + "/rotate", body, nil
						}
					}),
				proxyLeaf("revoke", "KEY_ID", "revoke a key (every replica refuses it within about a second)", http.MethodDelete, keyTable,
					idPath("/admin/v1/keys/")),
			}},
			{name: "user", aliases: []string{"users"}, summary: "login users (operators and tenant users)", subs: []*command{
				proxyLeaf("list", "", "list users", http.MethodGet, usersTable, func(fs *flag.FlagSet) func([]string) (string, any, error) {
					t := fs.String("tenant", "", "only this `TENANT`'s users")
					return func([]string) (string, any, error) {
						q := url.Values{}
						if *t != "" {
							q.Set("tenant", *t)
						}
						return withQuery("/admin/v1/users", q), nil, nil
					}
				}),
				proxyLeaf("create", "NAME", "create a user; the password is read from stdin", http.MethodPost, userTable, nil),
				proxyLeaf("passwd", "NAME", "set a user's password (read from stdin); its sessions end", http.MethodPost, userTable, nil),
				proxyLeaf("delete", "NAME", "delete a user and its sessions", http.MethodDelete, plainTable, idPath("/admin/v1/users/")),
			}},
			proxyLeaf("usage", "", "metered usage: one tenant's series, or every tenant's totals", http.MethodGet, usageTable,
				func(fs *flag.FlagSet) func([]string) (string, any, error) {
					t := fs.String("tenant", "", "one `TENANT`'s series")
					from := fs.String("from", "", "start `TIME` (RFC 3339; default 24h before --to)")
					to := fs.String("to", "", "end `TIME`, exclusive (RFC 3339; default now)")
					g := fs.String("granularity", "", "minute, hour or day (default hour)")
					return func([]string) (string, any, error) {
						q := url.Values{}
						for k, v := range map[string]string{"from": *from, "to": *to, "granularity": *g} {
							if v != "" {
								q.Set(k, v)
							}
						}
						if *t != "" {
							return withQuery("/admin/v1/tenants/"+url.PathEscape(*t)+"/usage", q), nil, nil
						}
						return withQuery("/admin/v1/usage", q), nil, nil
					}
				}),
		},
	}
}

// proxyLeaf is one admin API call: setup registers the flags and returns what builds
// the path and body from the positional arguments; render shows the answer.
func proxyLeaf(name, args, summary, method string, render func(t *tw, raw json.RawMessage),
	setup func(fs *flag.FlagSet) func(args []string) (string, any, error)) *command {
	n := 0
	if args != "" {
		n = 1
	}
	return &command{name: name, args: args, minArgs: n, maxArgs: n, summary: summary,
		setup: func(fs *flag.FlagSet) runFunc {
			p := proxyFlags(fs)
			var build func([]string) (string, any, error)
			if setup != nil {
				build = setup(fs)
			} else {
				build = userBody(fs, name)
			}
			return func(ctx context.Context, a *app, pos []string) error {
				path, body, err := build(pos)
				if err != nil {
					return err
				}
				if pw, ok := body.(passwordBody); ok {
					if body, err = pw.read(a); err != nil {
						return err
					}
				}
				raw, err := p.call(ctx, a, method, path, body)
				if err != nil {
					return err
				}
				return a.show(raw, func(t *tw) { render(t, raw) })
			}
		}}
}

// passwordBody is a user body whose password is still to be read from stdin.
type passwordBody map[string]any

func (b passwordBody) read(a *app) (map[string]any, error) {
	pw, err := readSecretLine(a, "Password: ")
	if err != nil {
		return nil, err
	}
	b["password"] = pw
	return b, nil
}

// userBody builds user create and passwd, whose password comes from stdin.
func userBody(fs *flag.FlagSet, verb string) func([]string) (string, any, error) {
	role := ""
	t := ""
	if verb == "create" {
		fs.StringVar(&role, "role", "", "`ROLE`: admin, read-write or read-only")
		fs.StringVar(&t, "tenant", "", "the user's `TENANT` (none: an operator, global scope)")
	}
	return func(args []string) (string, any, error) {
		if verb == "passwd" {
			return "/admin/v1/users/" + url.PathEscape(args[0]) + "/password", passwordBody{}, nil
		}
		b := passwordBody{"username": args[0], "role": role}
		if t != "" {
			b["tenant"] = t
		}
		return "/admin/v1/users", b, nil
	}
}

func idPath(prefix string, suffix ...string) func(fs *flag.FlagSet) func([]string) (string, any, error) {
	return func(*flag.FlagSet) func([]string) (string, any, error) {
		return func(args []string) (string, any, error) {
			return prefix + url.PathEscape(args[0]) + strings.Join(suffix, ""), nil, nil
		}
	}
}

func statusBody(status string) func(fs *flag.FlagSet) func([]string) (string, any, error) {
	return func(*flag.FlagSet) func([]string) (string, any, error) {
		return func(args []string) (string, any, error) {
			return "/admin/v1/tenants/" + url.PathEscape(args[0]), map[string]string{"status": status}, nil
		}
	}
}

func rawOrNil(j *jsonFlag) any {
	if j.v == nil {
		return nil
	}
	return j.v
}

func withQuery(path string, q url.Values) string {
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

// The renderers of admin API answers.

type proxyTenant struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Status string `json:"status"`
	Limits struct {
		RequestsPerSecond float64 `json:"requestsPerSecond"`
		MessagesPerSecond float64 `json:"messagesPerSecond"`
		MaxConcurrent     int     `json:"maxConcurrent"`
	} `json:"limits"`
	Quotas struct {
		MaxMessages int64 `json:"maxMessages"`
		MaxQueues   int64 `json:"maxQueues"`
	} `json:"quotas"`
}

func (pt proxyTenant) row() []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	return []string{pt.ID, pt.Name, pt.Status, f(pt.Limits.RequestsPerSecond), f(pt.Limits.MessagesPerSecond),
		strconv.Itoa(pt.Limits.MaxConcurrent), strconv.FormatInt(pt.Quotas.MaxMessages, 10), strconv.FormatInt(pt.Quotas.MaxQueues, 10)}
}

var tenantHeader = []string{"ID", "NAME", "STATUS", "REQ/S", "MSG/S", "CONCURRENT", "MAX MESSAGES", "MAX QUEUES"}

func tenantsTable(t *tw, raw json.RawMessage) {
	var v struct {
		Tenants []proxyTenant `json:"tenants"`
	}
	_ = json.Unmarshal(raw, &v)
	rows := make([][]string, len(v.Tenants))
	for i, pt := range v.Tenants {
		rows[i] = pt.row()
	}
	t.table(tenantHeader, rows, "No tenants.")
}

func tenantTable(t *tw, raw json.RawMessage) {
	var pt proxyTenant
	_ = json.Unmarshal(raw, &pt)
	t.table(tenantHeader, [][]string{pt.row()}, "")
}

type proxyKey struct {
	ID        string   `json:"id"`
	Tenant    string   `json:"tenant"`
	Name      string   `json:"name"`
	Scope     string   `json:"scope"`
	Queues    []string `json:"queues"`
	ExpiresAt *string  `json:"expiresAt"`
	RevokedAt *string  `json:"revokedAt"`
	Key       string   `json:"key"`
}

func (k proxyKey) row() []string {
	state := "active"
	switch {
	case k.RevokedAt != nil:
		state = "revoked"
	case k.ExpiresAt != nil:
		state = "expires " + *k.ExpiresAt
	}
	return []string{k.ID, k.Tenant, orDash(k.Name), k.Scope, strings.Join(k.Queues, ","), state}
}

var keyHeader = []string{"ID", "TENANT", "NAME", "SCOPE", "QUEUES", "STATE"}

func keysTable(t *tw, raw json.RawMessage) {
	var v struct {
		Keys []proxyKey `json:"keys"`
	}
	_ = json.Unmarshal(raw, &v)
	rows := make([][]string, len(v.Keys))
	for i, k := range v.Keys {
		rows[i] = k.row()
	}
	t.table(keyHeader, rows, "No keys.")
}

func keyTable(t *tw, raw json.RawMessage) {
	var k proxyKey
	_ = json.Unmarshal(raw, &k)
	t.table(keyHeader, [][]string{k.row()}, "")
	if k.Key != "" {
		t.line("\nKey (shown once, store it now):\n%s", k.Key)
	}
}

type proxyUser struct {
	Username string  `json:"username"`
	Role     string  `json:"role"`
	Tenant   *string `json:"tenant"`
}

func (u proxyUser) row() []string {
	t := "(operator)"
	if u.Tenant != nil {
		t = *u.Tenant
	}
	return []string{u.Username, u.Role, t}
}

func usersTable(t *tw, raw json.RawMessage) {
	var v struct {
		Users []proxyUser `json:"users"`
	}
	_ = json.Unmarshal(raw, &v)
	rows := make([][]string, len(v.Users))
	for i, u := range v.Users {
		rows[i] = u.row()
	}
	t.table([]string{"USERNAME", "ROLE", "TENANT"}, rows, "No users.")
}

func userTable(t *tw, raw json.RawMessage) {
	var u proxyUser
	_ = json.Unmarshal(raw, &u)
	t.table([]string{"USERNAME", "ROLE", "TENANT"}, [][]string{u.row()}, "")
}

// plainTable shows a small object's fields as key: value lines.
func plainTable(t *tw, raw json.RawMessage) {
	var v map[string]any
	_ = json.Unmarshal(raw, &v)
	pairs := make([][2]string, 0, len(v))
	for _, k := range slices.Sorted(maps.Keys(v)) {
		pairs = append(pairs, [2]string{k + ":", fmt.Sprint(v[k])})
	}
	t.kv(pairs)
}

type proxyUsage struct {
	Requests      int64 `json:"requests"`
	MessagesIn    int64 `json:"messagesIn"`
	MessagesOut   int64 `json:"messagesOut"`
	Acks          int64 `json:"acks"`
	BytesIn       int64 `json:"bytesIn"`
	BytesOut      int64 `json:"bytesOut"`
	RejectedRate  int64 `json:"rejectedRate"`
	RejectedQuota int64 `json:"rejectedQuota"`
}

func (u proxyUsage) row(tenant, start string) []string {
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	return []string{tenant, start, n(u.Requests), n(u.MessagesIn), n(u.MessagesOut), n(u.Acks), n(u.BytesIn), n(u.BytesOut),
		n(u.RejectedRate + u.RejectedQuota)}
}

func usageTable(t *tw, raw json.RawMessage) {
	var v struct {
		Tenant string `json:"tenant"`
		Series []struct {
			Start string `json:"start"`
			proxyUsage
		} `json:"series"`
		Totals  proxyUsage `json:"totals"`
		Tenants []struct {
			Tenant string     `json:"tenant"`
			Totals proxyUsage `json:"totals"`
		} `json:"tenants"`
	}
	_ = json.Unmarshal(raw, &v)
	var rows [][]string
	if v.Tenant != "" {
		for _, p := range v.Series {
			rows = append(rows, p.row(v.Tenant, p.Start))
		}
		rows = append(rows, v.Totals.row(v.Tenant, "total"))
	}
	for _, x := range v.Tenants {
		rows = append(rows, x.Totals.row(x.Tenant, "total"))
	}
	t.table([]string{"TENANT", "START", "REQUESTS", "MESSAGES IN", "MESSAGES OUT", "ACKS", "BYTES IN", "BYTES OUT", "REJECTED"},
		rows, "No usage in that span.")
}
