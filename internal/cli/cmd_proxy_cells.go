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
)

// proxyCellCommand is `queenctl proxy cell`: the cells (queen deployments) tenants
// live in.
func proxyCellCommand() *command {
	return &command{name: "cell", aliases: []string{"cells"}, summary: "cells: the queen deployments tenants live in", subs: []*command{
		proxyLeaf("list", "", "list cells with their tenants, storage, rates and headroom", http.MethodGet, cellsTable,
			func(*flag.FlagSet) func([]string) (string, any, error) {
				return func([]string) (string, any, error) { return "/admin/v1/cells", nil, nil }
			}),
		withAliases(proxyLeaf("show", "NAME", "show a cell", http.MethodGet, cellTable, idPath("/admin/v1/cells/")), "get"),
		proxyLeaf("create", "NAME", "register a cell (1 to 3 broker URLs)", http.MethodPost, cellTable,
			func(fs *flag.FlagSet) func([]string) (string, any, error) {
				ch := cellFlags(fs)
				return func(args []string) (string, any, error) {
					if ch.Upstreams == nil {
						return "", nil, usagef("give --upstreams")
					}
					return "/admin/v1/cells", api.ProxyCellCreate{Name: args[0], Upstreams: ch.Upstreams, CapacityBytes: ch.CapacityBytes,
						CapacityMessagesPerSecond: ch.CapacityMessagesPerSecond, Closed: ch.Closed}, nil
				}
			}),
		proxyLeaf("update", "NAME", "change a cell's brokers, capacities or closed flag", http.MethodPatch, cellTable,
			func(fs *flag.FlagSet) func([]string) (string, any, error) {
				ch := cellFlags(fs)
				return func(args []string) (string, any, error) {
					if ch.Upstreams == nil && ch.CapacityBytes == nil && ch.CapacityMessagesPerSecond == nil && ch.Closed == nil {
						return "", nil, usagef("give --upstreams, --capacity-bytes, --capacity-rate or --closed")
					}
					return "/admin/v1/cells/" + url.PathEscape(args[0]), *ch, nil
				}
			}),
		proxyLeaf("close", "NAME", "close a cell: the placement policy puts no new tenant there", http.MethodPatch, cellTable, closedBody(true)),
		proxyLeaf("open", "NAME", "open a closed cell again", http.MethodPatch, cellTable, closedBody(false)),
		proxyLeaf("delete", "NAME", "delete a cell no tenant lives in and no live move names", http.MethodDelete, cellDeletedTable,
			idPath("/admin/v1/cells/")),
	}}
}

// proxyMoveCommand is `queenctl proxy move`: moves of tenants between cells.
func proxyMoveCommand() *command {
	return &command{name: "move", aliases: []string{"moves"}, summary: "moves of tenants between cells", subs: []*command{
		proxyLeaf("list", "", "list moves, latest first", http.MethodGet, movesTable, func(fs *flag.FlagSet) func([]string) (string, any, error) {
			t := fs.String("tenant", "", "only this `TENANT`'s moves")
			limit := fs.Int("limit", 0, "at most `N` moves (default 100)")
			return func([]string) (string, any, error) {
				q := url.Values{}
				if *t != "" {
					q.Set("tenant", *t)
				}
				if *limit > 0 {
					q.Set("limit", strconv.Itoa(*limit))
				}
				return withQuery("/admin/v1/moves", q), nil, nil
			}
		}),
		withAliases(proxyLeaf("show", "ID", "show a move", http.MethodGet, moveTable, idPath("/admin/v1/moves/")), "get"),
		proxyLeaf("cancel", "ID", "cancel a move before its switch (its mover undoes it)", http.MethodPost, moveTable,
			idPath("/admin/v1/moves/", "/cancel")),
	}}
}

// tenantMoveCommand is `queenctl proxy tenant move ID --cell X [--wait]`.
func tenantMoveCommand() *command {
	return &command{name: "move", args: "ID", minArgs: 1, maxArgs: 1,
		summary: "move a tenant to another cell, live (--wait: until the move ends)",
		setup: func(fs *flag.FlagSet) runFunc {
			p := proxyFlags(fs)
			cell := fs.String("cell", "", "the target `CELL`")
			wait := fs.Bool("wait", false, "wait until the move is done or failed (exit 1 when it failed)")
			poll := fs.Duration("poll", time.Second, "how often --wait asks")
			return func(ctx context.Context, a *app, pos []string) error {
				if *cell == "" {
					return usagef("give --cell")
				}
				raw, err := p.call(ctx, a, http.MethodPost, "/admin/v1/tenants/"+url.PathEscape(pos[0])+"/move", api.ProxyMoveCreate{Cell: *cell})
				if err != nil {
					return err
				}
				if *wait {
					if raw, err = waitMove(ctx, a, p, raw, *poll); err != nil {
						return err
					}
				}
				if err := a.show(raw, func(t *tw) { moveTable(t, raw) }); err != nil {
					return err
				}
				var m api.ProxyMove
				_ = json.Unmarshal(raw, &m)
				if *wait && m.Phase != "done" {
					return &codeError{code: ExitFailure, msg: fmt.Sprintf("move %d of %s ended %s: %s", m.ID, m.Tenant, m.Phase, deref(m.Error))}
				}
				return nil
			}
		}}
}

// waitMove polls the move of raw every poll until it has finished, and returns its
// last answer.
func waitMove(ctx context.Context, a *app, p *proxyAdmin, raw json.RawMessage, poll time.Duration) (json.RawMessage, error) {
	var m api.ProxyMove
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	t := time.NewTicker(max(poll, 10*time.Millisecond))
	defer t.Stop()
	for m.FinishedAt == nil {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
		var err error
		if raw, err = p.call(ctx, a, http.MethodGet, "/admin/v1/moves/"+strconv.FormatInt(m.ID, 10), nil); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
	}
	return raw, nil
}

func withAliases(c *command, aliases ...string) *command {
	c.aliases = aliases
	return c
}

// cellFlags registers the flags of cell create and update; unset flags stay nil.
func cellFlags(fs *flag.FlagSet) *api.ProxyCellChange {
	ch := &api.ProxyCellChange{}
	fs.Func("upstreams", "the cell's broker `URLS`, comma-separated (1 to 3)", func(s string) error {
		ch.Upstreams = strings.Split(s, ",")
		return nil
	})
	fs.Func("capacity-bytes", "`BYTES` the cell should store (0: not set)", func(s string) error {
		n, err := strconv.ParseInt(s, 10, 64)
		ch.CapacityBytes = &n
		return err
	})
	fs.Func("capacity-rate", "messages per second (in + out) the cell should carry, `N` (0: not set)", func(s string) error {
		f, err := strconv.ParseFloat(s, 64)
		ch.CapacityMessagesPerSecond = &f
		return err
	})
	fs.Func("closed", "`BOOL`: true places no new tenant in the cell", func(s string) error {
		b, err := strconv.ParseBool(s)
		ch.Closed = &b
		return err
	})
	return ch
}

func closedBody(closed bool) func(fs *flag.FlagSet) func([]string) (string, any, error) {
	return func(*flag.FlagSet) func([]string) (string, any, error) {
		return func(args []string) (string, any, error) {
			return "/admin/v1/cells/" + url.PathEscape(args[0]), api.ProxyCellChange{Closed: &closed}, nil
		}
	}
}

var cellHeader = []string{"NAME", "UPSTREAMS", "CLOSED", "TENANTS", "STORED BYTES", "MSG/S", "HEADROOM"}

func cellRow(c api.ProxyCell) []string {
	ups := make([]string, len(c.Upstreams))
	for i, u := range c.Upstreams {
		ups[i] = u.URL + " (" + u.State + ")"
	}
	headroom := "-"
	if c.Headroom != nil {
		headroom = strconv.FormatFloat(*c.Headroom, 'f', 2, 64)
	}
	return []string{c.Name, strings.Join(ups, ", "), strconv.FormatBool(c.Closed), strconv.Itoa(c.Tenants),
		strconv.FormatInt(c.StoredBytes, 10), strconv.FormatFloat(c.PushRate+c.PopRate, 'f', -1, 64), headroom}
}

func cellsTable(t *tw, raw json.RawMessage) {
	listTable(t, raw, cellHeader, func(v api.ProxyCellList) []api.ProxyCell { return v.Cells }, cellRow, "No cells.")
}

func cellTable(t *tw, raw json.RawMessage) { itemTable(t, raw, cellHeader, cellRow) }

func cellDeletedTable(t *tw, raw json.RawMessage) {
	var v api.ProxyCellDeleted
	_ = json.Unmarshal(raw, &v)
	t.kv([][2]string{{"deleted", strconv.FormatBool(v.Deleted)}})
}

var moveHeader = []string{"ID", "TENANT", "FROM", "TO", "PHASE", "PAUSE MS", "ERROR"}

func moveRow(m api.ProxyMove) []string {
	pause := "-"
	if m.PauseMs != nil {
		pause = strconv.FormatFloat(*m.PauseMs, 'f', 1, 64)
	}
	phase := m.Phase
	if m.CancelRequested && m.FinishedAt == nil {
		phase += " (cancelling)"
	}
	return []string{strconv.FormatInt(m.ID, 10), m.Tenant, m.From, m.To, phase, pause, deref(m.Error)}
}

func movesTable(t *tw, raw json.RawMessage) {
	listTable(t, raw, moveHeader, func(v api.ProxyMoveList) []api.ProxyMove { return v.Moves }, moveRow, "No moves.")
}

func moveTable(t *tw, raw json.RawMessage) { itemTable(t, raw, moveHeader, moveRow) }
