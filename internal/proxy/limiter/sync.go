package limiter

import (
	"time"

	"github.com/queenmq/queen/internal/proxy/store"
)

// smoothing is the time constant of the demand average.
const smoothing = 3 * time.Second

// idleAfter is how long a tenant without requests keeps its state.
const idleAfter = time.Minute

// Demand folds the tokens asked for since the last call into each tenant's smoothed
// demand, elapsed being the time since that call, and returns the tenants whose
// demand is worth reporting. Tenants idle for a minute are forgotten.
func (l *Limiter) Demand(elapsed time.Duration) []store.Demand {
	now := l.now()
	alpha := min(1, elapsed.Seconds()/smoothing.Seconds())
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []store.Demand
	for id, st := range l.tenants {
		if elapsed > 0 {
			st.demandReq += alpha * (st.askedReq/elapsed.Seconds() - st.demandReq)
			st.demandMsg += alpha * (st.askedMsg/elapsed.Seconds() - st.demandMsg)
		}
		st.askedReq, st.askedMsg = 0, 0
		if st.inflight == 0 && now.Sub(st.lastAsked) > idleAfter {
			delete(l.tenants, id)
			continue
		}
		out = append(out, store.Demand{Tenant: id, Requests: st.demandReq, Messages: st.demandMsg})
	}
	return out
}

// ApplySync sets every tenant's shares from the cluster's demand.
func (l *Limiter) ApplySync(s *store.DemandSync) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.replicas = max(1, s.Replicas)
	n := float64(l.replicas)
	for id, st := range l.tenants {
		total := s.Total[id]
		st.reqShare = share(st.demandReq, total.Requests, n)
		st.msgShare = share(st.demandMsg, total.Messages, n)
	}
}

// share is 0.2/n + 0.8 × own/total, or 1/n when nobody asks.
func share(own, total, n float64) float64 {
	if total <= 1e-9 {
		return 1 / n
	}
	return 0.2/n + 0.8*min(1, own/total)
}
