package broker

// SpoolsFirst reports whether a push would now go to the spool without trying the
// database (the half second after one found it unreachable, among others).
func (b *Broker) SpoolsFirst() bool { return b.spoolFirst() }

// QueueCacheTTL is how long a broker trusts a queue's encryption flag it read.
const QueueCacheTTL = queueCacheTTL
