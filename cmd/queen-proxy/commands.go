package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/proxy/admin"
	"github.com/queenmq/queen/internal/proxy/manage"
	"github.com/queenmq/queen/internal/proxy/tenant"
)

// command registers its flags on e.fs and returns what runs once they are parsed.
type command func(e *cmdEnv) func(stdin io.Reader) error

// commands is every management command, by "group verb".
var commands = map[string]command{
	"tenant create":  tenantCreate,
	"tenant list":    tenantList,
	"tenant show":    tenantShow,
	"tenant update":  tenantUpdate,
	"tenant suspend": tenantStatus(tenant.StatusSuspended),
	"tenant resume":  tenantStatus(tenant.StatusActive),
	"tenant delete":  tenantDelete,
	"tenant purge":   tenantPurge,
	"key create":     keyCreate,
	"key list":       keyList,
	"key rotate":     keyRotate,
	"key revoke":     keyRevoke,
	"user create":    userCreate,
	"user list":      userList,
	"user delete":    userDelete,
	"user passwd":    userPasswd,
	"usage ":         usageReport,
}

// rawJSON is a flag holding a JSON object, nil when not given.
func rawJSON(e *cmdEnv, name, usage string) *json.RawMessage {
	var v json.RawMessage
	e.fs.Func(name, usage, func(s string) error {
		if !json.Valid([]byte(s)) {
			return fmt.Errorf("--%s: not JSON", name)
		}
		v = json.RawMessage(s)
		return nil
	})
	return &v
}

func nilIfEmpty(r *json.RawMessage) json.RawMessage {
	if len(*r) == 0 {
		return nil
	}
	return *r
}

func tenantRows(ts ...*tenant.Tenant) func(io.Writer) {
	return func(w io.Writer) {
		for _, t := range ts {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%g\t%g\t%d\t%d\n", t.ID, t.Name, t.Status, t.Cell, t.Limits.RequestsPerSecond,
				t.Limits.MessagesPerSecond, t.Quotas.MaxMessages, t.Quotas.MaxQueues)
		}
	}
}

const tenantHeader = "ID\tNAME\tSTATUS\tCELL\tREQ/S\tMSG/S\tMAX MESSAGES\tMAX QUEUES"

func tenantCreate(e *cmdEnv) func(io.Reader) error {
	name := e.fs.String("name", "", "display name (default: the id)")
	limits := rawJSON(e, "limits", "JSON object of limits")
	quotas := rawJSON(e, "quotas", "JSON object of quotas")
	cell := e.fs.String("cell", "", "the tenant's cell (default: the placement policy's pick)")
	return func(io.Reader) error {
		if err := e.want("ID"); err != nil {
			return err
		}
		t, err := e.m.CreateTenant(e.ctx, manage.TenantSpec{ID: e.args[0], Name: *name, Limits: nilIfEmpty(limits),
			Quotas: nilIfEmpty(quotas), Cell: *cell}, e.actor)
		if err != nil {
			return err
		}
		return e.print(admin.TenantBody(t, nil), tenantHeader, tenantRows(t))
	}
}

func tenantList(e *cmdEnv) func(io.Reader) error {
	status := e.fs.String("status", "", "active, suspended or deleted (default: all but deleted)")
	limit := e.fs.Int("limit", manage.DefaultPageSize, "page size (1..1000)")
	offset := e.fs.Int("offset", 0, "first row")
	return func(io.Reader) error {
		if err := e.want(); err != nil {
			return err
		}
		ts, total, err := e.m.ListTenants(e.ctx, *status, *limit, *offset)
		if err != nil {
			return err
		}
		body := api.ProxyTenantList{Tenants: admin.List(ts, func(t *tenant.Tenant) api.ProxyTenant { return admin.TenantBody(t, nil) }), Total: total}
		return e.print(body, tenantHeader, tenantRows(ts...))
	}
}

func tenantShow(e *cmdEnv) func(io.Reader) error {
	return func(io.Reader) error {
		if err := e.want("ID"); err != nil {
			return err
		}
		t, err := e.m.Tenant(e.ctx, e.args[0])
		if err != nil {
			return err
		}
		return e.print(admin.TenantBody(t, nil), "", nil)
	}
}

func tenantUpdate(e *cmdEnv) func(io.Reader) error {
	var ch manage.TenantChange
	e.fs.Func("name", "display name", func(s string) error { ch.Name = &s; return nil })
	limits := rawJSON(e, "limits", "JSON object merged over the limits (null: the defaults)")
	quotas := rawJSON(e, "quotas", "JSON object merged over the quotas (null: the defaults)")
	return func(io.Reader) error {
		if err := e.want("ID"); err != nil {
			return err
		}
		ch.Limits, ch.Quotas = nilIfEmpty(limits), nilIfEmpty(quotas)
		if ch.Name == nil && ch.Limits == nil && ch.Quotas == nil {
			return usagef("give --name, --limits or --quotas")
		}
		t, err := e.m.UpdateTenant(e.ctx, e.args[0], ch, e.actor)
		if err != nil {
			return err
		}
		return e.print(admin.TenantBody(t, nil), "", nil)
	}
}

func tenantStatus(st tenant.Status) command {
	return func(e *cmdEnv) func(io.Reader) error {
		return func(io.Reader) error {
			if err := e.want("ID"); err != nil {
				return err
			}
			t, err := e.m.SetStatus(e.ctx, e.args[0], st, e.actor)
			if err != nil {
				return err
			}
			return e.print(admin.TenantBody(t, nil), tenantHeader, tenantRows(t))
		}
	}
}

func tenantDelete(e *cmdEnv) func(io.Reader) error {
	return func(io.Reader) error {
		if err := e.want("ID"); err != nil {
			return err
		}
		n, err := e.m.DeleteTenant(e.ctx, e.args[0], e.actor)
		if err != nil {
			return err
		}
		return e.print(api.ProxyTenantDeleted{Deleted: true, KeysRevoked: n}, "DELETED\tKEYS REVOKED", func(w io.Writer) {
			fmt.Fprintf(w, "%s\t%d\n", e.args[0], n)
		})
	}
}

func tenantPurge(e *cmdEnv) func(io.Reader) error {
	e.brokers = true
	return func(io.Reader) error {
		if err := e.want("ID"); err != nil {
			return err
		}
		id := e.args[0]
		n, err := e.m.PurgeTenant(e.ctx, id, e.purge, e.actor)
		if err != nil {
			return err
		}
		return e.print(api.ProxyPurged{QueuesDeleted: n}, "TENANT\tQUEUES DELETED", func(w io.Writer) {
			fmt.Fprintf(w, "%s\t%d\n", id, n)
		})
	}
}

func keyRows(ks ...*tenant.Key) func(io.Writer) {
	return func(w io.Writer) {
		for _, k := range ks {
			state := "active"
			switch {
			case k.RevokedAt != nil:
				state = "revoked"
			case k.ExpiresAt != nil && !k.UsableAt(time.Now()):
				state = "expired"
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Tenant, k.Name, k.Scope, strings.Join(k.Queues, ","), state)
		}
	}
}

const keyHeader = "ID\tTENANT\tNAME\tSCOPE\tQUEUES\tSTATE"

// printNewKey shows a new key's text once, on its own line after the table.
func printNewKey(e *cmdEnv, k *manage.NewKey) error {
	if e.json {
		return e.print(admin.NewKeyBody(k), "", nil)
	}
	if err := e.print(admin.NewKeyBody(k), keyHeader, keyRows(k.Key)); err != nil {
		return err
	}
	_, err := fmt.Fprintf(e.out, "\nkey (shown once, store it now):\n%s\n", k.Secret)
	return err
}

func keyCreate(e *cmdEnv) func(io.Reader) error {
	var spec manage.KeySpec
	e.fs.StringVar(&spec.Name, "name", "", "a name for the key")
	e.fs.StringVar(&spec.Scope, "scope", "", "push, read, write or admin")
	e.fs.Func("queues", "allowlist: queue names or prefixes ending in *, comma-separated", func(s string) error {
		spec.Queues = strings.Split(s, ",")
		return nil
	})
	e.fs.Func("expires", "expiry time (RFC 3339)", func(s string) error {
		t, err := time.Parse(time.RFC3339, s)
		spec.ExpiresAt = &t
		return err
	})
	return func(io.Reader) error {
		if err := e.want("TENANT"); err != nil {
			return err
		}
		k, err := e.m.CreateKey(e.ctx, e.args[0], spec, e.actor)
		if err != nil {
			return err
		}
		return printNewKey(e, k)
	}
}

func keyList(e *cmdEnv) func(io.Reader) error {
	return func(io.Reader) error {
		if err := e.want("TENANT"); err != nil {
			return err
		}
		ks, err := e.m.Keys(e.ctx, e.args[0])
		if err != nil {
			return err
		}
		return e.print(api.ProxyKeyList{Keys: admin.List(ks, admin.KeyBody)}, keyHeader, keyRows(ks...))
	}
}

func keyRotate(e *cmdEnv) func(io.Reader) error {
	var grace *time.Duration
	e.fs.Func("grace", "how long the old key keeps working (default 24h, at most 168h)", func(s string) error {
		d, err := time.ParseDuration(s)
		grace = &d
		return err
	})
	return func(io.Reader) error {
		if err := e.want("KEY_ID"); err != nil {
			return err
		}
		k, err := e.m.RotateKey(e.ctx, e.args[0], grace, e.actor)
		if err != nil {
			return err
		}
		return printNewKey(e, k)
	}
}

func keyRevoke(e *cmdEnv) func(io.Reader) error {
	return func(io.Reader) error {
		if err := e.want("KEY_ID"); err != nil {
			return err
		}
		k, err := e.m.RevokeKey(e.ctx, e.args[0], e.actor)
		if err != nil {
			return err
		}
		return e.print(admin.KeyBody(k), keyHeader, keyRows(k))
	}
}

func userRows(us ...*tenant.User) func(io.Writer) {
	return func(w io.Writer) {
		for _, u := range us {
			t := "(operator)"
			if u.Tenant != nil {
				t = *u.Tenant
			}
			fmt.Fprintf(w, "%s\t%s\t%s\n", u.Username, u.Role, t)
		}
	}
}

const userHeader = "USERNAME\tROLE\tTENANT"

func userCreate(e *cmdEnv) func(io.Reader) error {
	var spec manage.UserSpec
	e.fs.StringVar(&spec.Role, "role", "", "admin, read-write or read-only")
	e.fs.Func("tenant", "the user's tenant (none: an operator, global scope)", func(s string) error { spec.Tenant = &s; return nil })
	return func(stdin io.Reader) error {
		if err := e.want("NAME"); err != nil {
			return err
		}
		pw, err := readPassword(stdin)
		if err != nil {
			return err
		}
		spec.Username, spec.Password = e.args[0], pw
		u, err := e.m.CreateUser(e.ctx, spec, e.actor)
		if err != nil {
			return err
		}
		return e.print(admin.UserBody(u), userHeader, userRows(u))
	}
}

func userList(e *cmdEnv) func(io.Reader) error {
	tenantID := e.fs.String("tenant", "", "only this tenant's users")
	return func(io.Reader) error {
		if err := e.want(); err != nil {
			return err
		}
		us, err := e.m.Users(e.ctx, *tenantID)
		if err != nil {
			return err
		}
		return e.print(api.ProxyUserList{Users: admin.List(us, admin.UserBody)}, userHeader, userRows(us...))
	}
}

func userDelete(e *cmdEnv) func(io.Reader) error {
	return func(io.Reader) error {
		if err := e.want("NAME"); err != nil {
			return err
		}
		if err := e.m.DeleteUser(e.ctx, e.args[0], e.actor); err != nil {
			return err
		}
		return e.print(api.ProxyUserDeleted{Deleted: true}, "DELETED", func(w io.Writer) { fmt.Fprintln(w, e.args[0]) })
	}
}

func userPasswd(e *cmdEnv) func(io.Reader) error {
	return func(stdin io.Reader) error {
		if err := e.want("NAME"); err != nil {
			return err
		}
		pw, err := readPassword(stdin)
		if err != nil {
			return err
		}
		u, err := e.m.SetPassword(e.ctx, e.args[0], pw, e.actor)
		if err != nil {
			return err
		}
		return e.print(admin.UserBody(u), userHeader, userRows(u))
	}
}

func usageReport(e *cmdEnv) func(io.Reader) error {
	tenantID := e.fs.String("tenant", "", "one tenant's series (default: every tenant's totals)")
	from := e.fs.String("from", "", "start (RFC 3339; default: 24h before --to)")
	to := e.fs.String("to", "", "end, exclusive (RFC 3339; default: now)")
	gran := e.fs.String("granularity", "", "minute, hour or day (default hour)")
	return func(io.Reader) error {
		if err := e.want(); err != nil {
			return err
		}
		sp, err := manage.ParseUsageSpan(*from, *to, *gran, time.Now())
		if err != nil {
			return err
		}
		const header = "TENANT\tSTART\tREQUESTS\tMESSAGES IN\tMESSAGES OUT\tACKS\tBYTES IN\tBYTES OUT\tREJECTED"
		row := func(w io.Writer, t, start string, u tenant.Usage) {
			fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", t, start, u.Requests, u.MessagesIn, u.MessagesOut,
				u.Acks, u.BytesIn, u.BytesOut, u.RejectedRate+u.RejectedQuota)
		}
		if *tenantID != "" {
			rep, err := e.m.TenantUsage(e.ctx, *tenantID, sp)
			if err != nil {
				return err
			}
			return e.print(admin.ReportBody(rep), header, func(w io.Writer) {
				for _, p := range rep.Series {
					row(w, rep.Tenant, p.Start.Format(time.RFC3339), p.Usage)
				}
				row(w, rep.Tenant, "total", rep.Totals)
			})
		}
		tot, err := e.m.AllUsage(e.ctx, sp)
		if err != nil {
			return err
		}
		return e.print(admin.TotalsBody(tot), header, func(w io.Writer) {
			for _, t := range tot.Tenants {
				row(w, t.Tenant, "total", t.Totals)
			}
		})
	}
}
