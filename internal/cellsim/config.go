package cellsim

import "time"

// Config says how large a simulation [Run] runs.
type Config struct {
	// Cells is the number of cells, each a PostgreSQL cluster and one broker; the
	// first is the proxy's QUEEN_PROXY_UPSTREAMS, the cell named "default".
	Cells int
	// Tenants are created through the admin API; each gets traffic.
	Tenants int
	// Moves is how many distinct tenants are moved to another cell while the load runs.
	Moves int
	// MoveParallel is how many moves run at once.
	MoveParallel int
	// Producers and Consumers (per consumer group) are the load's goroutines; each
	// owns a disjoint share of the tenants.
	Producers, Consumers int
	// Groups are the consumer groups every message must reach.
	Groups []string
	// Batch is the number of messages per push (all to one partition).
	Batch int
	// PushRate is the offered load, in messages per second over all producers.
	PushRate float64
	// Warmup runs the load before the first move; Tail runs it after the last one.
	Warmup, Tail time.Duration
	// Drain bounds how long consumers may take, once producers stop, to ack every
	// message pushed.
	Drain time.Duration
	// LeaseSeconds is the load queue's lease: how long a delivery whose ack was lost
	// waits for its redelivery.
	LeaseSeconds int
	// ProbeSamples is the number of request pairs (through the proxy, straight to the
	// broker) of the routing-overhead measurement.
	ProbeSamples int
	// MoveTimeout bounds each move, from its start until it is done or failed.
	MoveTimeout time.Duration
	// BrokerPool is each broker's DB_POOL_SIZE.
	BrokerPool int
	// SharedBuffers is each cell cluster's shared_buffers.
	SharedBuffers string
}

// Short is the form make test runs: 3 cells, 20 tenants, 2 moves.
func Short() Config {
	return Config{
		Cells: 3, Tenants: 20, Moves: 2, MoveParallel: 2, Producers: 4, Consumers: 2,
		Groups: []string{"g1", "g2"}, Batch: 5, PushRate: 200,
		Warmup: 2 * time.Second, Tail: 2 * time.Second, Drain: 90 * time.Second,
		LeaseSeconds: 5, ProbeSamples: 100, MoveTimeout: 2 * time.Minute,
		BrokerPool: 6, SharedBuffers: "16MB",
	}
}

// Full is the form make sim-cells runs: 12 cells, 1 000 tenants, 50 moves under load.
func Full() Config {
	return Config{
		Cells: 12, Tenants: 1000, Moves: 50, MoveParallel: 4, Producers: 12, Consumers: 4,
		Groups: []string{"g1", "g2"}, Batch: 5, PushRate: 600,
		Warmup: 10 * time.Second, Tail: 10 * time.Second, Drain: 5 * time.Minute,
		LeaseSeconds: 10, ProbeSamples: 1000, MoveTimeout: 5 * time.Minute,
		BrokerPool: 6, SharedBuffers: "16MB",
	}
}

// loadQueue is every tenant's queue of the load; probeQueue the routing probe's.
const (
	loadQueue  = "q"
	probeQueue = "probe"
	partitions = 2
)
