package api

// Metrics is the body of GET /metrics: a small JSON snapshot of one
// broker process. The keys are upstream's, which borrows Node.js names (memory as
// process.memoryUsage(), cpu as process.cpuUsage()); the go client treats the body as
// opaque, the dashboard reads it.
type Metrics struct {
	// Uptime is seconds since the process started.
	Uptime float64 `json:"uptime"`
	// Requests counts answered HTTP requests; Rate is per second over the last
	// 10 to 20 seconds.
	Requests MetricsRate `json:"requests"`
	// Messages counts messages pushed by this process; Rate as for Requests.
	Messages MetricsRate `json:"messages"`
	// Database describes the PostgreSQL connection pool.
	Database MetricsDatabase `json:"database"`
	// Memory is in bytes.
	Memory MetricsMemory `json:"memory"`
	// CPU is the process's CPU time in microseconds.
	CPU MetricsCPU `json:"cpu"`
}

// MetricsRate is a lifetime total with its recent per-second rate.
type MetricsRate struct {
	Total float64 `json:"total"`
	Rate  float64 `json:"rate"`
}

// MetricsDatabase describes the connection pool.
type MetricsDatabase struct {
	// PoolSize is the pool's capacity (DB_POOL_SIZE).
	PoolSize int64 `json:"poolSize"`
	// IdleConnections are open connections not in use.
	IdleConnections int64 `json:"idleConnections"`
	// WaitingRequests is always 0: the pool does not expose its waiters (see
	// queen_db_pool_acquire_waits_total on /metrics/prometheus instead).
	WaitingRequests int64 `json:"waitingRequests"`
}

// MetricsMemory maps Go's memory statistics onto upstream's keys.
type MetricsMemory struct {
	// RSS is the resident set size (0 where the OS does not report it).
	RSS int64 `json:"rss"`
	// HeapTotal is heap memory obtained from the OS; HeapUsed the allocated part.
	HeapTotal int64 `json:"heapTotal"`
	HeapUsed  int64 `json:"heapUsed"`
	// External is runtime memory outside the heap (stacks, GC metadata, buffers).
	External int64 `json:"external"`
	// ArrayBuffers has no Go equivalent and is always 0.
	ArrayBuffers int64 `json:"arrayBuffers"`
}

// MetricsCPU is CPU time spent by the process, in microseconds.
type MetricsCPU struct {
	User   int64 `json:"user"`
	System int64 `json:"system"`
}
