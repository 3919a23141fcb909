package daemon

import (
	"context"
	"strings"

	"github.com/queenmq/queen/internal/buildinfo"
	"github.com/queenmq/queen/internal/heartbeat"
)

// newHeartbeat builds this replica's heartbeat (its row in queen.replicas); the rows
// say draining once stopping is done.
func (d *daemon) newHeartbeat(stopping context.Context) *heartbeat.Heartbeat {
	return heartbeat.New(heartbeat.Options{
		Store: d.store, Broker: d.broker, Runner: d.maint,
		Version: buildinfo.Version, StartedAt: d.broker.Analytics().Activity().Since,
		ReadyFunc: d.ready.Load, Draining: stopping.Done(),
		SocketActivated:  strings.HasPrefix(d.source, sourceActivation),
		WatchdogInterval: d.notifier.WatchdogInterval(),
		Logger:           d.logger.With("component", "heartbeat"),
	})
}
