// Package mover moves a tenant from one cell to another while it is used: it copies
// the tenant's messages in rounds while the source serves it, then holds the tenant's
// requests, fences it at the source's brokers, copies the rest and every cursor,
// lease, dead letter and option, switches the tenant's cell in the proxy database and
// drops the tenant at the source. Each proxy replica runs the moves it claims; a move
// whose replica stops is taken over by another and resumed from its phase.
package mover
