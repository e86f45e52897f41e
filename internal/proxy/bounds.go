package proxy

import (
	"fmt"
	"time"
)

// What one session may make the proxy hold, whatever its client and its
// server send (docs/security.md, "Every peer's footprint is bounded"). At
// each bound the proxy refuses — the request is answered with an error and
// nothing is sent or decided — or forgets the oldest of something that
// costs nothing to forget; it never lets a call through unjudged.
const (
	// maxDeciding bounds the tools/call of a session being decided or
	// asked at once (one goroutine each).
	maxDeciding = 64
	// maxPending bounds the client requests of a session waiting for the
	// server's answer.
	maxPending = 1024
	// maxListPages and maxListBytes bound the proxy's own tools/list: the
	// pages it asks for, and the bytes of tools it keeps, before it gives
	// up (a call then is refused, as when the list cannot be had).
	maxListPages = 1000
	maxListBytes = 32 << 20
	// maxListTools bounds the tools of a list.
	maxListTools = 100000
)

// errBusy is the message of a request refused at one of the bounds.
func errBusy(what string, n int) string {
	return fmt.Sprintf("mcpx-policy: refused: this session has %d %s already (the most it may have); try again when some are answered", n, what)
}

// relistSpacing is the least time between two listings relist makes.
const relistSpacing = time.Second

// relist asks for the server's tools again after
// notifications/tools/list_changed: one listing at a time, and at most one
// more waiting behind it, relistSpacing after the last, however many
// notifications come, so a storm of them costs one goroutine and a
// listing a second. (A call after a notification lists the tools itself
// when no listing since fits it: tool.)
func (s *session) relist() {
	s.mu.Lock()
	running := s.relisting
	s.relisting, s.relistAgain = true, running
	s.mu.Unlock()
	if running {
		return
	}
	s.calls.Add(1)
	go func() {
		defer s.calls.Done()
		for {
			s.recheck()
			s.mu.Lock()
			again := s.relistAgain
			s.relisting, s.relistAgain = again, false
			s.mu.Unlock()
			if !again {
				return
			}
			select {
			case <-s.after(relistSpacing):
			case <-s.ctx.Done():
				return
			}
		}
	}()
}
