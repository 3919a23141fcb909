package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/queenmq/queen/internal/api"
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
		name: "proxy", summary: "manage a queen-proxy: tenants, limits, quotas, keys, users, usage, cells, moves",
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
					cell := fs.String("cell", "", "the tenant's `CELL` (default: the placement policy's pick)")
					return func(args []string) (string, any, error) {
						return "/admin/v1/tenants", api.ProxyTenantCreate{ID: args[0], Name: *name, Limits: limits.v, Quotas: quotas.v,
							Cell: *cell}, nil
					}
				}),
				proxyLeaf("update", "ID", "change a tenant's name, limits or quotas (JSON null resets them)", http.MethodPatch, tenantTable,
					func(fs *flag.FlagSet) func([]string) (string, any, error) {
						name := fs.String("name", "", "display `NAME`")
						limits, quotas := &jsonFlag{}, &jsonFlag{}
						fs.Var(limits, "limits", "`JSON` object merged over the limits")
						fs.Var(quotas, "quotas", "`JSON` object merged over the quotas")
						return func(args []string) (string, any, error) {
							body := api.ProxyTenantChange{Limits: limits.v, Quotas: quotas.v}
							if *name != "" {
								body.Name = name
							}
							if body.Name == nil && body.Limits == nil && body.Quotas == nil {
								return "", nil, usagef("give --name, --limits or --quotas")
							}
							return "/admin/v1/tenants/" + url.PathEscape(args[0]), body, nil
						}
					}),
				proxyLeaf("suspend", "ID", "suspend a tenant (its requests get 403)", http.MethodPatch, tenantTable, statusBody("suspended")),
				proxyLeaf("resume", "ID", "resume a suspended tenant", http.MethodPatch, tenantTable, statusBody("active")),
				proxyLeaf("delete", "ID", "delete a tenant (a tombstone: its id is never reused) and revoke its keys",
					http.MethodDelete, tenantDeletedTable, idPath("/admin/v1/tenants/")),
				proxyLeaf("purge", "ID", "delete a suspended or deleted tenant's queues at the brokers", http.MethodPost, purgedTable,
					idPath("/admin/v1/tenants/", "/purge")),
				tenantMoveCommand(),
			}},
			proxyCellCommand(),
			proxyMoveCommand(),
			{name: "key", aliases: []string{"keys"}, summary: "API keys", subs: []*command{
				proxyLeaf("list", "TENANT", "list a tenant's keys", http.MethodGet, keysTable, idPath("/admin/v1/tenants/", "/keys")),
				proxyLeaf("create", "TENANT", "mint a key (its text is shown once)", http.MethodPost, keyTable,
					func(fs *flag.FlagSet) func([]string) (string, any, error) {
						name := fs.String("name", "", "a `NAME` for the key")
						scope := fs.String("scope", "", "`SCOPE`: push, read, write or admin")
						queues := fs.String("queues", "", "allowlist: queue names or prefixes ending in *, comma-separated")
						expires := fs.String("expires", "", "expiry `TIME` (RFC 3339)")
						return func(args []string) (string, any, error) {
							body := api.ProxyKeyCreate{Name: *name, Scope: *scope}
							if *queues != "" {
								body.Queues = strings.Split(*queues, ",")
							}
							if *expires != "" {
								at, err := time.Parse(time.RFC3339, *expires)
								if err != nil {
									return "", nil, usagef("--expires %q is not an RFC 3339 time", *expires)
								}
								body.ExpiresAt = &at
							}
							return "/admin/v1/tenants/" + url.PathEscape(args[0]) + "/keys", body, nil
						}
					}),
				proxyLeaf("rotate", "KEY_ID", "mint the key's successor; the old one works for --grace", http.MethodPost, keyTable,
					func(fs *flag.FlagSet) func([]string) (string, any, error) {
						grace := fs.Duration("grace", 0, "how long the old key keeps working (default 24h, at most 168h)")
						return func(args []string) (string, any, error) {
							body := api.ProxyKeyRotate{}
							if *grace > 0 {
								s := int64(grace.Seconds())
								body.GraceSeconds = &s
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
				proxyLeaf("delete", "NAME", "delete a user and its sessions", http.MethodDelete, userDeletedTable, idPath("/admin/v1/users/")),
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
				if pw, ok := body.(*passwordBody); ok {
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

// passwordBody is a user body whose password is still to be read from stdin: a new
// user, or (user nil) a password change.
type passwordBody struct{ user *api.ProxyUserCreate }

func (b *passwordBody) read(a *app) (any, error) {
	pw, err := readSecretLine(a, "Password: ")
	if err != nil {
		return nil, err
	}
	if b.user == nil {
		return api.ProxyPassword{Password: pw}, nil
	}
	b.user.Password = pw
	return b.user, nil
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
			return "/admin/v1/users/" + url.PathEscape(args[0]) + "/password", &passwordBody{}, nil
		}
		u := &api.ProxyUserCreate{Username: args[0], Role: role}
		if t != "" {
			u.Tenant = &t
		}
		return "/admin/v1/users", &passwordBody{user: u}, nil
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
			return "/admin/v1/tenants/" + url.PathEscape(args[0]), api.ProxyTenantChange{Status: &status}, nil
		}
	}
}

func withQuery(path string, q url.Values) string {
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

// The renderers of admin API answers.

func tenantRow(pt api.ProxyTenant) []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	cell := orDash(pt.Cell)
	if pt.Move != nil {
		cell += " -> " + pt.Move.To
	}
	return []string{pt.ID, pt.Name, pt.Status, cell, f(pt.Limits.RequestsPerSecond), f(pt.Limits.MessagesPerSecond),
		strconv.Itoa(pt.Limits.MaxConcurrent), strconv.FormatInt(pt.Quotas.MaxMessages, 10), strconv.FormatInt(pt.Quotas.MaxQueues, 10)}
}

var tenantHeader = []string{"ID", "NAME", "STATUS", "CELL", "REQ/S", "MSG/S", "CONCURRENT", "MAX MESSAGES", "MAX QUEUES"}

// listTable prints the items that items picks out of raw (decoded as an L), a row
// each, under header; empty when there are none.
func listTable[L, T any](t *tw, raw json.RawMessage, header []string, items func(L) []T, row func(T) []string, empty string) {
	var v L
	_ = json.Unmarshal(raw, &v)
	list := items(v)
	rows := make([][]string, len(list))
	for i, x := range list {
		rows[i] = row(x)
	}
	t.table(header, rows, empty)
}

// itemTable prints raw, decoded as a T, as one row under header.
func itemTable[T any](t *tw, raw json.RawMessage, header []string, row func(T) []string) {
	var x T
	_ = json.Unmarshal(raw, &x)
	t.table(header, [][]string{row(x)}, "")
}

func tenantsTable(t *tw, raw json.RawMessage) {
	listTable(t, raw, tenantHeader, func(v api.ProxyTenantList) []api.ProxyTenant { return v.Tenants }, tenantRow, "No tenants.")
}

func tenantTable(t *tw, raw json.RawMessage) { itemTable(t, raw, tenantHeader, tenantRow) }

func tenantDeletedTable(t *tw, raw json.RawMessage) {
	var v api.ProxyTenantDeleted
	_ = json.Unmarshal(raw, &v)
	t.kv([][2]string{{"deleted", strconv.FormatBool(v.Deleted)}, {"keysRevoked", strconv.Itoa(v.KeysRevoked)}})
}

func purgedTable(t *tw, raw json.RawMessage) {
	var v api.ProxyPurged
	_ = json.Unmarshal(raw, &v)
	t.kv([][2]string{{"queuesDeleted", strconv.Itoa(v.QueuesDeleted)}})
}

func keyRow(k api.ProxyKey) []string {
	state := "active"
	switch {
	case k.RevokedAt != nil:
		state = "revoked"
	case k.ExpiresAt != nil:
		state = "expires " + k.ExpiresAt.Format(time.RFC3339Nano)
	}
	return []string{k.ID, k.Tenant, orDash(k.Name), k.Scope, strings.Join(k.Queues, ","), state}
}

var keyHeader = []string{"ID", "TENANT", "NAME", "SCOPE", "QUEUES", "STATE"}

func keysTable(t *tw, raw json.RawMessage) {
	listTable(t, raw, keyHeader, func(v api.ProxyKeyList) []api.ProxyKey { return v.Keys }, keyRow, "No keys.")
}

func keyTable(t *tw, raw json.RawMessage) {
	var k api.ProxyNewKey
	_ = json.Unmarshal(raw, &k)
	t.table(keyHeader, [][]string{keyRow(k.ProxyKey)}, "")
	if k.Key != "" {
		t.line("\nKey (shown once, store it now):\n%s", k.Key)
	}
}

var userHeader = []string{"USERNAME", "ROLE", "TENANT"}

func userRow(u api.ProxyUser) []string {
	t := "(operator)"
	if u.Tenant != nil {
		t = *u.Tenant
	}
	return []string{u.Username, u.Role, t}
}

func usersTable(t *tw, raw json.RawMessage) {
	listTable(t, raw, userHeader, func(v api.ProxyUserList) []api.ProxyUser { return v.Users }, userRow, "No users.")
}

func userTable(t *tw, raw json.RawMessage) { itemTable(t, raw, userHeader, userRow) }

func userDeletedTable(t *tw, raw json.RawMessage) {
	var v api.ProxyUserDeleted
	_ = json.Unmarshal(raw, &v)
	t.kv([][2]string{{"deleted", strconv.FormatBool(v.Deleted)}})
}

func usageRow(u api.ProxyUsage, tenant, start string) []string {
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	return []string{tenant, start, n(u.Requests), n(u.MessagesIn), n(u.MessagesOut), n(u.Acks), n(u.BytesIn), n(u.BytesOut),
		n(u.RejectedRate + u.RejectedQuota)}
}

// usageTable shows either answer: one tenant's series (api.ProxyUsageReport) or
// every tenant's totals (api.ProxyUsageTotals).
func usageTable(t *tw, raw json.RawMessage) {
	var one api.ProxyUsageReport
	var all api.ProxyUsageTotals
	_ = json.Unmarshal(raw, &one)
	_ = json.Unmarshal(raw, &all)
	var rows [][]string
	if one.Tenant != "" {
		for _, p := range one.Series {
			rows = append(rows, usageRow(p.ProxyUsage, one.Tenant, p.Start.Format(time.RFC3339Nano)))
		}
		rows = append(rows, usageRow(one.Totals, one.Tenant, "total"))
	}
	for _, x := range all.Tenants {
		rows = append(rows, usageRow(x.Totals, x.Tenant, "total"))
	}
	t.table([]string{"TENANT", "START", "REQUESTS", "MESSAGES IN", "MESSAGES OUT", "ACKS", "BYTES IN", "BYTES OUT", "REJECTED"},
		rows, "No usage in that span.")
}
