package broker

import (
	"sync"

	"github.com/queenmq/queen/internal/queue"
)

// Pop autopilot limits (docs/api.md, "Pop autopilot").
const (
	// AutopilotMaxWidth bounds the claim width the autopilot controller gives one pop.
	AutopilotMaxWidth = 64
	// AutopilotAbsentBatch is the batch of a pop with autopilot=true and no batch that
	// the controller does not size (the Queen 1.x meaning of an omitted batch).
	AutopilotAbsentBatch = 200
	// autopilotDefaultBatch is the batch the controller gives when
	// Config.PopAutopilotBatch is 0.
	autopilotDefaultBatch = 100
	// autopilotMaxEstimate bounds a group's estimate of its ready partitions.
	autopilotMaxEstimate = AutopilotMaxWidth * AutopilotMaxWidth
	// autopilotMaxGroups bounds the (queue, group) pairs the controller tracks; past
	// it the idle pairs are forgotten, and a pop of an untracked pair claims width 1.
	autopilotMaxGroups = 10000
)

// autopilot is the controller that chooses the claim width W of pops that leave
// partitions to the broker: the group's estimate of the partitions ready for it,
// divided among the group's concurrent pops of that queue, in 1…AutopilotMaxWidth.
// The estimate starts at 1 and is adjusted after every such pop: a pop that claimed
// its whole width and still had room in its batch saw more ready partitions than it
// could take (the estimate doubles); one that claimed fewer than its width saw only
// that many (the estimate falls by the shortfall).
type autopilot struct {
	mu     sync.Mutex
	groups map[autopilotKey]*autopilotGroup
}

type autopilotKey struct{ queue, group string }

type autopilotGroup struct {
	estimate int // partitions believed ready for the group
	inflight int // its pops running now
}

func newAutopilot() *autopilot {
	return &autopilot{groups: make(map[autopilotKey]*autopilotGroup)}
}

// start registers one pop of group on queue and returns its width. Every start is
// followed by one finish with the same queue, group and width.
func (a *autopilot) start(queueName, group string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := autopilotKey{queueName, group}
	g := a.groups[k]
	if g == nil {
		if len(a.groups) >= autopilotMaxGroups {
			for key, old := range a.groups {
				if old.inflight == 0 {
					delete(a.groups, key)
				}
			}
			if len(a.groups) >= autopilotMaxGroups {
				return 1
			}
		}
		g = &autopilotGroup{estimate: 1}
		a.groups[k] = g
	}
	g.inflight++
	return min(max(g.estimate/g.inflight, 1), AutopilotMaxWidth)
}

// finish unregisters a pop started with width that claimed claimed partitions;
// room reports that it delivered fewer messages than its batch.
func (a *autopilot) finish(queueName, group string, width, claimed int, room bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	g := a.groups[autopilotKey{queueName, group}]
	if g == nil {
		return
	}
	g.inflight = max(g.inflight-1, 0)
	switch {
	case claimed >= width && room:
		g.estimate = min(max(g.estimate, width)*2, autopilotMaxEstimate)
	case claimed < width:
		g.estimate = max(g.estimate-(width-claimed), 1)
	}
}

// normalizeAutopilot applies the Queen 1.x meaning of a pop with autopilot=true to
// the knobs it left out (Batch 0, Partitions 0), before NormalizePop's defaults: the
// controller sizes the pops of a named consumer group on the queue route (no
// namespace or partition), batch from Config.PopAutopilotBatch and partitions at
// Pop time; any other autopilot pop without batch takes AutopilotAbsentBatch.
func (b *Broker) normalizeAutopilot(req *queue.PopRequest) {
	req.AutopilotBatch, req.AutopilotPartitions = false, false
	if !req.Autopilot {
		return
	}
	controlled := req.Queue != "" && req.Partition == "" &&
		req.ConsumerGroup != "" && req.ConsumerGroup != queue.QueueModeGroup
	if req.Batch == 0 {
		req.Batch = AutopilotAbsentBatch
		if controlled {
			req.Batch = b.cfg.PopAutopilotBatch
			if req.Batch == 0 {
				req.Batch = autopilotDefaultBatch
			}
			req.AutopilotBatch = true
		}
		req.Batch = min(req.Batch, b.cfg.MaxPopBatch)
	}
	if req.Partitions == 0 && controlled {
		req.AutopilotPartitions = true
	}
}
