package proxy

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Resumable POST streams on --listen (docs/proxy.md, "Resuming a
// stream"). The SDK's server transport answers every request of a
// session on the POST's event stream, but primes a stream (an event with
// an id and no data, so that a client that loses the stream before the
// answer can resume it) only behind its own HTTP handler, which the proxy
// does not use. So the proxy does it around the transport:
//
//   - The transport is given an EventStore (replayStore) of the session:
//     every message it writes on a POST's stream is appended to the
//     stream's buffer first — also after the client went away — and the
//     store writes it to whoever holds the stream: the POST, or a GET
//     that resumed it. What the transport writes to the POST's response
//     itself is dropped once the stream is primed (it is the same
//     message, without the proxy's event id).
//   - The stream is primed the moment the session reads the request the
//     POST carries (resumeConn.Read): the transport has then accepted the
//     POST as an event stream, so nothing it may still refuse is lost.
//   - A GET with Last-Event-ID is answered here, never by the transport:
//     the events of that stream after the id, from this session's buffer
//     only, then the rest as it comes. Nothing is sent to the server: a
//     resumed stream never runs a call again.
//
// Event ids are "<stream>_<n>": 128 random bits naming the stream within
// its session, n = 0 for the priming event and 1, 2, … for the messages.

const (
	// maxReplayStreams caps the streams of one session kept for
	// resumption; past it the oldest is forgotten.
	maxReplayStreams = 64
	// maxReplayBytes caps the bytes of events one session keeps for
	// resumption; past it the oldest streams are forgotten (a stream
	// longer than that alone is delivered but not kept).
	maxReplayBytes = 4 << 20
	// replayTTL is how long a stream is kept for resumption once its
	// answer was written.
	replayTTL = time.Minute
	// replayRetry is the reconnection delay the priming event suggests.
	replayRetry = "1000"
	// streamHeader carries a POST's stream name to the session's reader
	// (resumeConn.Read) on the request the transport hands over; a
	// client's own header of that name is replaced or removed.
	streamHeader      = "X-Mcpx-Policy-Stream"
	lastEventIDHeader = "Last-Event-ID"
)

// replayStore is one session's resumable POST streams. It is the SDK
// transport's EventStore of that session. Safe for concurrent use.
type replayStore struct {
	mu      sync.Mutex
	streams map[string]*replayStream // resumable, by name
	bySDK   map[string]*replayStream // by the transport's stream id, while its POST runs or it is resumable
	order   []*replayStream          // resumable, oldest first
	bytes   int
	closed  bool
	now     func() time.Time
}

func newReplayStore() *replayStore {
	return &replayStore{streams: map[string]*replayStream{}, bySDK: map[string]*replayStream{}, now: time.Now}
}

// replayStream is one POST's event stream.
type replayStream struct {
	name  string
	reqID jsonrpc.ID // the request the POST carries; its answer ends the stream

	// The fields below are guarded by the store's mu.
	sdkID     string
	events    [][]byte // the events after the priming event: events[i] has index i+1
	next      int      // the index of the next event
	bytes     int
	forgotten bool // no longer resumable: evicted, expired, or its session ended
	answered  bool
	doneAt    time.Time
	ended     chan struct{} // closed once answered, or when the session ends

	// post is the POST's response while its handler runs (nil after);
	// primed: the priming event went out on it, and the POST's own
	// writes from the transport are dropped since.
	post   *resumeWriter
	primed bool
	// live is where new events go: the POST's response, or the GET that
	// resumed the stream last; kick (a GET's) is closed when another GET
	// takes the stream over.
	live http.ResponseWriter
	kick chan struct{}
}

// open starts a resumable stream for a POST carrying the request id.
func (st *replayStore) open(id jsonrpc.ID) *replayStream {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.expireLocked()
	for len(st.order) >= maxReplayStreams {
		st.forgetLocked(st.order[0])
	}
	s := &replayStream{name: rand.Text(), reqID: id, next: 1, ended: make(chan struct{})}
	if st.closed {
		s.forgotten = true
		close(s.ended)
		return s
	}
	st.streams[s.name] = s
	st.order = append(st.order, s)
	return s
}

// expireLocked forgets the streams answered more than replayTTL ago.
func (st *replayStore) expireLocked() {
	now := st.now()
	for len(st.order) > 0 {
		var old *replayStream
		for _, s := range st.order {
			if s.answered && now.Sub(s.doneAt) > replayTTL {
				old = s
				break
			}
		}
		if old == nil {
			return
		}
		st.forgetLocked(old)
	}
}

// forgetLocked makes s unresumable and drops its events; its POST, if it
// still runs, keeps receiving them.
func (st *replayStore) forgetLocked(s *replayStream) {
	if s.forgotten {
		return
	}
	s.forgotten = true
	delete(st.streams, s.name)
	for i, o := range st.order {
		if o == s {
			st.order = append(st.order[:i], st.order[i+1:]...)
			break
		}
	}
	st.bytes -= s.bytes
	s.events, s.bytes = nil, 0
	if s.post == nil && s.sdkID != "" {
		delete(st.bySDK, s.sdkID)
	}
}

// Open implements mcp.EventStore: the transport opens a stream for a
// POST it accepted; ctx is the POST's (serveResumable put the stream in
// it). The standalone stream ("") is not resumable.
func (st *replayStore) Open(ctx context.Context, _, streamID string) error {
	s, _ := ctx.Value(replayStreamKey{}).(*replayStream)
	if s == nil || streamID == "" {
		return nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	s.sdkID = streamID
	st.bySDK[streamID] = s
	return nil
}

type replayStreamKey struct{}

// errNotResumable tells the transport a message was not kept: it then
// delivers it as it would without a store (and reports it undelivered
// when it cannot).
var errNotResumable = errors.New("the stream is not resumable")

// Append implements mcp.EventStore: the transport writes data on stream
// streamID. On a primed stream it is kept (unless the stream was
// forgotten) and sent to whoever holds the stream; the transport's own
// write to the POST is then dropped.
func (st *replayStore) Append(_ context.Context, _, streamID string, data []byte) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	s := st.bySDK[streamID]
	if s == nil || streamID == "" {
		return errNotResumable
	}
	st.primeLocked(s)
	if !s.primed {
		return errNotResumable
	}
	ev := fmt.Appendf(nil, "event: message\nid: %s_%d\ndata: %s\n\n", s.name, s.next, data)
	s.next++
	if !s.forgotten {
		s.events = append(s.events, ev)
		s.bytes += len(ev)
		st.bytes += len(ev)
		for st.bytes > maxReplayBytes && len(st.order) > 0 {
			st.forgetLocked(st.order[0])
		}
	}
	if m, err := jsonrpc.DecodeMessage(data); err == nil {
		if r, ok := m.(*jsonrpc.Response); ok && r.ID == s.reqID && !s.answered {
			s.answered, s.doneAt = true, st.now()
			close(s.ended)
		}
	}
	if s.live == nil {
		if s.forgotten {
			return errNotResumable // neither kept nor sent
		}
		return nil
	}
	writeFlush(s.live, ev)
	return nil
}

// After implements mcp.EventStore. The proxy answers every GET with
// Last-Event-ID itself (HTTPHandler.resume), so the transport asks only
// for a new stream's past (index -1): there is none. Anything else is
// refused.
func (st *replayStore) After(_ context.Context, _, _ string, index int) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		if index >= 0 {
			yield(nil, errNotResumable)
		}
	}
}

// SessionClosed implements mcp.EventStore: the session ended; every
// stream is forgotten and a GET waiting on one ends.
func (st *replayStore) SessionClosed(context.Context, string) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.closed = true
	all := append([]*replayStream(nil), st.order...)
	for _, s := range st.bySDK {
		all = append(all, s)
	}
	for _, s := range all {
		st.forgetLocked(s)
		if !s.answered {
			s.answered = true
			close(s.ended)
		}
	}
	return nil
}

// prime sends the priming event of the stream named name, if its POST
// still runs and nothing went out on it yet.
func (st *replayStore) prime(name string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, s := range st.bySDK {
		if s.name == name {
			st.primeLocked(s)
			return
		}
	}
}

func (st *replayStore) primeLocked(s *replayStream) {
	w := s.post
	if w == nil || s.primed || w.passed {
		return
	}
	s.primed = true
	s.live = w.w
	w.w.WriteHeader(http.StatusOK)
	writeFlush(w.w, []byte(fmt.Sprintf("event: prime\nid: %s_0\nretry: %s\ndata: \n\n", s.name, replayRetry)))
}

func writeFlush(w http.ResponseWriter, b []byte) {
	w.Write(b)
	http.NewResponseController(w).Flush()
}

// resumeWriter is the POST's response as the transport writes it. Until
// the stream is primed it passes everything through (an error the
// transport answers instead of a stream); once primed the transport's
// writes are dropped, since the store wrote the same messages with their
// event ids.
type resumeWriter struct {
	w      http.ResponseWriter
	store  *replayStore
	stream *replayStream
	passed bool // something was passed through: the stream is not primed
}

func (rw *resumeWriter) Header() http.Header { return rw.w.Header() }

func (rw *resumeWriter) WriteHeader(code int) {
	rw.store.mu.Lock()
	defer rw.store.mu.Unlock()
	if rw.stream.primed {
		return
	}
	rw.passed = true
	rw.w.WriteHeader(code)
}

func (rw *resumeWriter) Write(b []byte) (int, error) {
	rw.store.mu.Lock()
	defer rw.store.mu.Unlock()
	if rw.stream.primed {
		return len(b), nil
	}
	rw.passed = true
	return rw.w.Write(b)
}

func (rw *resumeWriter) Flush() {
	rw.store.mu.Lock()
	defer rw.store.mu.Unlock()
	if !rw.stream.primed {
		http.NewResponseController(rw.w).Flush()
	}
}

// serveResumable passes a POST carrying the call id to the session's
// transport with its stream made resumable.
func (h *HTTPHandler) serveResumable(s *httpSession, w http.ResponseWriter, r *http.Request, id jsonrpc.ID) {
	st := s.replay
	stream := st.open(id)
	rw := &resumeWriter{w: w, store: st, stream: stream}
	st.mu.Lock()
	stream.post = rw
	st.mu.Unlock()
	r = r.Clone(context.WithValue(r.Context(), replayStreamKey{}, stream))
	r.Header.Set(streamHeader, stream.name)
	defer func() {
		st.mu.Lock()
		defer st.mu.Unlock()
		stream.post = nil
		if stream.live == w {
			stream.live = nil
		}
		if stream.forgotten && stream.sdkID != "" {
			delete(st.bySDK, stream.sdkID)
		}
	}()
	s.transport.ServeHTTP(rw, r)
}

// resume answers a GET with Last-Event-ID: the events of that stream of
// this session after the id, then the rest as it comes, until its answer.
// A stream this session does not have (another session's, forgotten, or
// made up) is a 400. The GET takes the stream over from whoever held it
// (the POST, whose client may be gone without the proxy knowing yet, or
// an earlier GET, which ends): only the session's client knows the
// stream's name. Nothing reaches the server.
func (h *HTTPHandler) resume(s *httpSession, w http.ResponseWriter, r *http.Request) {
	st := s.replay
	eid := r.Header.Get(lastEventIDHeader)
	name, n, ok := parseReplayID(eid)
	st.mu.Lock()
	st.expireLocked()
	stream := st.streams[name]
	switch {
	case !ok || stream == nil || stream.forgotten:
		st.mu.Unlock()
		http.Error(w, fmt.Sprintf("no stream of this session to resume from Last-Event-ID %q", eid), http.StatusBadRequest)
		return
	case n > len(stream.events):
		st.mu.Unlock()
		http.Error(w, fmt.Sprintf("the events after Last-Event-ID %q are no longer kept", eid), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache, no-transform")
	w.WriteHeader(http.StatusOK)
	for _, ev := range stream.events[n:] {
		w.Write(ev)
	}
	http.NewResponseController(w).Flush()
	if stream.answered {
		st.mu.Unlock()
		return
	}
	if stream.kick != nil {
		close(stream.kick)
	}
	kick := make(chan struct{})
	stream.live, stream.kick = w, kick
	ended := stream.ended
	st.mu.Unlock()
	select {
	case <-ended:
	case <-kick:
	case <-r.Context().Done():
	case <-s.done:
	}
	st.mu.Lock()
	if stream.live == w {
		stream.live, stream.kick = nil, nil
	}
	st.mu.Unlock()
}

// parseReplayID reads "<stream>_<n>".
func parseReplayID(id string) (name string, n int, ok bool) {
	name, num, found := strings.Cut(id, "_")
	if !found || name == "" {
		return "", 0, false
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 {
		return "", 0, false
	}
	return name, n, true
}

// resumeConn is a session's client connection over --listen: when the
// session reads a request whose POST stream is resumable, the stream is
// primed (the transport has accepted the POST as an event stream). A
// notification the transport could not send while the client had no
// standalone stream open fails with errNoStream.
type resumeConn struct {
	checkedConn
	replay    *replayStore
	listening *atomic.Int32 // the session's standalone streams being served
}

// errNoStream: a notification was not sent because the client has no
// stream open to carry it (no standalone GET stream, which is where the
// transport sends everything that is not part of a call's answer). A
// client that opens one gets the notifications sent from then on.
var errNoStream = errors.New("the client has no standalone stream open to carry it")

// Write sends msg. It is always tried, so a stream opened meanwhile gets
// it; only a failed notification is told apart.
func (c resumeConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.checkedConn.Write(ctx, msg)
	if req, ok := msg.(*jsonrpc.Request); err != nil && ok && !req.IsCall() && c.listening.Load() == 0 {
		return fmt.Errorf("%w: %v", errNoStream, err)
	}
	return err
}

func (c resumeConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.checkedConn.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		if extra, ok := req.Extra.(*mcp.RequestExtra); ok && extra != nil {
			if name := extra.Header.Get(streamHeader); name != "" {
				c.replay.prime(name)
			}
		}
	}
	return msg, err
}
