package proxy

import (
	"context"
	"net/http"
)

// A server started ahead for the next stateless request. With a command
// upstream each stateless request starts a process, and a process takes
// a while to be ready (an npm server: half a second idle, more on a busy
// machine) — longer than some clients wait for the first frame of a
// stream. With StartAhead, once a stateless request was served the
// listener keeps one server started for the next: it serves exactly one
// request, as a server started for it would (no client's state ever
// reaches another's), it counts against MaxSessions, and a session that
// needs its room stops it.

// StartAhead keeps one server started ahead for the next stateless
// request once one was served (for a command upstream, whose start is
// slow). Without it each stateless request starts its server when it
// comes.
func StartAhead() HTTPOption {
	return func(h *HTTPHandler) { h.ahead = true }
}

// spareServer is a server started ahead, not yet given a request.
type spareServer struct {
	conn   Conn
	ctx    context.Context
	cancel context.CancelFunc
}

func (sp *spareServer) stop() {
	sp.cancel()
	sp.conn.Close()
}

// statelessServer is the server for a stateless request: the spare, when
// reserveStateless took one, else one started now.
func (h *HTTPHandler) statelessServer(spare *spareServer, r *http.Request) (context.Context, context.CancelFunc, Conn, error) {
	if spare != nil {
		return spare.ctx, spare.cancel, spare.conn, nil
	}
	ctx, cancel := context.WithCancel(h.ctx)
	server, err := h.start(h.startContext(ctx, r))
	if err != nil {
		cancel()
		return nil, nil, nil, err
	}
	return ctx, cancel, server, nil
}

// startAhead starts the spare in the background, unless there is one or
// one is being started, the listener is closing, or the sessions hold
// every place.
func (h *HTTPHandler) startAhead() {
	if !h.ahead || h.passAuth {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.spare != nil || h.spareStarting || h.closing || h.openLocked() >= h.maxSessions {
		return
	}
	h.spareStarting = true
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		ctx, cancel := context.WithCancel(h.ctx)
		conn, err := h.start(ctx)
		if err != nil {
			cancel()
			h.log.Warn("starting a server ahead for the next stateless request failed", "err", err)
			h.mu.Lock()
			h.spareStarting = false
			h.mu.Unlock()
			return
		}
		spare := &spareServer{conn: conn, ctx: ctx, cancel: cancel}
		h.mu.Lock()
		h.spareStarting = false
		if !h.closing {
			h.spare, spare = spare, nil
		}
		h.mu.Unlock()
		if spare != nil {
			spare.stop()
		}
	}()
}

// dropSpareLocked takes the spare out, for the caller to stop once h.mu
// is released; nil when there is none.
func (h *HTTPHandler) dropSpareLocked() *spareServer {
	sp := h.spare
	h.spare = nil
	return sp
}
