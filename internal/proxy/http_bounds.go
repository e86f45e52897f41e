package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// What HTTP callers of --listen may make the proxy hold (docs/security.md,
// "Every peer's footprint is bounded"): each session is a server process,
// so sessions are capped — all of them, and more tightly those whose
// client has not finished initializing, which also live only briefly —
// and the POST bodies being read or served share one byte budget. At a
// bound the caller gets 503 Service Unavailable; nothing is started.
const (
	// DefaultMaxSessions caps the sessions (server processes) at once.
	DefaultMaxSessions = 16
	// DefaultMaxUninitialized caps the sessions whose client has not sent
	// notifications/initialized yet.
	DefaultMaxUninitialized = 4
	// DefaultInitTimeout ends a session whose client has not sent
	// notifications/initialized this long after initialize.
	DefaultInitTimeout = 10 * time.Second
	// DefaultBodyBudget caps the bytes of POST bodies read or in progress
	// at once (each body is at most MaxFrame).
	DefaultBodyBudget = 64 << 20
	// bodyReadTimeout bounds reading one POST body.
	bodyReadTimeout = 30 * time.Second
)

// MaxSessions caps the sessions at once (default DefaultMaxSessions), and
// uninitialized ones at min(n, DefaultMaxUninitialized); n < 1 means 1.
func MaxSessions(n int) HTTPOption {
	return func(h *HTTPHandler) {
		h.maxSessions = max(1, n)
		h.maxUninitialized = min(h.maxSessions, DefaultMaxUninitialized)
	}
}

// InitTimeout ends a session whose client has not sent
// notifications/initialized within d of its initialize (default
// DefaultInitTimeout).
func InitTimeout(d time.Duration) HTTPOption {
	return func(h *HTTPHandler) { h.initWait = d }
}

// BodyBudget caps the bytes of POST bodies read or in progress at once
// (default DefaultBodyBudget).
func BodyBudget(n int64) HTTPOption {
	return func(h *HTTPHandler) { h.bodies = &budget{max: n} }
}

// reserve counts a session in before its server is started; it says why
// when a cap is reached.
func (h *HTTPHandler) reserve() string {
	h.mu.Lock()
	if h.openLocked() >= h.maxSessions && h.spare != nil {
		// A session comes before a server started ahead.
		spare := h.dropSpareLocked()
		h.mu.Unlock()
		spare.stop()
		h.mu.Lock()
	}
	defer h.mu.Unlock()
	open := h.openLocked()
	uninit := h.starting
	for _, s := range h.sessions {
		if !s.isInitialized() {
			uninit++
		}
	}
	switch {
	case open >= h.maxSessions:
		return fmt.Sprintf("%d sessions are open, the most this proxy serves at once", open)
	case uninit >= h.maxUninitialized:
		return fmt.Sprintf("%d sessions have not finished initializing, the most this proxy keeps at once", uninit)
	}
	h.starting++
	return ""
}

// openLocked is the places among MaxSessions taken: sessions, sessions
// being started, stateless requests being served, a server started ahead
// or being started.
func (h *HTTPHandler) openLocked() int {
	open := len(h.sessions) + h.starting + h.stateless
	if h.spare != nil || h.spareStarting {
		open++
	}
	return open
}

// reserveStateless counts a stateless request in (a session of one
// request: it holds a server while it is served), taking the server
// started ahead when there is one (its place becomes the request's); it
// says why when the session cap is reached.
func (h *HTTPHandler) reserveStateless() (*spareServer, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if spare := h.dropSpareLocked(); spare != nil {
		h.stateless++
		return spare, ""
	}
	if open := h.openLocked(); open >= h.maxSessions {
		return nil, fmt.Sprintf("%d sessions are open, the most this proxy serves at once", open)
	}
	h.stateless++
	return nil, ""
}

func (h *HTTPHandler) unreserveStateless() {
	h.mu.Lock()
	h.stateless--
	h.mu.Unlock()
}

func (h *HTTPHandler) unreserve() {
	h.mu.Lock()
	h.starting--
	h.mu.Unlock()
}

// uninitialized ends session s (id) if its client has not initialized it:
// its server is stopped as when a client goes away.
func (h *HTTPHandler) uninitialized(id string, s *httpSession) {
	if s.isInitialized() {
		return
	}
	h.log.Info("session ended: its client did not finish initializing", "session", id, "within", h.initWait)
	s.conn.Close()
}

func (s *httpSession) isInitialized() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.initialized
}

func (s *httpSession) setInitialized() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.initialized = true
	if s.initTimer != nil {
		s.initTimer.Stop()
	}
}

// unavailable answers 503 and closes the connection: a body not read to
// its end is not waited for.
func unavailable(w http.ResponseWriter, why string) {
	w.Header().Set("Retry-After", "5")
	w.Header().Set("Connection", "close")
	http.Error(w, "mcpx-policy: busy: "+why, http.StatusServiceUnavailable)
}

// errBodyBudget: the bodies in progress hold the whole budget.
var errBodyBudget = errors.New("the POST bodies in progress hold the whole budget")

// budget is a count of bytes held, up to max. Safe for concurrent use.
type budget struct {
	mu   sync.Mutex
	used int64
	max  int64
}

func (b *budget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.max {
		return false
	}
	b.used += n
	return true
}

func (b *budget) give(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// readBody reads a POST body within bodyReadTimeout, taking its bytes
// from the budget as they come; taken is what it took (to give back when
// the request is done), also on error.
func (h *HTTPHandler) readBody(w http.ResponseWriter, r *http.Request) (body []byte, taken int64, err error) {
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Now().Add(bodyReadTimeout))
	defer rc.SetReadDeadline(time.Time{})
	var buf bytes.Buffer
	if r.ContentLength > 0 && r.ContentLength <= MaxFrame {
		if !h.bodies.take(r.ContentLength) {
			return nil, 0, errBodyBudget
		}
		taken = r.ContentLength
		buf.Grow(int(r.ContentLength))
	}
	chunk := make([]byte, 32<<10)
	for {
		n, err := r.Body.Read(chunk)
		if n > 0 {
			if int64(buf.Len()+n) > taken {
				more := int64(buf.Len()+n) - taken
				if !h.bodies.take(more) {
					return nil, taken, errBodyBudget
				}
				taken += more
			}
			buf.Write(chunk[:n])
		}
		if err == io.EOF {
			return buf.Bytes(), taken, nil
		}
		if err != nil {
			return nil, taken, err
		}
	}
}
