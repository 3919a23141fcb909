// Package progress lets a caller wait on a background loop's progress instead of
// polling for its effects: the loop counts each completed cycle on a [Signal], and a
// waiter blocks until the count reaches a number or its context ends.
//
// It is the event a test waits on ("the maintenance runner finished a cycle", "the
// analytics loop flushed"), in the spirit of River's test signals, and it costs the
// loop a mutex and an increment per cycle: the channel a waiter sleeps on is made
// only when someone waits.
//
// A cycle under way when a waiter reads Count may have started before the event the
// waiter cares about (a push, a row written) and still end as cycle Count()+1. To be
// sure that a whole cycle ran after the event, wait for Count()+2.
package progress
