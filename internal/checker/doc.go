// Package checker is a concurrency checker for queen's delivery semantics, for tests.
//
// [Run] drives real brokers over HTTP with internal/client, all of them on one
// database: producers push uniquely identified messages (payload {"p": producer,
// "s": sequence}, transactionId "p<producer>-s<sequence>") to many partitions of one
// queue, several producers often on the same partition; consumers in several named
// consumer groups and in queue mode, spread over the brokers, long-poll with batches
// and sometimes several partitions, ack completed mostly, failed now and then (and
// always for "poison" messages, which must end in the dead-letter queue), and
// sometimes abandon a lease so that it expires. Meanwhile brokers are restarted one
// at a time through a [Cluster]: stopped abruptly, or, in a rolling restart
// ([Config.Rolling]), each in turn gracefully as an upgrade does; clients retry
// transport errors against another broker. Database faults ([Config.Faults]: a
// primary killed, a switchover, a database cut off) are injected the same way, one
// at a time, and each is reported with what the clients saw meanwhile and the time
// until pushes were queued again ([Report.FaultLog]); pushes answered "buffered"
// (spooled by a broker while the database was away) then count as pushed
// ([Config.AllowBuffered]). Some consumers complete a message with a transaction
// instead of an ack ([Config.TransactionProbability]): the ack and the push of a
// follow-up message to a second queue, atomically. Every request, delivery, ack
// result and abandoned lease is recorded with client-side send and receive times,
// and every restart with the traffic its broker served before and after it
// ([Report.RestartLog]).
//
// Once the producers are done and the consumers have drained the queue, [Verify]
// checks the recorded [History] against the ordering, delivery and ack guarantees and
// counts violations:
//
//   - no message lost: every pushed message was delivered to every group, and its
//     last delivery ended in a successful completed ack or a dead-letter;
//   - nothing delivered to a group after that group completed it (or a later message
//     of the same partition), nor completed twice by one group; an ack answered
//     "already done" (a completed ack answered noop, a failed one "already
//     committed") changes nothing, and is only right after another delivery's ack
//     completed or dead-lettered the message;
//   - per-partition order for every group: the messages of one partition in one pop
//     are consecutive in (createdAt, id) order, first deliveries follow that order, a
//     lease starts right after the last acked message (never skips one), and the
//     (createdAt, id) order of each producer's messages is its push order;
//   - redeliveries only after a failed ack or a lease left to expire: a live lease is
//     never taken over, and an ack under it is never refused before it expires;
//   - the dead-letter queue holds exactly the messages whose failed acks used up the
//     queue's retryLimit, per group, each once, after exactly retryLimit retries;
//   - every transaction answered success left its follow-up, exactly once, and none
//     answered with a refusal did (a transaction acks like an ack for the checks
//     above);
//   - with [Config.Only503], no request was answered with a 5xx other than 503.
//
// Timing is judged conservatively: an event counts as "before" another only when the
// client saw its answer before sending the other request, so a violation is never a
// scheduling artefact. Acks and transactions whose answer was lost to a killed
// broker (or answered 503) have an unknown outcome and are accepted either way.
//
// The package never touches the database itself (it does not import pgx): the test
// that runs it supplies the brokers ([Cluster]), and the dead-letter entries are read
// through the HTTP API like everything else.
package checker
