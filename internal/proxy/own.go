package proxy

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The proxy's own requests: its tools/list to the server and its
// elicitation/create to the client. Each carries an id no peer can guess,
// and its answer counts only from the peer it was sent to.

// ownIDPrefix starts the ids of requests the proxy itself makes (its own
// tools/list, elicitation/create); the rest of each id is random
// (crypto/rand), so no peer can guess one. A peer's request with an id of
// this prefix is refused, so that a reply with such an id is always meant
// for the proxy.
const ownIDPrefix = "mcpx-policy/"

// ownRequest is one of the proxy's own requests waiting for its answer,
// which counts only from the peer it was sent to.
type ownRequest struct {
	peer Conn
	ch   chan *jsonrpc.Response // gets the answer, or nil when it was refused
}

// request sends a request of the proxy's own to conn and waits for the
// answer, which counts only from conn. The id is ownIDPrefix and
// rand.Text (at least 128 bits from crypto/rand).
func (s *session) request(ctx context.Context, conn Conn, method string, params any) (*jsonrpc.Response, error) {
	s.mu.Lock()
	if conn == s.server && s.serverErr != nil {
		s.mu.Unlock()
		return nil, ErrServerGone
	}
	id, _ := jsonrpc.MakeID(ownIDPrefix + rand.Text())
	ch := make(chan *jsonrpc.Response, 1)
	s.own[id] = &ownRequest{peer: conn, ch: ch}
	s.mu.Unlock()
	drop := func() {
		s.mu.Lock()
		delete(s.own, id)
		s.mu.Unlock()
	}
	raw, err := json.Marshal(params)
	if err != nil {
		drop()
		return nil, err
	}
	if err := conn.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: raw}); err != nil {
		drop()
		return nil, err
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return nil, ErrServerGone
		}
		if r == nil {
			return nil, errRefusedAnswer
		}
		if r.Error != nil {
			return nil, r.Error
		}
		return r, nil
	case <-ctx.Done():
		drop()
		if conn == s.client {
			n, err := notification("notifications/cancelled", map[string]any{"requestId": id.Raw()})
			if err == nil {
				conn.Write(s.ctx, n)
			}
		}
		return nil, ctx.Err()
	}
}

// errRefusedAnswer is the error of an own request whose answer failed the
// strict check.
var errRefusedAnswer = errors.New("the answer did not decode strictly")

// ownID reports whether id has the form of the proxy's own ids.
func ownID(id jsonrpc.ID) bool {
	s, ok := id.Raw().(string)
	return ok && strings.HasPrefix(s, ownIDPrefix)
}

// ownReply takes a reply that arrived from peer. An answer to a pending
// own request sent to peer goes to its waiter. An answer with an own id
// from the other peer (which never saw that request), or to an own id no
// longer pending, is dropped and logged. It reports whether m was one of
// these; false means m answers a peer's request.
func (s *session) ownReply(m *jsonrpc.Response, peer Conn) bool {
	s.mu.Lock()
	o := s.own[m.ID]
	if o != nil && o.peer == peer {
		delete(s.own, m.ID)
	}
	s.mu.Unlock()
	switch {
	case o != nil && o.peer == peer:
		o.ch <- m
		return true
	case o != nil:
		s.log.Warn("dropped a reply to a request of the proxy from the peer it was not sent to", "from", s.peerName(peer), "id", m.ID.Raw())
		return true
	case ownID(m.ID):
		s.log.Warn("dropped a reply to a request of the proxy that is not pending", "from", s.peerName(peer), "id", m.ID.Raw())
		return true
	}
	return false
}

// ownFailed ends a pending own request sent to peer whose answer failed
// the strict check; it reports whether id was one.
func (s *session) ownFailed(id jsonrpc.ID, peer Conn) bool {
	s.mu.Lock()
	o := s.own[id]
	if o == nil || o.peer != peer {
		s.mu.Unlock()
		return false
	}
	delete(s.own, id)
	s.mu.Unlock()
	o.ch <- nil
	return true
}

func (s *session) peerName(c Conn) string {
	if c == s.client {
		return "client"
	}
	return "server"
}
