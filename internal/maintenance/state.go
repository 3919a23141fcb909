package maintenance

import (
	"sync"
	"time"

	"github.com/queenmq/queen/internal/store"
)

// jobStates is this replica's view of its jobs' cycles: the outcome of the last one
// and when the job last ran and succeeded here. The cluster-wide record of the last
// run anywhere is queen.maintenance_jobs; this one says what each replica did, for
// its heartbeat row.
type jobStates struct {
	mu     sync.Mutex
	byName map[string]*store.ReplicaJob
	order  []string
}

func newJobStates(jobs []Job) *jobStates {
	s := &jobStates{byName: make(map[string]*store.ReplicaJob, len(jobs))}
	for _, j := range jobs {
		if _, dup := s.byName[j.Name()]; dup {
			continue
		}
		s.byName[j.Name()] = &store.ReplicaJob{Name: j.Name()}
		s.order = append(s.order, j.Name())
	}
	return s
}

// record notes one cycle of job name: its outcome, and for a run (ran) when it
// started and the error it ended with. A claim that failed is a cycle, not a run.
func (s *jobStates) record(name string, out Outcome, ran bool, start time.Time, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.byName[name]
	if st == nil {
		return
	}
	st.LastCycle = string(out)
	if !ran {
		return
	}
	at := start.UTC()
	st.LastResult, st.LastRunAt, st.LastError = string(out), &at, ""
	if err != nil {
		st.LastError = err.Error()
	}
	if out == OutcomeSuccess {
		st.LastSuccessAt = &at
	}
}

// list returns a copy of every job's state in the runner's job order.
func (s *jobStates) list() []store.ReplicaJob {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]store.ReplicaJob, 0, len(s.order))
	for _, name := range s.order {
		out = append(out, *s.byName[name])
	}
	return out
}

// JobStates returns this replica's view of every job, in the runner's job order: the
// outcome of the job's last run here (success or error; "" while another replica has
// run every cycle), of its last cycle here (skipped_locked and skipped_not_due too),
// and when the job last ran and last succeeded on this replica (nil before then).
func (r *Runner) JobStates() []store.ReplicaJob { return r.states.list() }
