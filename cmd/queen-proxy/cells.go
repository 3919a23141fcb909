package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/proxy/admin"
	"github.com/queenmq/queen/internal/proxy/manage"
	"github.com/queenmq/queen/internal/proxy/tenant"
)

// The cell commands: the cells tenants live in. The brokers' states come from the
// running proxy's health checks, so here they are "unknown"; GET /admin/v1/cells
// has them.
func init() {
	commands["cell list"] = cellList
	commands["cell show"] = cellShow
	commands["cell create"] = cellCreate
	commands["cell update"] = cellUpdate
	commands["cell close"] = cellClosed(true)
	commands["cell open"] = cellClosed(false)
	commands["cell delete"] = cellDelete
}

const cellHeader = "NAME\tUPSTREAMS\tCLOSED\tTENANTS\tSTORED BYTES\tMSG/S\tHEADROOM"

func cellRows(cs ...*tenant.CellStats) func(io.Writer) {
	return func(w io.Writer) {
		for _, c := range cs {
			headroom := "-"
			if c.Headroom != nil {
				headroom = strconv.FormatFloat(*c.Headroom, 'f', 2, 64)
			}
			fmt.Fprintf(w, "%s\t%s\t%t\t%d\t%d\t%g\t%s\n", c.Name, strings.Join(c.Upstreams, ","), c.Closed, c.Tenants,
				c.StoredBytes, c.PushRate+c.PopRate, headroom)
		}
	}
}

func cellBody(c *tenant.CellStats) api.ProxyCell { return admin.CellBody(c, nil) }

// cellFlags registers the flags shared by cell create and update.
func cellFlags(e *cmdEnv) *manage.CellChange {
	ch := &manage.CellChange{}
	e.fs.Func("upstreams", "the cell's broker URLs, comma-separated (1 to 3)", func(s string) error {
		ch.Upstreams = strings.Split(s, ",")
		return nil
	})
	e.fs.Func("capacity-bytes", "bytes the cell should store (0: not set)", func(s string) error {
		n, err := strconv.ParseInt(s, 10, 64)
		ch.CapacityBytes = &n
		return err
	})
	e.fs.Func("capacity-rate", "messages per second (in + out) the cell should carry (0: not set)", func(s string) error {
		f, err := strconv.ParseFloat(s, 64)
		ch.CapacityMessagesPerSecond = &f
		return err
	})
	e.fs.Func("closed", "true: no new tenants are placed in the cell", func(s string) error {
		b, err := strconv.ParseBool(s)
		ch.Closed = &b
		return err
	})
	return ch
}

func cellList(e *cmdEnv) func(io.Reader) error {
	return func(io.Reader) error {
		if err := e.want(); err != nil {
			return err
		}
		cs, err := e.m.Cells(e.ctx)
		if err != nil {
			return err
		}
		return e.print(api.ProxyCellList{Cells: admin.List(cs, cellBody)}, cellHeader, cellRows(cs...))
	}
}

func cellShow(e *cmdEnv) func(io.Reader) error {
	return func(io.Reader) error {
		if err := e.want("NAME"); err != nil {
			return err
		}
		c, err := e.m.Cell(e.ctx, e.args[0])
		if err != nil {
			return err
		}
		return e.print(cellBody(c), "", nil)
	}
}

func cellCreate(e *cmdEnv) func(io.Reader) error {
	ch := cellFlags(e)
	return func(io.Reader) error {
		if err := e.want("NAME"); err != nil {
			return err
		}
		c, err := e.m.CreateCell(e.ctx, manage.CellSpec{Name: e.args[0], Upstreams: ch.Upstreams, CapacityBytes: ch.CapacityBytes,
			CapacityMessagesPerSecond: ch.CapacityMessagesPerSecond, Closed: ch.Closed}, e.actor)
		if err != nil {
			return err
		}
		return e.print(cellBody(c), cellHeader, cellRows(c))
	}
}

func cellUpdate(e *cmdEnv) func(io.Reader) error {
	ch := cellFlags(e)
	return func(io.Reader) error {
		if err := e.want("NAME"); err != nil {
			return err
		}
		if ch.Upstreams == nil && ch.CapacityBytes == nil && ch.CapacityMessagesPerSecond == nil && ch.Closed == nil {
			return usagef("give --upstreams, --capacity-bytes, --capacity-rate or --closed")
		}
		c, err := e.m.UpdateCell(e.ctx, e.args[0], *ch, e.actor)
		if err != nil {
			return err
		}
		return e.print(cellBody(c), cellHeader, cellRows(c))
	}
}

func cellClosed(closed bool) command {
	return func(e *cmdEnv) func(io.Reader) error {
		return func(io.Reader) error {
			if err := e.want("NAME"); err != nil {
				return err
			}
			c, err := e.m.SetCellClosed(e.ctx, e.args[0], closed, e.actor)
			if err != nil {
				return err
			}
			return e.print(cellBody(c), cellHeader, cellRows(c))
		}
	}
}

func cellDelete(e *cmdEnv) func(io.Reader) error {
	return func(io.Reader) error {
		if err := e.want("NAME"); err != nil {
			return err
		}
		if err := e.m.DeleteCell(e.ctx, e.args[0], e.actor); err != nil {
			return err
		}
		return e.print(api.ProxyCellDeleted{Deleted: true}, "DELETED", func(w io.Writer) { fmt.Fprintln(w, e.args[0]) })
	}
}
