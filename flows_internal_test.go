package mcpxpolicy

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
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

// TestFlowSessionsFullRefuses: through Decide, a call whose labels must be
// remembered is refused (FlowDenied, saying why) when the memory has no
// room for its session, while the remembered session keeps its labels.
func TestFlowSessionsFullRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := dir + "/policy.yaml"
	if err := os.WriteFile(cfg, []byte(`version: 1
policy:
  write: allow
pool:
  labels:
    - {label: untrusted-input, tools: [fetch]}
    - {label: egress, tools: [send]}
  flows:
    - {id: no-exfil, after: [untrusted-input], calls: [egress], then: deny}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := New(context.Background(), Options{ConfigPaths: []string{cfg}, Env: []string{}, StateDir: dir + "/state"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	e.sessions.max = 1
	call := func(caller, tool string) decision.Decision {
		d, err := e.Decide(context.Background(), decision.Call{Server: "web", Caller: caller, Surface: SurfaceDaemon,
			Tool: decision.Tool{Name: tool, Annotations: &decision.Annotations{ReadOnlyHint: ptrTo(tool == "fetch")}}, Args: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := call("a", "fetch"); d.Outcome != decision.Allow {
		t.Fatalf("a's fetch: %+v", d)
	}
	d := call("b", "fetch")
	if d.Outcome != decision.Deny || d.First().Code != decision.FlowDenied || !strings.Contains(d.First().Message, "too many sessions") {
		t.Fatalf("b's fetch with no room: %+v", d)
	}
	if d := call("b", "send"); d.Outcome != decision.Allow {
		t.Errorf("b's send (nothing to remember, nothing touched): %+v", d)
	}
	if d := call("a", "send"); d.Outcome != decision.Deny || d.First().Code != decision.FlowDenied {
		t.Errorf("a's send after its fetch: %+v", d)
	}
}

func ptrTo[T any](v T) *T { return &v }
