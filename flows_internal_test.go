package mcpxpolicy

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mcpx/mcpx-policy/decision"
)

// TestFlowSessionsBoundedAndExpiring: the session memory holds at most its
// bound of sessions overall and per caller — a flood is refused room, and
// no remembered session is pushed out by it (forgetting one would let its
// next call through) — and a session idle for the idle time is forgotten,
// which frees its room. A session's key is its caller's and its name's:
// the same name from another caller is another session, and a very long
// name is kept at a bounded size.
func TestFlowSessionsBoundedAndExpiring(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	s := &flowSessions{max: 5, maxPerCaller: 3, idle: time.Minute, now: func() time.Time { return now }}
	key := func(caller, session string) (string, string) {
		return flowKey(decision.Call{Caller: caller, Session: session})
	}
	k, c := key("mcp:a", "s1")
	s.touch(k, c, []string{"untrusted-input"})
	for i := range 10 { // a flood from one caller: two more fit
		k, c := key("mcp:a", fmt.Sprint("flood", i))
		if got, want := s.admit(k, c), i < 2; got != want {
			t.Fatalf("flood %d admitted %v", i, got)
		}
	}
	for i := range 10 { // from another two callers: the overall bound
		k, c := key(fmt.Sprint("mcp:", i%2+1), fmt.Sprint("other", i))
		s.admit(k, c)
	}
	if s.size() != 5 {
		t.Fatalf("%d sessions remembered, want the bound 5", s.size())
	}
	if got := s.touched(k); !slices.Equal(got, []string{"untrusted-input"}) {
		t.Fatalf("the first session after the flood touched %v", got)
	}
	if k2, _ := key("mcp:b", "s1"); len(s.touched(k2)) != 0 {
		t.Errorf("another caller's session of the same name reads the first's labels")
	}
	long, _ := key("mcp:a", string(make([]byte, 1<<20)))
	if len(long) > 64 {
		t.Errorf("a session key is %d bytes for a 1 MiB name", len(long))
	}
	// idle: every session but the first (read above, at now) is forgotten
	now = now.Add(59 * time.Second)
	s.touched(k)
	now = now.Add(2 * time.Second)
	if k3, c3 := key("mcp:c", "new"); !s.admit(k3, c3) {
		t.Fatalf("no room after the idle sessions expired")
	}
	if s.size() != 2 {
		t.Errorf("%d sessions after expiry, want the first and the new one", s.size())
	}
	if got := s.touched(k); !slices.Equal(got, []string{"untrusted-input"}) {
		t.Errorf("a session in use was forgotten: %v", got)
	}
	now = now.Add(time.Minute)
	if got := s.touched(k); len(got) != 0 {
		t.Errorf("an idle session is still remembered: %v", got)
	}
}
