// Package patronitest runs a disposable Patroni cluster for a test: one etcd member
// and two or three PostgreSQL nodes replicating from a leader, the way an operator
// runs PostgreSQL with automatic failover. It is a test-only package: never import
// it from non-test code.
//
// Start returns a running cluster:
//
//	c := patronitest.Start(t, patronitest.Options{}) // 2 nodes, synchronous mode
//	env := c.Env() // PG_HOST=127.0.0.2,127.0.0.3 PG_PORT=… PG_USER=postgres PG_PASSWORD= PG_DB=postgres
//	conn, err := pgx.Connect(ctx, c.DSN()) // every node, target_session_attrs=read-write: the primary
//	first, err := c.Leader(ctx)
//	err = c.Kill(ctx, first)                            // a crash of the leader's machine
//	second, took, err := c.WaitLeader(ctx, first)       // the standby took over after took
//	err = c.Start(ctx, first)                           // rewound, it follows second
//	err = c.WaitHealthy(ctx)                            // and is its synchronous standby again
//	err = c.Switchover(ctx, first)                      // planned: patronictl switchover
//	err = c.Restart(ctx, second)                        // patronictl restart of a replica
//
// The cluster. Nodes are named n1, n2, n3 and listen on 127.0.0.2, 127.0.0.3 and
// 127.0.0.4, on one free port shared by all (Port), with the REST API of each on its
// own address and a second shared free port; etcd listens on free ports of
// 127.0.0.1; Patroni keeps its state there through etcd's v3 API, or its v2 API with
// Options.EtcdV2. Each node has its own data directory and socket directory (two
// postmasters on one port cannot share a socket directory). The first node
// bootstraps the cluster, the others are base backups of it. The bootstrap
// settings make a failover quick (ttl 10 s, loop_wait 1 s, retry_timeout 4 s: a new
// leader about 10 s after a crash), enable use_pg_rewind with wal_log_hints (a
// crashed leader rejoins as a replica) and synchronous_mode unless Options.Async:
// a commit is answered only once the synchronous standby has it, so a failover
// loses nothing committed. pg_hba trusts 127.0.0.0/8 for every user and for
// replication; the superuser is postgres, without a password; max_connections is
// 300, enough for two brokers' pools and the test's own connections. fsync is off:
// the harness crashes processes, never the machine, so what PostgreSQL wrote reaches
// the disk through the page cache anyway.
//
// Faults. Kill is a crash of a node's machine: SIGKILL of its Patroni and, at once,
// of its postmaster and every PostgreSQL process (Patroni alone dying would leave
// PostgreSQL serving). Start brings a killed node back. Switchover and Restart are
// the planned operations, run with patronictl as an operator would. Leader reads
// Patroni's view, which names a dead leader until its key expires; WaitLeader and
// WaitHealthy check PostgreSQL itself (a committed write, pg_stat_replication).
// Cluster methods return errors rather than failing the test, so they may run on
// goroutines of their own.
//
// Requirements. Start skips the test under -short, when not root (PostgreSQL
// refuses to run as root, so every process runs as the user postgres, in a
// directory under /tmp that this user can reach), or when patroni, patronictl,
// etcd or PostgreSQL's server binaries are missing. scripts/ensure-patroni.sh
// installs Debian's patroni, etcd-server and etcd-client, and make test runs it
// before the tests, so in CI the tests run. Starting a two-node cluster takes about
// 15 s, most of it the wait for the synchronous standby.
//
// Cleanup. When the test ends every process the cluster started is killed, even
// when the test failed, and its directory is removed. When the test failed the
// directory's logs/ is kept (its path is logged) with one log per node, n1.log, …
// (Patroni's output and PostgreSQL's server log), etcd.log and patronictl.log, and
// the last lines of each are printed in the test's output.
package patronitest
