// Package appliance is the shell both daemons, queen and queen-proxy, run in: the
// parts every long-running unit of the package needs and that know nothing of what
// the unit serves. It takes plain values and callbacks, never a configuration.
//
// A run goes through these stages:
//
//  1. Open. Each part is built and registers its close on an Undo stack at the place
//     where it is opened; when a later part refuses to open, Unwind closes what was
//     opened, newest first, and the run ends before anything started.
//  2. Start. A Lifecycle runs the long-running components, each in a Tier: the first
//     component to fail starts the stop, and its error is the run's.
//  3. Ready. The daemon tells systemd (READY=1); its Watchdog sends keep-alives while
//     a Probe proves the HTTP accept loops and handler chains make progress.
//  4. Not ready. The stop begins (a signal or a failure, LogStopCause says which):
//     the daemon's readiness check answers 503 while it still serves.
//  5. Shutdown delay. It keeps serving for a while (WaitDelay), so that load
//     balancers notice before the listeners close.
//  6. Stop accepting. Server.StopAccepting closes the listeners; the grace period
//     starts.
//  7. Drain. Server.Drain waits for the requests in flight, then closes what is left.
//  8. Stop the background components, tier by tier; close storage; "stopped".
//
// RunStages runs the daemon's own list of stages in order and logs each. Around it:
// listeners from systemd socket activation (Listen, NamedListeners), journald
// priority prefixes on the log lines (NewLogger), the HTTP server timeouts
// (NewHTTPServer), systemd notifications (NewNotifier, NotifyWarn) and a loop for
// SIGHUP (RunSignals).
package appliance
