package analytics

import (
	"context"

	"github.com/queenmq/queen/internal/api"
	"github.com/queenmq/queen/internal/queue"
)

// maxStatusGroups caps the (consumer group, queue) pairs a status view lists.
const maxStatusGroups = 1000

// GroupLags renders how far consumers are behind, with queue and group names relative
// to sc (queue mode's group is never prefixed).
func GroupLags(sc queue.Scope, groups []queue.ConsumerGroupSummary) []api.ConsumerGroupLag {
	out := make([]api.ConsumerGroupLag, len(groups))
	for i, g := range groups {
		out[i] = api.ConsumerGroupLag{
			Queue: sc.Relative(g.Queue), Group: sc.Relative(g.Group), Lag: g.TotalLag, Pending: g.TotalLag - g.InFlight,
			InFlight: g.InFlight, LagSeconds: g.MaxTimeLag.Seconds(), PartitionsWithLag: g.PartitionsWithLag,
			Conflation: g.Conflation,
		}
	}
	return out
}

// consumerGroups reads how far the consumers of f's queue (every queue of f's scope
// when f names none) are behind now, by group then queue; namespace and task do not
// filter it.
func (s *Service) consumerGroups(ctx context.Context, f Filter) ([]api.ConsumerGroupLag, error) {
	var groups []queue.ConsumerGroupSummary
	var err error
	if f.Queue != "" {
		groups, err = s.store.QueueConsumerGroups(ctx, f.Queue, maxStatusGroups)
	} else {
		groups, err = s.store.ConsumerGroupList(ctx, f.Scope, maxStatusGroups)
	}
	if err != nil {
		return nil, err
	}
	return GroupLags(f.Scope, groups), nil
}
