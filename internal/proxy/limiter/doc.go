// Package limiter admits tenant requests against their limits: a token bucket of
// requests, one of messages, and a cap on requests in flight. Cost n is admitted when
// the bucket holds at least min(n, burst), then subtracted (the bucket may go
// negative, so big pushes pass and the long-run rate holds). A request passes both
// buckets or neither.
//
// Replicas share each limit by demand. Every sync interval a replica stores its
// smoothed demand per tenant (tokens asked for per second, over about 3 s) and
// reads the others'; its share is 0.2/N + 0.8 × own/total (1/N when the tenant is
// idle everywhere), N the live replicas. Rates, bursts and the concurrency cap are
// multiplied by the share. Shares sum to 1, so the cluster admits at most
// limit + burst; while the database is unreachable the last shares stay.
package limiter
