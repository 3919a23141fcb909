package spool

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// Segment and record framing (see doc.go for the picture).
const (
	// headerSize is the size of a segment's file header.
	headerSize = 8
	// frameHeaderSize is magic (4) + body length (4) + CRC-32C (4).
	frameHeaderSize = 12
	// MaxRecordBytes bounds one record's body. A length field above it cannot be
	// valid, so the reader treats it as corruption instead of allocating it.
	MaxRecordBytes = 256 << 20
	// upstreamMaxRecord is upstream's limit: its reader stops at a longer record.
	upstreamMaxRecord = 10 << 20
	// scanChunk is how much the reader reads at a time while looking for the next
	// record after a corrupt one.
	scanChunk = 64 << 10
)

// segmentHeader starts every queen segment: "QSPL", then the format version (1) as
// a little-endian uint32.
var segmentHeader = [headerSize]byte{'Q', 'S', 'P', 'L', 1, 0, 0, 0}

// frameMagic starts every record. 0xF5 never occurs in UTF-8, so the magic cannot
// appear inside a JSON body written by encoding/json: after a corrupt region the
// reader finds the next record by looking for it, and the CRC rejects the rare
// false match inside a length or checksum field.
var frameMagic = [4]byte{0xF5, 'Q', 'S', 0x01}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// frameCRC is the CRC-32C of the length field followed by the body, so a flipped
// bit in the length is caught as surely as one in the body.
func frameCRC(lenField, body []byte) uint32 {
	return crc32.Update(crc32.Checksum(lenField, castagnoli), castagnoli, body)
}

// appendFrame appends one framed record holding body to dst.
func appendFrame(dst, body []byte) []byte {
	var h [frameHeaderSize]byte
	copy(h[:4], frameMagic[:])
	binary.LittleEndian.PutUint32(h[4:8], uint32(len(body)))
	binary.LittleEndian.PutUint32(h[8:12], frameCRC(h[4:8], body))
	dst = append(dst, h[:]...)
	return append(dst, body...)
}

// Frame is one intact record found by a reader: the body and where it lies.
type Frame struct {
	// Offset is where the record starts; End is the offset just after it.
	Offset, End int64
	// Body is the record's JSON event.
	Body []byte
}

// Corruption is a byte range a reader skipped because no intact record starts in
// it: a torn write, a flipped bit, garbage. Tail means it runs to the end of the
// data (typically the last record of a crashed write).
type Corruption struct {
	Offset, Size int64
	Reason       string
	Tail         bool
}

func (c Corruption) String() string {
	kind := "corrupt region"
	if c.Tail {
		kind = "torn or corrupt tail"
	}
	return fmt.Sprintf("%s at offset %d (%d bytes): %s", kind, c.Offset, c.Size, c.Reason)
}

// reader decodes records from a byte range of a file. next returns one frame, or one
// corrupt region it skipped, or io.EOF; the two kinds of result tile the range.
type reader interface {
	next() (Frame, *Corruption, error)
}

// frameReader reads queen's CRC-framed records from r between off and end.
type frameReader struct {
	r        io.ReaderAt
	off, end int64
}

func newFrameReader(r io.ReaderAt, off, end int64) *frameReader {
	return &frameReader{r: r, off: off, end: end}
}

func (fr *frameReader) next() (Frame, *Corruption, error) {
	if fr.off >= fr.end {
		return Frame{}, nil, io.EOF
	}
	f, reason, err := fr.frameAt(fr.off)
	if err != nil {
		return Frame{}, nil, err
	}
	if reason == "" {
		fr.off = f.End
		return f, nil, nil
	}
	start := fr.off
	next, err := fr.resync(start + 1)
	if err != nil {
		return Frame{}, nil, err
	}
	fr.off = next
	return Frame{}, &Corruption{Offset: start, Size: next - start, Reason: reason, Tail: next >= fr.end}, nil
}

// frameAt validates the record at off. It returns the frame, or the reason it is
// not an intact record (with a nil error); err is an I/O failure.
func (fr *frameReader) frameAt(off int64) (Frame, string, error) {
	if fr.end-off < frameHeaderSize {
		return Frame{}, "truncated record header", nil
	}
	var h [frameHeaderSize]byte
	if err := readFull(fr.r, h[:], off); err != nil {
		return Frame{}, "", err
	}
	if !bytes.Equal(h[:4], frameMagic[:]) {
		return Frame{}, "no record marker", nil
	}
	n := int64(binary.LittleEndian.Uint32(h[4:8]))
	if n > MaxRecordBytes {
		return Frame{}, "record length out of range", nil
	}
	if fr.end-off-frameHeaderSize < n {
		return Frame{}, "truncated record", nil
	}
	body := make([]byte, n)
	if err := readFull(fr.r, body, off+frameHeaderSize); err != nil {
		return Frame{}, "", err
	}
	if binary.LittleEndian.Uint32(h[8:12]) != frameCRC(h[4:8], body) {
		return Frame{}, "checksum mismatch", nil
	}
	return Frame{Offset: off, End: off + frameHeaderSize + n, Body: body}, "", nil
}

// resync returns the offset of the first intact record at or after from, or end.
func (fr *frameReader) resync(from int64) (int64, error) {
	buf := make([]byte, scanChunk+len(frameMagic)-1)
	for pos := from; pos < fr.end; pos += scanChunk {
		n := int64(len(buf))
		if fr.end-pos < n {
			n = fr.end - pos
		}
		chunk := buf[:n]
		if err := readFull(fr.r, chunk, pos); err != nil {
			return 0, err
		}
		for i := 0; ; {
			j := bytes.Index(chunk[i:], frameMagic[:])
			if j < 0 {
				break
			}
			cand := pos + int64(i+j)
			if cand >= pos+scanChunk {
				break // the next window starts there
			}
			if _, reason, err := fr.frameAt(cand); err != nil {
				return 0, err
			} else if reason == "" {
				return cand, nil
			}
			i += j + 1
		}
	}
	return fr.end, nil
}

// upstreamReader reads upstream Queen's failover files: a 4-byte little-endian
// length, then that many bytes of JSON, with no checksum. Like upstream's reader it
// stops at a zero length, a length over 10 MiB or a short record; what remains is
// reported as one corrupt tail. A body that is not a JSON object is reported as a
// corrupt region and skipped (upstream skips it too).
type upstreamReader struct {
	r        io.ReaderAt
	off, end int64
}

func newUpstreamReader(r io.ReaderAt, off, end int64) *upstreamReader {
	return &upstreamReader{r: r, off: off, end: end}
}

func (ur *upstreamReader) next() (Frame, *Corruption, error) {
	if ur.off >= ur.end {
		return Frame{}, nil, io.EOF
	}
	tail := func(reason string) (Frame, *Corruption, error) {
		c := &Corruption{Offset: ur.off, Size: ur.end - ur.off, Reason: reason, Tail: true}
		ur.off = ur.end
		return Frame{}, c, nil
	}
	if ur.end-ur.off < 4 {
		return tail("truncated record header")
	}
	var h [4]byte
	if err := readFull(ur.r, h[:], ur.off); err != nil {
		return Frame{}, nil, err
	}
	n := int64(binary.LittleEndian.Uint32(h[:]))
	switch {
	case n == 0:
		return tail("zero record length")
	case n > upstreamMaxRecord:
		return tail("record length out of range")
	case ur.end-ur.off-4 < n:
		return tail("truncated record")
	}
	body := make([]byte, n)
	if err := readFull(ur.r, body, ur.off+4); err != nil {
		return Frame{}, nil, err
	}
	start, end := ur.off, ur.off+4+n
	ur.off = end
	if !isJSONObject(body) {
		return Frame{}, &Corruption{Offset: start, Size: end - start, Reason: "record is not a JSON object", Tail: end >= ur.end}, nil
	}
	return Frame{Offset: start, End: end, Body: body}, nil, nil
}

func readFull(r io.ReaderAt, p []byte, off int64) error {
	n, err := r.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF // the file shrank under us
	}
	return fmt.Errorf("spool: read at offset %d: %w", off, err)
}
