package spool

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

// frames builds a byte string of framed records with the given bodies.
func frames(bodies ...string) []byte {
	var b []byte
	for _, body := range bodies {
		b = appendFrame(b, []byte(body))
	}
	return b
}

// readAll drains rd, returning the bodies and the corrupt regions in order, and
// checks that frames and regions tile [start, end) exactly.
func readAll(t testing.TB, rd reader, start, end int64) ([]string, []Corruption) {
	t.Helper()
	var bodies []string
	var bad []Corruption
	pos := start
	for i := 0; ; i++ {
		fr, c, err := rd.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("next: %v", err)
		}
		if i > int(end-start)+1 {
			t.Fatalf("reader does not advance")
		}
		if c != nil {
			if c.Offset != pos || c.Size <= 0 {
				t.Fatalf("corruption %+v does not continue at %d", c, pos)
			}
			pos += c.Size
			bad = append(bad, *c)
			continue
		}
		if fr.Offset != pos || fr.End <= fr.Offset {
			t.Fatalf("frame at %d..%d does not continue at %d", fr.Offset, fr.End, pos)
		}
		pos = fr.End
		bodies = append(bodies, string(fr.Body))
	}
	if pos != end {
		t.Fatalf("reader stopped at %d of %d", pos, end)
	}
	return bodies, bad
}

func TestFrameReader(t *testing.T) {
	t.Parallel()
	rec := func(i int) string { return fmt.Sprintf(`{"queue":"q","partition":"p","transactionId":"t%d"}`, i) }
	one := frames(rec(1))
	three := frames(rec(1), rec(2), rec(3))
	secondAt := int64(len(one))
	flip := func(b []byte, at int64) []byte {
		b = bytes.Clone(b)
		b[at] ^= 0x40
		return b
	}
	for _, tc := range []struct {
		name       string
		data       []byte
		want       []string
		wantBad    int
		wantTail   bool
		wantReason string
	}{
		{name: "Empty", data: nil},
		{name: "Intact", data: three, want: []string{rec(1), rec(2), rec(3)}},
		{name: "TornTail", data: three[:len(three)-5], want: []string{rec(1), rec(2)}, wantBad: 1, wantTail: true,
			wantReason: "truncated record"},
		{name: "TornHeader", data: three[:2*secondAt+7], want: []string{rec(1), rec(2)}, wantBad: 1, wantTail: true,
			wantReason: "truncated record header"},
		{name: "FlippedBodyByte", data: flip(three, secondAt+frameHeaderSize+3), want: []string{rec(1), rec(3)},
			wantBad: 1, wantReason: "checksum mismatch"},
		{name: "FlippedLengthByte", data: flip(three, secondAt+4), want: []string{rec(1), rec(3)}, wantBad: 1},
		{name: "FlippedCRCByte", data: flip(three, secondAt+9), want: []string{rec(1), rec(3)}, wantBad: 1,
			wantReason: "checksum mismatch"},
		{name: "FlippedMarker", data: flip(three, secondAt), want: []string{rec(1), rec(3)}, wantBad: 1,
			wantReason: "no record marker"},
		{name: "GarbageBetween", data: append(append(bytes.Clone(one), "garbage\xf5QS"...), frames(rec(2))...),
			want: []string{rec(1), rec(2)}, wantBad: 1},
		{name: "LeadingGarbage", data: append([]byte("xx"), three...), want: []string{rec(1), rec(2), rec(3)}, wantBad: 1},
		{name: "OnlyGarbage", data: []byte("not a spool at all"), wantBad: 1, wantTail: true},
		{name: "HugeLength", data: append([]byte{0xF5, 'Q', 'S', 1, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}, three...),
			want: []string{rec(1), rec(2), rec(3)}, wantBad: 1, wantReason: "record length out of range"},
		{name: "MarkerInsideBody", data: frames("{\"x\":\"\xf5QS\x01\"}", rec(2)), want: []string{"{\"x\":\"\xf5QS\x01\"}", rec(2)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, bad := readAll(t, newFrameReader(bytes.NewReader(tc.data), 0, int64(len(tc.data))), 0, int64(len(tc.data)))
			require.Equal(t, tc.want, got)
			require.Len(t, bad, tc.wantBad, "%v", bad)
			if tc.wantBad > 0 {
				require.Equal(t, tc.wantTail, bad[len(bad)-1].Tail, "%v", bad)
				if tc.wantReason != "" {
					require.Equal(t, tc.wantReason, bad[0].Reason)
				}
			}
		})
	}
}

// TestFrameReaderResyncAcrossChunks puts a corrupt region larger than one scan
// window before an intact record.
func TestFrameReaderResyncAcrossChunks(t *testing.T) {
	t.Parallel()
	data := append(frames(`{"a":1}`), bytes.Repeat([]byte{0xF5, 'Q'}, scanChunk)...)
	data = append(data, frames(`{"b":2}`)...)
	got, bad := readAll(t, newFrameReader(bytes.NewReader(data), 0, int64(len(data))), 0, int64(len(data)))
	require.Equal(t, []string{`{"a":1}`, `{"b":2}`}, got)
	require.Len(t, bad, 1)
	require.Equal(t, int64(2*scanChunk), bad[0].Size)
}

// upstreamFile builds an upstream failover file: 4-byte little-endian length + JSON.
func upstreamFile(bodies ...string) []byte {
	var b []byte
	for _, body := range bodies {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(body)))
		b = append(b, body...)
	}
	return b
}

func TestUpstreamReader(t *testing.T) {
	t.Parallel()
	a := `{"queue":"q","partition":"Default","payload":{"n":1},"failover":true,"transactionId":"a"}`
	b := `{"queue":"q","partition":"Default","payload":null,"failover":true,"transactionId":"b"}`
	full := upstreamFile(a, b)
	for _, tc := range []struct {
		name    string
		data    []byte
		want    []string
		wantBad int
	}{
		{name: "Intact", data: full, want: []string{a, b}},
		{name: "TornTail", data: full[:len(full)-3], want: []string{a}, wantBad: 1},
		{name: "NotJSONSkipped", data: upstreamFile(a, "not json", b), want: []string{a, b}, wantBad: 1},
		{name: "ZeroLengthStops", data: append(upstreamFile(a), append([]byte{0, 0, 0, 0}, upstreamFile(b)...)...),
			want: []string{a}, wantBad: 1},
		{name: "OverTenMiBStops", data: append(upstreamFile(a), 0xff, 0xff, 0xff, 0x7f, '{', '}'),
			want: []string{a}, wantBad: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, bad := readAll(t, newUpstreamReader(bytes.NewReader(tc.data), 0, int64(len(tc.data))), 0, int64(len(tc.data)))
			require.Equal(t, tc.want, got)
			require.Len(t, bad, tc.wantBad)
		})
	}
}

// FuzzFrameReader feeds arbitrary bytes to the record reader: it must not panic or
// loop, frames and corrupt regions must tile the input, every frame must carry a
// valid checksum, and intact records appended after the garbage must all be found.
// `go test` runs the seeds (and testdata/fuzz/FuzzFrameReader); `go test -fuzz
// FuzzFrameReader ./internal/spool` explores.
func FuzzFrameReader(f *testing.F) {
	three := frames(`{"queue":"q","transactionId":"1"}`, `{"queue":"q","transactionId":"2"}`, `{}`)
	f.Add([]byte{})
	f.Add(three)
	f.Add(three[:len(three)-4])
	f.Add(append([]byte{0xF5, 'Q', 'S', 1, 0xff, 0xff, 0xff, 0x0f}, three...))
	flipped := bytes.Clone(three)
	flipped[20] ^= 1
	f.Add(flipped)
	f.Add(bytes.Repeat(frameMagic[:], 10))
	f.Fuzz(func(t *testing.T, data []byte) {
		end := int64(len(data))
		_, _ = readAll(t, newFrameReader(bytes.NewReader(data), 0, end), 0, end)

		// Whatever precedes them, two intact records at the end are found, as long
		// as the garbage does not run into them as a valid-looking prefix: give the
		// reader a clean boundary by checking the last two bodies only.
		tail := frames(`{"sentinel":1}`, `{"sentinel":2}`)
		all := append(bytes.Clone(data), tail...)
		got, _ := readAll(t, newFrameReader(bytes.NewReader(all), 0, int64(len(all))), 0, int64(len(all)))
		require.GreaterOrEqual(t, len(got), 1)
		require.Equal(t, `{"sentinel":2}`, got[len(got)-1], "the last intact record is always found")
		for _, body := range got {
			require.LessOrEqual(t, len(body), MaxRecordBytes)
		}
	})
}

// FuzzUpstreamReader: upstream files of any content are read without panic, and the
// results tile the input.
func FuzzUpstreamReader(f *testing.F) {
	f.Add(upstreamFile(`{"queue":"q"}`, `{"queue":"r"}`))
	f.Add([]byte{1, 0, 0, 0})
	f.Add([]byte{0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		end := int64(len(data))
		bodies, _ := readAll(t, newUpstreamReader(bytes.NewReader(data), 0, end), 0, end)
		for _, b := range bodies {
			require.True(t, isJSONObject([]byte(b)))
		}
	})
}
