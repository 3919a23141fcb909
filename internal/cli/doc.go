// Package cli is queenctl, the operator CLI of the Queen broker, as a library:
// cmd/queenctl only calls [Main] with the process's arguments, environment and
// streams, so tests can run every command in process too.
//
// Commands (queenctl --help lists them with their flags):
//
//	ping, status, metrics, version
//	queue list|get|configure|delete
//	push, pop, ack, lease extend, tx, tail
//	cg list|get|lag|seek|replay|delete
//	dlq list|retry|delete
//	messages list|get|delete
//	traces get|by-name|names
//	streams list|get|reset|delete
//	maintenance status|on|off
//	context list|current|use|set|delete
//	completion bash|zsh|fish
//
// Every command talks to the broker through internal/client and prints either a
// human rendering (tables, coloured only on a terminal) or, with -o json / -o yaml,
// the broker's answer in the wire shapes of internal/api. Errors go to stderr as
// "queenctl <command>: <what failed>: <cause>", and the exit status says what kind
// of failure it was (the Exit constants, documented in docs/queenctl.md).
//
// The broker and token come from flags, then a context named by --context or
// QUEEN_CONTEXT, then QUEEN_SERVER / QUEEN_TOKEN, then the config file's current
// context (ctxfile.go), then [DefaultServer].
package cli
