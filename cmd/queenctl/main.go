// Command queenctl is the operator CLI of the Queen message broker: queues, push,
// pop and ack, tail, consumer groups, the dead-letter queue, messages, traces,
// maintenance mode and metrics, over the broker's HTTP API. Everything is in package
// internal/cli; see docs/queenctl.md or run `queenctl --help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/queenmq/queen/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Environ(), os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
