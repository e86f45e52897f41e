// Package netcap caps the connections an HTTP listener holds open at once
// (docs/security.md, "Every peer's footprint is bounded"). Past the cap a
// new connection first takes the place of the connection idle the longest
// (a keep-alive between requests costs its owner nothing to reopen);
// when none is idle, it is answered 503 Service Unavailable and closed
// before anything of it is read. Each connection a caller opens costs the
// process a goroutine and buffers in net/http, so without a cap a caller
// that opens many (and sends nothing) would hold them for as long as the
// server's timeouts allow.
package netcap

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// busy is what a connection past the cap is answered, whole, before it is
// closed.
const busy = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nRetry-After: 1\r\nContent-Length: 60\r\n\r\nmcpx-policy: too many connections open; try again shortly.\n"

// Limiter wraps a listener. Give its ConnState to the http.Server that
// serves Listener, so it knows which connections are idle. Its methods are
// safe for concurrent use.
type Limiter struct {
	ln  net.Listener
	max int

	mu      sync.Mutex
	open    int
	idle    map[net.Conn]time.Time // since when each idle connection is
	refused int
}

// New returns a Limiter over ln allowing n connections open at once
// (n < 1 means 1).
func New(ln net.Listener, n int) *Limiter {
	return &Limiter{ln: ln, max: max(1, n), idle: map[net.Conn]time.Time{}}
}

// Listener is the capped listener to serve.
func (l *Limiter) Listener() net.Listener { return listener{l} }

// Stats are the connections open now, those of them idle, and how many
// were answered 503 at the cap so far.
func (l *Limiter) Stats() (open, idle, refused int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open, len(l.idle), l.refused
}

// ConnState is the http.Server hook that tracks idle connections.
func (l *Limiter) ConnState(c net.Conn, st http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if st == http.StateIdle {
		l.idle[c] = time.Now()
		return
	}
	delete(l.idle, c)
}

type listener struct{ l *Limiter }

func (ln listener) Accept() (net.Conn, error) {
	l := ln.l
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return nil, err
		}
		if l.admit() {
			return &conn{Conn: c, l: l}, nil
		}
		// Past the cap with nothing idle: a fresh socket's send buffer
		// takes the answer at once; the deadline keeps a stuck one from
		// holding up Accept.
		c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		c.Write([]byte(busy))
		c.Close()
	}
}

// admit counts a new connection in, closing the longest-idle one to make
// room at the cap; false when nothing could be made room for.
func (l *Limiter) admit() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open >= l.max {
		var oldest net.Conn
		var since time.Time
		for c, t := range l.idle {
			if oldest == nil || t.Before(since) {
				oldest, since = c, t
			}
		}
		if oldest == nil {
			l.refused++
			return false
		}
		delete(l.idle, oldest)
		// Its slot is the new connection's from now: the close below
		// does not count it out twice.
		oldest.(*conn).evict()
		l.open--
	}
	l.open++
	return true
}

func (ln listener) Close() error   { return ln.l.ln.Close() }
func (ln listener) Addr() net.Addr { return ln.l.ln.Addr() }

// conn counts itself out once when closed.
type conn struct {
	net.Conn
	l    *Limiter
	once sync.Once
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.open--
		delete(c.l.idle, c)
		c.l.mu.Unlock()
	})
	return err
}

// evict closes c without counting it out (l.mu held: the caller took its
// slot).
func (c *conn) evict() {
	c.once.Do(func() {})
	c.Conn.Close()
}
