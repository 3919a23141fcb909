package daemon

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/queenmq/queen/internal/proxy/gateway"
	"github.com/queenmq/queen/internal/proxy/mover"
)

// How often the gateway's cells and live moves are read from the proxy database
// when no notification says they changed. Moves are read often: a move's pause
// holds its tenant's requests on every replica from the moment each reads it.
const (
	cellsEvery = 5 * time.Second
	movesEvery = 500 * time.Millisecond
)

// placementChanged says whether an auth-channel payload is about cells or moves.
func placementChanged(payload string) bool {
	return strings.HasPrefix(payload, "placement:") || strings.HasPrefix(payload, "cell:")
}

// kick asks syncPlacement to read the database now.
func (p *proxy) kick() {
	select {
	case p.placementKick <- struct{}{}:
	default:
	}
}

// syncPlacement keeps the gateway's cells and live moves as the proxy database has
// them, until ctx is done. A failed read keeps what the gateway had.
func (p *proxy) syncPlacement(ctx context.Context) {
	log := p.logger.With("component", "cells")
	cellsTick := time.NewTicker(cellsEvery)
	defer cellsTick.Stop()
	movesTick := time.NewTicker(movesEvery)
	defer movesTick.Stop()
	readCells := func() {
		cells, err := p.store.CellsAll(ctx)
		if err != nil {
			log.Debug("cells not read", "err", err)
			return
		}
		var specs []gateway.CellSpec
		hasDefault := false
		for _, c := range cells {
			hasDefault = hasDefault || c.Name == gateway.DefaultCell
			sp := gateway.CellSpec{Name: c.Name}
			for _, raw := range c.Upstreams {
				if u, err := url.Parse(raw); err == nil {
					sp.Upstreams = append(sp.Upstreams, u)
				}
			}
			specs = append(specs, sp)
		}
		if !hasDefault && len(p.cfg.Backends) > 0 {
			// QUEEN_PROXY_UPSTREAMS is the cell default even before the database has it.
			specs = append(specs, gateway.CellSpec{Name: gateway.DefaultCell, Upstreams: p.cfg.Backends})
		}
		p.gateway.SetCells(specs)
	}
	readMoves := func() {
		moves, err := p.store.MovesLive(ctx)
		if err != nil {
			log.Debug("moves not read", "err", err)
			return
		}
		list := make([]gateway.MoveState, 0, len(moves))
		for _, m := range moves {
			list = append(list, gateway.MoveState{Tenant: m.Tenant, From: m.From, To: m.To, Phase: string(m.Phase)})
		}
		p.gateway.SetMoves(list)
	}
	var upstreams []string
	for _, u := range p.cfg.Backends {
		upstreams = append(upstreams, u.String())
	}
	defaultDone := false
	ensureDefault := func() {
		if defaultDone {
			return
		}
		if err := p.store.CellEnsureDefault(ctx, upstreams); err != nil {
			log.Debug("the default cell not recorded yet", "err", err)
			return
		}
		defaultDone = true
	}
	ensureDefault()
	readCells()
	readMoves()
	for {
		select {
		case <-ctx.Done():
			return
		case <-cellsTick.C:
			ensureDefault()
			readCells()
		case <-movesTick.C:
			readMoves()
		case <-p.placementKick:
			readCells()
			readMoves()
		case <-p.gateway.ReloadMoves():
			readMoves()
		}
	}
}

// newMover builds the runner of the moves this replica claims, over the gateway's
// cells and broker connections.
func (p *proxy) newMover() *mover.Mover {
	return mover.New(mover.Options{
		Store: p.store,
		Cells: mover.Cells{
			Brokers: func(cell string) []*url.URL {
				var out []*url.URL
				for _, b := range p.gateway.CellBrokers(cell) {
					out = append(out, b.URL)
				}
				return out
			},
			Pick: func(cell string) *url.URL {
				if b := p.gateway.CellPick(cell); b != nil {
					return b.URL
				}
				return nil
			},
		},
		Client:    &http.Client{Transport: p.gateway.Transport()},
		Authorize: p.gateway.AuthorizeOwn,
		ReplicaID: p.replicaID,
		Logger:    p.logger,
	})
}
