package httpapi

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/queue"
)

// sdkWindows is a small client-side windowed aggregation over the stream routes, the
// way the SDKs' Stream runtime drives them: pop a batch with the query's consumer
// group, read the state of the windows the batch touches, fold the events in, emit
// (push to the sink and delete) every window the partition's watermark has passed,
// and commit the state ops, the sink items and the ack of the batch's last message
// in one cycle. The event time of a message is its payload's "ts" or else its
// createdAt, in epoch milliseconds with the microseconds as a fraction (as a Python
// runtime reads it); the watermark is the greatest event time seen; a window
// [start, start+size) holds the events with start <= time < start+size.
type sdkWindows struct {
	b                  *streamBundle
	queryID, src, sink string
	group              string
	size, slide        float64 // ms; slide == size is a tumbling window
	batch              int
	emitted            map[string]float64 // window key -> sum of its first emission (the one the sink keeps)
	emitCount          map[string]int
}

// sdkAcc is a window's accumulator, its state value.
type sdkAcc struct {
	Sum         float64 `json:"sum"`
	Count       int     `json:"count"`
	Key         string  `json:"key"`
	WindowStart float64 `json:"windowStart"`
	WindowEnd   float64 `json:"windowEnd"`
}

// eventTimeMs is the event time of a popped message: its payload's "ts" when it has
// one (an event-time extractor), else its createdAt.
func eventTimeMs(t *testing.T, m map[string]any) float64 {
	t.Helper()
	if ts, ok := m["data"].(map[string]any)["ts"].(float64); ok {
		return ts
	}
	ts, err := time.Parse(time.RFC3339Nano, m["createdAt"].(string))
	require.NoError(t, err)
	return float64(ts.UnixMicro()) / 1000
}

// starts returns the starts of the windows holding an event at ms.
func (w *sdkWindows) starts(ms float64) []float64 {
	last := math.Floor(ms/w.slide) * w.slide
	var out []float64
	for s := last; s > ms-w.size; s -= w.slide {
		out = append(out, s)
	}
	return out
}

// winKey is the state key of the window starting at start for key.
func winKey(start float64, key string) string {
	return "win\u001f" + strconv.FormatFloat(start, 'f', -1, 64) + "\u001f" + key
}

// step runs one pop and its cycles; it reports how many messages it handled.
func (w *sdkWindows) step(t *testing.T) int {
	t.Helper()
	r := w.b.get(t, fmt.Sprintf("/api/v1/pop/queue/%s?consumerGroup=%s&batch=%d&wait=false", w.src, w.group, w.batch))
	if r.status == http.StatusNoContent {
		return 0
	}
	requireStatus(t, http.StatusOK, r)
	msgs, _ := r.object(t)["messages"].([]any)
	byPart := map[string][]map[string]any{}
	var order []string
	for _, m := range msgs {
		m := m.(map[string]any)
		pid := m["partitionId"].(string)
		if _, ok := byPart[pid]; !ok {
			order = append(order, pid)
		}
		byPart[pid] = append(byPart[pid], m)
	}
	for _, pid := range order {
		w.cycle(t, pid, byPart[pid])
	}
	return len(msgs)
}

// stateGet reads the shard's state rows matching body.
func (w *sdkWindows) stateGet(t *testing.T, pid string, body map[string]any) []map[string]any {
	t.Helper()
	body["query_id"], body["partition_id"] = w.queryID, pid
	r := w.b.postJSON(t, "/streams/v1/state/get", body)
	requireStatus(t, http.StatusOK, r)
	var out struct {
		Rows []map[string]any `json:"rows"`
	}
	require.NoError(t, json.Unmarshal(r.body, &out))
	return out.Rows
}

// cycle folds one partition's messages of a pop into their windows, emits the ripe
// windows and commits it all with the ack of the last message.
func (w *sdkWindows) cycle(t *testing.T, pid string, msgs []map[string]any) {
	t.Helper()
	const wmKey = "__watermark"
	keys := []string{wmKey}
	for _, m := range msgs {
		k := m["data"].(map[string]any)["key"].(string)
		for _, s := range w.starts(eventTimeMs(t, m)) {
			keys = append(keys, winKey(s, k))
		}
	}
	accs := map[string]*sdkAcc{}
	wm := math.Inf(-1)
	for _, row := range w.stateGet(t, pid, map[string]any{"keys": keys}) {
		raw, _ := json.Marshal(row["value"])
		if row["key"] == wmKey {
			require.NoError(t, json.Unmarshal(raw, &wm))
			continue
		}
		var a sdkAcc
		require.NoError(t, json.Unmarshal(raw, &a))
		accs[row["key"].(string)] = &a
	}
	for _, m := range msgs {
		d := m["data"].(map[string]any)
		k, v := d["key"].(string), d["v"].(float64)
		ms := eventTimeMs(t, m)
		wm = math.Max(wm, ms)
		for _, s := range w.starts(ms) {
			sk := winKey(s, k)
			a := accs[sk]
			if a == nil {
				a = &sdkAcc{Key: k, WindowStart: s, WindowEnd: s + w.size}
				accs[sk] = a
			}
			a.Sum += v
			a.Count++
		}
	}
	// The stored windows the watermark has passed, and those of this batch.
	ripe := map[string]*sdkAcc{}
	for _, row := range w.stateGet(t, pid, map[string]any{"key_prefix": "win\u001f", "ripe_at_or_before": wm}) {
		k := row["key"].(string)
		if a, ok := accs[k]; ok {
			ripe[k] = a
			continue
		}
		raw, _ := json.Marshal(row["value"])
		var a sdkAcc
		require.NoError(t, json.Unmarshal(raw, &a))
		ripe[k] = &a
	}
	for k, a := range accs {
		if a.WindowEnd <= wm {
			ripe[k] = a
		}
	}
	var ops, items []map[string]any
	for k, a := range accs {
		if ripe[k] == nil {
			ops = append(ops, map[string]any{"type": "upsert", "key": k, "value": a})
		}
	}
	for k, a := range ripe {
		ops = append(ops, map[string]any{"type": "delete", "key": k})
		items = append(items, map[string]any{"queue": w.sink, "partition": a.Key, "transactionId": k, "payload": a})
	}
	ops = append(ops, map[string]any{"type": "upsert", "key": wmKey, "value": wm})
	last := msgs[len(msgs)-1]
	res := w.b.cycle(t, map[string]any{"query_id": w.queryID, "partition_id": pid, "consumer_group": w.group,
		"state_ops": ops, "push_items": items,
		"ack": map[string]any{"transactionId": last["transactionId"], "leaseId": last["leaseId"], "count": len(msgs)}})
	require.Equal(t, true, res["success"], "%v", res)
	for _, it := range items {
		a := it["payload"].(*sdkAcc)
		if w.emitCount[it["transactionId"].(string)] == 0 { // the sink keeps the first (dedup by transactionId)
			w.emitted[it["transactionId"].(string)] = a.Sum
		}
		w.emitCount[it["transactionId"].(string)]++
	}
}

// sdkEvent is one source event of a test: its key (= source partition), value and
// event time (payload "ts"; 0 = none, the event time is then createdAt).
type sdkEvent struct {
	key string
	v   float64
	ts  float64
}

// newSDKWindows registers the query name over name-src into name-sink.
func newSDKWindows(t *testing.T, b *streamBundle, name string, size, slide float64) *sdkWindows {
	t.Helper()
	src, sink := name+"-src", name+"-sink"
	return &sdkWindows{b: b, queryID: b.register(t, name, src, sink, "h"), src: src, sink: sink,
		group: "streams." + name, size: size, slide: slide, batch: 10,
		emitted: map[string]float64{}, emitCount: map[string]int{}}
}

// push pushes the events one by one, transaction ids e<n>, and returns n.
func (w *sdkWindows) push(t *testing.T, n int, events ...sdkEvent) int {
	t.Helper()
	for _, e := range events {
		n++
		payload := map[string]any{"key": e.key, "v": e.v}
		if e.ts != 0 {
			payload["ts"] = e.ts
		}
		requireStatus(t, http.StatusCreated, w.b.postJSON(t, "/api/v1/push", map[string]any{"items": []any{
			map[string]any{"queue": w.src, "partition": e.key, "transactionId": fmt.Sprintf("e%d", n), "payload": payload}}}))
	}
	return n
}

// drain runs steps until a pop finds nothing.
func (w *sdkWindows) drain(t *testing.T) {
	t.Helper()
	for w.step(t) > 0 {
	}
}

// check compares every emitted window with want (window key -> sum): emitted once,
// with the sum of the events it holds.
func (w *sdkWindows) check(t *testing.T, want map[string]float64) {
	t.Helper()
	var bad []string
	for k, v := range w.emitted {
		if want[k] != v || w.emitCount[k] != 1 {
			bad = append(bad, fmt.Sprintf("%q: emitted %v (x%d), want %v", k, v, w.emitCount[k], want[k]))
		}
	}
	sort.Strings(bad)
	require.Empty(t, bad)
}

// TestStreamWindowBoundaryMicroseconds: event times in epoch milliseconds carry
// microseconds (a Python runtime's createdAt, or its own clock), and a batch can end
// a few microseconds before a window's end. ripe_at_or_before must compare that bound
// exactly: rounded (to the 15 significant digits of a float8 cast to numeric, as
// before), a bound 4 µs before the end took the window for ripe, the runtime emitted
// it early, and the event 2 µs before the end, first of the next batch, was left out
// of its window: per-key sums one event short (614 instead of 615 …), and sliding
// windows emitted twice.
func TestStreamWindowBoundaryMicroseconds(t *testing.T) {
	t.Parallel()
	b := setupStreams(t, Options{})
	const end = 1714125600000.0 // a window boundary, epoch ms
	for _, tc := range []struct {
		name        string
		size, slide float64
	}{{"tumbling", 1000, 1000}, {"sliding", 1000, 500}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newSDKWindows(t, b, "boundary-"+tc.name, tc.size, tc.slide)
			// Three batches per key: the window's first events, one event 4 µs
			// before its end, then one 2 µs before its end and one in the next window.
			var batches [3][]sdkEvent
			for k, key := range []string{"k1", "k2", "k3"} {
				base := float64(200 * (k + 1))
				batches[0] = append(batches[0], sdkEvent{key, base, end - 900}, sdkEvent{key, base, end - 600},
					sdkEvent{key, base + 5, end - 300})
				batches[1] = append(batches[1], sdkEvent{key, 9, end - 0.004})
				batches[2] = append(batches[2], sdkEvent{key, 1, end - 0.002}, sdkEvent{key, 7, end + 600})
			}
			n := 0
			want := map[string]float64{}
			for _, events := range batches {
				n = w.push(t, n, events...)
				w.drain(t)
				for _, e := range events {
					for _, s := range w.starts(e.ts) {
						want[winKey(s, e.key)] += e.v
					}
				}
			}

			for _, key := range []string{"k1", "k2", "k3"} {
				require.Contains(t, w.emitted, winKey(end-tc.size, key), "the window before the boundary is emitted")
			}
			if tc.slide == tc.size {
				require.Equal(t, []float64{615, 1215, 1815}, []float64{w.emitted[winKey(end-1000, "k1")],
					w.emitted[winKey(end-1000, "k2")], w.emitted[winKey(end-1000, "k3")]})
			}
			w.check(t, want)
		})
	}
}

// TestStreamWindowsOverCreatedAt runs tumbling and sliding windows over the event
// time the broker reports (createdAt) while keyed events keep arriving, and compares
// every emitted window with the events the source holds in it: none lost, none
// counted twice, none on the wrong side of a boundary.
func TestStreamWindowsOverCreatedAt(t *testing.T) {
	t.Parallel()
	b := setupStreams(t, Options{})
	for _, tc := range []struct {
		name        string
		size, slide float64
	}{{"tumbling", 7, 7}, {"sliding", 9, 3}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newSDKWindows(t, b, "created-"+tc.name, tc.size, tc.slide)
			w.batch = 5
			n := 0
			for round := range 30 {
				var events []sdkEvent
				for _, k := range []string{"a", "b", "c"} {
					for range 1 + round%3 {
						events = append(events, sdkEvent{key: k, v: float64(n + len(events) + 1)})
					}
				}
				n = w.push(t, n, events...)
				w.step(t)
			}
			w.drain(t)
			rows, err := b.db.Query(t.Context(), `SELECT p.name, (m.payload->>'v')::float8, m.created_at
				FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id JOIN queen.queues q ON q.id = p.queue_id
				WHERE q.name = $1`, w.src)
			require.NoError(t, err)
			want := map[string]float64{}
			for rows.Next() {
				var k string
				var v float64
				var ts time.Time
				require.NoError(t, rows.Scan(&k, &v, &ts))
				for _, s := range w.starts(float64(ts.UnixMicro()) / 1000) {
					want[winKey(s, k)] += v
				}
			}
			require.NoError(t, rows.Err())
			require.NotEmpty(t, w.emitted)
			w.check(t, want)
		})
	}
}

// TestStreamStateRipeBoundIsExact: ripe_at_or_before compares a bound with a fraction
// of a millisecond exactly, on both sides of a window end (a float8 cast to numeric
// kept 15 significant digits: 1714125599999.996 became 1714125600000).
func TestStreamStateRipeBoundIsExact(t *testing.T) {
	t.Parallel()
	b := setupStreams(t, Options{})
	id := b.register(t, "ripe.exact", "ripe-src", "", "h")
	pid := queue.NewIDGenerator().New()
	const end = 1714125600000.0
	m := b.cycle(t, map[string]any{"query_id": id, "partition_id": pid, "state_ops": []map[string]any{
		{"type": "upsert", "key": "at-end", "value": map[string]any{"windowEnd": end}},
		{"type": "upsert", "key": "1us-before", "value": map[string]any{"windowEnd": end - 0.001}},
		{"type": "upsert", "key": "3us-after", "value": map[string]any{"windowEnd": end + 0.003}},
	}})
	require.Equal(t, true, m["success"], "%v", m)
	w := &sdkWindows{b: b, queryID: id}
	for _, tc := range []struct {
		bound float64
		want  []string
	}{
		{end - 0.004, nil},
		{end - 0.001, []string{"1us-before"}},
		{end - 0.0005, []string{"1us-before"}},
		{end, []string{"1us-before", "at-end"}},
		{end + 0.002, []string{"1us-before", "at-end"}},
		{end + 0.003, []string{"1us-before", "3us-after", "at-end"}},
	} {
		var got []string
		for _, row := range w.stateGet(t, pid, map[string]any{"ripe_at_or_before": tc.bound}) {
			got = append(got, row["key"].(string))
		}
		require.Equal(t, tc.want, got, "ripe_at_or_before %s", strconv.FormatFloat(tc.bound, 'f', -1, 64))
	}
}
