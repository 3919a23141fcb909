package api

import "encoding/json"

// This file holds the wire types of the cluster views: the replica list (GET
// /api/v1/system/replicas), this broker's parked long-polls (GET
// /api/v1/system/longpolls) and the consumer-lag history (GET
// /api/v1/analytics/consumer-lag). Times are RFC 3339 strings in UTC; every list
// renders [] when empty.

// ReplicaList is the answer of GET /api/v1/system/replicas: every replica's last
// heartbeat, by instance name.
type ReplicaList struct {
	Replicas []Replica `json:"replicas"`
}

// MarshalJSON renders nil Replicas as [].
func (l ReplicaList) MarshalJSON() ([]byte, error) {
	type plain ReplicaList
	l.Replicas = nonNil(l.Replicas)
	return json.Marshal(plain(l))
}

// Replica is one broker replica as its last heartbeat described it.
type Replica struct {
	Instance  string `json:"instance"`
	Hostname  string `json:"hostname"`
	PID       int    `json:"pid"`
	Version   string `json:"version"`
	StartedAt string `json:"startedAt"`
	// LastSeenAt is when the heartbeat was written, by the database's clock.
	LastSeenAt string `json:"lastSeenAt"`
	// Stale: no heartbeat arrived within the bound the replica set for itself (three
	// heartbeat periods); the replica is gone, wedged or cut off from the database.
	Stale bool `json:"stale"`
	// Ready is what the replica's /health/ready said before it pinged the database;
	// Draining: the replica is stopping (its last row keeps it set).
	Ready           bool           `json:"ready"`
	Draining        bool           `json:"draining"`
	ParkedLongPolls int            `json:"parkedLongPolls"`
	Pool            ReplicaPool    `json:"pool"`
	Spool           ReplicaSpool   `json:"spool"`
	Jobs            []ReplicaJob   `json:"jobs"`
	Systemd         ReplicaSystemd `json:"systemd"`
}

// MarshalJSON renders nil Jobs as [].
func (r Replica) MarshalJSON() ([]byte, error) {
	type plain Replica
	r.Jobs = nonNil(r.Jobs)
	return json.Marshal(plain(r))
}

// ReplicaPool is a replica's database connections in use and its pool size.
type ReplicaPool struct {
	InUse int `json:"inUse"`
	Max   int `json:"max"`
}

// ReplicaSpool is a replica's disk spool: pushes waiting for the database, the age of
// the oldest, and whether spool writes succeed (false without a spool).
type ReplicaSpool struct {
	Pending                 int64   `json:"pending"`
	OldestPendingAgeSeconds float64 `json:"oldestPendingAgeSeconds"`
	Healthy                 bool    `json:"healthy"`
}

// ReplicaJob is a replica's own view of one maintenance job. LastResult is the
// outcome of the job's last run on that replica (success, error, or "" while other
// replicas ran every cycle); LastCycle is that of its last cycle there, skipped ones
// included (skipped_locked, skipped_not_due). The times are nil until the replica ran
// (or successfully ran) the job.
type ReplicaJob struct {
	Name          string  `json:"name"`
	LastSuccessAt *string `json:"lastSuccessAt"`
	LastResult    string  `json:"lastResult"`
	LastCycle     string  `json:"lastCycle"`
	LastRunAt     *string `json:"lastRunAt"`
	LastError     string  `json:"lastError,omitempty"`
}

// ReplicaSystemd is how the replica runs under systemd: a listener passed by socket
// activation, and the unit's WatchdogSec (0 = off).
type ReplicaSystemd struct {
	SocketActivated bool    `json:"socketActivated"`
	WatchdogSec     float64 `json:"watchdogSec"`
}

// LongPollList is the answer of GET /api/v1/system/longpolls: the long-poll pops
// parked on the answering broker now. Instance names that broker; Total counts its
// parked pops (a namespace or task pop counts once here and once per queue in
// Waiters); Truncated reports that Waiters was cut at its bound.
type LongPollList struct {
	Instance  string           `json:"instance"`
	Total     int              `json:"total"`
	Waiters   []LongPollWaiter `json:"waiters"`
	Truncated bool             `json:"truncated"`
}

// MarshalJSON renders nil Waiters as [].
func (l LongPollList) MarshalJSON() ([]byte, error) {
	type plain LongPollList
	l.Waiters = nonNil(l.Waiters)
	return json.Marshal(plain(l))
}

// LongPollWaiter counts the pops parked on one queue by one consumer group for one
// partition ("*": any partition).
type LongPollWaiter struct {
	Queue               string  `json:"queue"`
	ConsumerGroup       string  `json:"consumerGroup"`
	Partition           string  `json:"partition"`
	Count               int     `json:"count"`
	OldestParkedSeconds float64 `json:"oldestParkedSeconds"`
}

// ConsumerLag is the answer of GET /api/v1/analytics/consumer-lag: the lag
// samples of consumer groups, per bucket of BucketMinutes, oldest first.
type ConsumerLag struct {
	TimeRange     TimeRange          `json:"timeRange"`
	BucketMinutes int                `json:"bucketMinutes"`
	BucketSeconds int                `json:"bucketSeconds"` // exact width; bucketMinutes is 0 under a minute
	Series        []ConsumerLagPoint `json:"series"`
}

// MarshalJSON renders nil Series as [].
func (c ConsumerLag) MarshalJSON() ([]byte, error) {
	type plain ConsumerLag
	c.Series = nonNil(c.Series)
	return json.Marshal(plain(c))
}

// ConsumerLagPoint is one group's lag on one queue in one bucket: unconsumed messages
// (TotalLag), the age of the oldest of them in seconds (MaxTimeLag) and the
// partitions holding any. A bucket of several minutes holds the largest sample of
// each field.
type ConsumerLagPoint struct {
	Bucket            string  `json:"bucket"`
	Group             string  `json:"group"`
	Queue             string  `json:"queue"`
	TotalLag          int64   `json:"totalLag"`
	MaxTimeLag        float64 `json:"maxTimeLag"`
	PartitionsWithLag int     `json:"partitionsWithLag"`
}
