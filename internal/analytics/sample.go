package analytics

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"time"

	"github.com/queenmq/queen/internal/api"
)

// stat is the wire summary of one process gauge plus the number of samples behind its
// average, so that summaries of different spans merge with the right weights.
type stat struct {
	api.Stat
	n int64
}

// observe adds one sample.
func (s *stat) observe(v float64) {
	if s.n == 0 {
		s.Min, s.Max = v, v
	} else {
		s.Min, s.Max = math.Min(s.Min, v), math.Max(s.Max, v)
	}
	s.Avg = (s.Avg*float64(s.n) + v) / float64(s.n+1)
	s.Last = v
	s.n++
}

// merge combines a later summary o into s.
func (s *stat) merge(o stat) {
	if o.n == 0 {
		return
	}
	if s.n == 0 {
		*s = o
		return
	}
	s.Min, s.Max = math.Min(s.Min, o.Min), math.Max(s.Max, o.Max)
	s.Avg = (s.Avg*float64(s.n) + o.Avg*float64(o.n)) / float64(s.n+o.n)
	s.Last = o.Last
	s.n += o.n
}

// systemSample groups process gauges: group → key → summary, e.g.
// memory → rss_bytes → {avg,min,max,last}, as system_activity stores them and GET
// /api/v1/analytics/system-metrics reports them.
type systemSample map[string]map[string]stat

// observe records value v of group/key.
func (m systemSample) observe(group, key string, v float64) {
	g := m[group]
	if g == nil {
		g = make(map[string]stat)
		m[group] = g
	}
	st := g[key]
	st.observe(v)
	g[key] = st
}

// merge combines a later aggregate o into m; a summary of o without a sample count
// counts as samples samples.
func (m systemSample) merge(o systemSample, samples int64) {
	for group, keys := range o {
		g := m[group]
		if g == nil {
			g = make(map[string]stat, len(keys))
			m[group] = g
		}
		for key, st := range keys {
			if st.n == 0 {
				st.n = samples
			}
			cur := g[key]
			cur.merge(st)
			g[key] = cur
		}
	}
}

func (m systemSample) clone() systemSample {
	out := make(systemSample, len(m))
	for g, keys := range m {
		out[g] = maps.Clone(keys)
	}
	return out
}

// wire returns the summaries without their sample counts.
func (m systemSample) wire() map[string]map[string]api.Stat {
	out := make(map[string]map[string]api.Stat, len(m))
	for group, keys := range m {
		g := make(map[string]api.Stat, len(keys))
		for k, st := range keys {
			g[k] = st.Stat
		}
		out[group] = g
	}
	return out
}

// encode renders m as the stored JSON object (the sample counts are not stored).
func (m systemSample) encode() (json.RawMessage, error) {
	doc, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("analytics: encode system metrics: %w", err)
	}
	return doc, nil
}

// decodeSample reads a stored aggregate of samples samples taken in bucket.
func decodeSample(doc json.RawMessage, samples int64, bucket time.Time) (systemSample, error) {
	var m systemSample
	if err := json.Unmarshal(doc, &m); err != nil {
		return nil, fmt.Errorf("analytics: decode system metrics of %s: %w", bucket.Format(time.RFC3339), err)
	}
	for _, keys := range m {
		for k, st := range keys {
			st.n = samples
			keys[k] = st
		}
	}
	return m, nil
}
