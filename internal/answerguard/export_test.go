package answerguard

import "time"

// SetPingIdle changes how long a connection must have been idle for the guard to
// ping it before the pool hands it out (a second by default).
func SetPingIdle(g *Guard, d time.Duration) { g.pingIdle = d }
