package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/queenmq/queen/internal/queue"
)

// httpRaw is the raw insert behind HTTP: a net/http server in the bench's own process
// that answers POST /api/v1/push by reading the request, storing batch rows with the
// raw insert ceiling's statement (partitions round robin, as the raw ceiling) and
// answering a push's answer for them (index, status, transactionId, messageId per
// item). It decodes and checks nothing and keeps none of a push's rules (no dedup,
// head, ready row or ordering lock). Driven by the broker's load generator, it
// measures what one HTTP exchange per request costs this machine on top of the raw
// insert: the ceiling of any broker that answers each push over HTTP after its
// commit.
type httpRaw struct {
	srv  *http.Server
	ln   net.Listener
	url  string
	errs chan error
}

// startHTTPRaw serves the raw insert of batch rows per request into the partitions
// pids (in turn) on a free loopback port.
func (d *database) startHTTPRaw(pids []string, payload string, batch int) (*httpRaw, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("http raw ceiling: %w", err)
	}
	ids := queue.NewIDGenerator()
	inserters := sync.Pool{New: func() any { return newRawInserter(ids, payload, batch) }}
	bodies := sync.Pool{New: func() any { return new(bytes.Buffer) }}
	rr := newRoundRobin(len(pids))
	h := &httpRaw{ln: ln, url: "http://" + ln.Addr().String(), errs: make(chan error, 1)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/push", func(w http.ResponseWriter, r *http.Request) {
		body := bodies.Get().(*bytes.Buffer)
		defer bodies.Put(body)
		body.Reset()
		if _, err := body.ReadFrom(r.Body); err != nil {
			http.Error(w, "read request: "+err.Error(), http.StatusBadRequest)
			return
		}
		ri := inserters.Get().(*rawInserter)
		defer inserters.Put(ri)
		pid := pids[rr.take()]
		if err := ri.insert(r.Context(), d, func(int) string { return pid }); err != nil {
			http.Error(w, "raw insert: "+err.Error(), http.StatusInternalServerError)
			return
		}
		body.Reset()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(ri.appendAnswer(body.Bytes()))
	})
	h.srv = &http.Server{Handler: mux, ReadHeaderTimeout: time.Minute}
	go func() {
		if err := h.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			h.errs <- err
		}
	}()
	return h, nil
}

// close stops the server; an error is one its serving loop ended with.
func (h *httpRaw) close(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	err := h.srv.Shutdown(ctx)
	select {
	case serveErr := <-h.errs:
		return errors.Join(err, serveErr)
	default:
		return err
	}
}

// appendAnswer appends the push answer of the rows ri inserted last.
func (ri *rawInserter) appendAnswer(dst []byte) []byte {
	dst = append(dst, '[')
	for i := range ri.msgIDs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"index":`...)
		dst = strconv.AppendInt(dst, int64(i), 10)
		dst = append(dst, `,"status":"queued","transactionId":"`...)
		dst = append(dst, ri.txids[i]...)
		dst = append(dst, `","messageId":"`...)
		dst = append(dst, ri.msgIDs[i]...)
		dst = append(dst, `"}`...)
	}
	return append(dst, ']')
}
