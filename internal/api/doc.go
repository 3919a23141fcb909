// Package api holds the HTTP API v1 wire types of the Queen broker: the request and
// response bodies of every typed route, the error body and its stable error codes. The
// broker's HTTP layer encodes them and the client, the CLI and the tests decode them, so
// this package is the single source of truth for what goes over the wire. It imports only
// the standard library.
//
// The contract is the HTTP API of the upstream Queen server and what its four official
// clients send and parse (docs/api.md lists the routes queen serves). The types here
// reproduce it byte for byte where clients depend on it, which leads to a few rules that
// look odd in isolation:
//
//   - Names follow upstream, not a house style. Most keys are camelCase
//     (transactionId, partitionId, leaseId), but push results are snake_case
//     (transaction_id, message_id, partition_id, trace_id) except queueName, /health has
//     worker_id and shared_state, and the error body is flat. Do not "fix" them.
//   - Top-level arrays stay arrays. Push, ack, ack/batch and lease extend answer with a
//     JSON array even for a single item ([PushResult], [AckResult], [LeaseExtendResult]);
//     the upstream Go client wraps arrays as {"data":[...]} and objects are read as-is, so
//     changing the top-level kind breaks it.
//   - Keys that upstream sends as null are rendered as null, not omitted: the error of a
//     successful [AckResult], trace_id of a queued [PushResult], traceId and producerSub of
//     a [Message]. Those fields are pointers without omitempty. Keys that a shape does not
//     have at all are omitted; where the set of keys depends on a status or type
//     ([PushResult], [TxResult]) the type has its own MarshalJSON.
//   - Lists that clients iterate render as [] when empty, never null ([PopResponse],
//     [QueueList], [QueueDetail], [TransactionResponse]).
//   - Additive fields are allowed, since every client ignores keys it does not know;
//     queen adds some (per-message queue and retryCount on pop, a camelCase
//     transactionId alias on push results, request-relative push indexes). Removing or
//     renaming a key is never allowed.
//   - Error bodies are {"error":"<message>"} with a string error, as upstream sends and
//     the js/py clients read. The machine-readable [ErrorCode] travels beside it in
//     "code" (see [ErrorBody]).
//   - Requests treat JSON null as absent. Decoding null into a string field leaves it
//     empty, which is what the server wants; pointer fields distinguish "absent" from a
//     zero value where the zero value has a meaning of its own ([QueueOptions]).
//
// Timestamps are strings, not time.Time, because their precision is part of the contract:
// three fractional digits almost everywhere ([FormatMillis]) but six on pop messages
// ([FormatMicros]).
//
// The Proxy* types are the bodies of queen-proxy's admin API (/admin/v1), which the
// proxy answers and queenctl proxy sends and reads. That API has its own contract:
// camelCase keys, and timestamps as time.Time, which encoding/json writes in RFC 3339
// with as many fractional digits as needed, as the admin API always has.
package api
