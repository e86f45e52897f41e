package pins

import (
	"errors"
	"fmt"

	"github.com/mcpx/mcpx-policy/decision"
)

// Check is a tool's definition compared with its pin, as the policy reads
// it in input.tool.pin (docs/fleet.md).
type Check struct {
	// Status is ok, new, changed or error.
	Status string
	// SHA256 is the hex SHA-256 of the tool's canonical definition
	// (decision.ToolSHA256); PinnedSHA256 the pinned one's ("" when new).
	SHA256, PinnedSHA256 string
	// Changed lists the fields that differ (changed only).
	Changed []string
	// Error says, for an agent (no paths), why the pin could not be
	// checked (error only).
	Error string
}

// CompareTool compares server's tool t with its pin — pinning a tool seen
// first, durably — and returns the comparison and the tool as the policy
// judges it: while its definition differs from the pinned one, its
// annotations are the stricter of the two (a server that flips
// readOnlyHint to true after pinning does not turn a write into a read,
// nor one that drops destructiveHint: false the reverse). A failure is a
// Check with Status "error", which the policy denies. Safe for concurrent
// use.
func (s *Store) CompareTool(server string, t decision.Tool) (Check, decision.Tool) {
	seen, err := SeenTool(t)
	if err != nil {
		return Check{Status: "error", Error: "the tool's definition is not JSON, so it has no pin"}, t
	}
	st, err := s.See(server, seen)
	if err != nil {
		return Check{Status: "error", SHA256: seen.SHA256, Error: reason(err)}, t
	}
	c := Check{Status: string(st.State), SHA256: seen.SHA256}
	switch st.State {
	case OK:
		c.PinnedSHA256 = st.Pin.Pinned.SHA256
	case Changed:
		c.PinnedSHA256, c.Changed = st.Pin.Pinned.SHA256, st.Changed
		t.Annotations = stricter(st.Pin.Pinned.Annotations, t.Annotations)
	}
	return c, t
}

// reason says, in words fit for an agent (no paths), why a pin could not
// be checked.
func reason(err error) string {
	switch {
	case errors.Is(err, ErrNewerVersion):
		return "the pin store was written by a newer mcpx-policy; an operator runs 'mcpx-policy pins' to see why"
	case errors.Is(err, ErrUnreadable):
		return "the pin store is unreadable or not trusted; an operator runs 'mcpx-policy pins' to see why"
	case errors.Is(err, ErrFull):
		return fmt.Sprintf("the pin store holds %d pins, the most it keeps", MaxPins)
	case errors.Is(err, ErrTooLarge):
		return "the tool's name is too long to pin"
	}
	return "the pin store could not be written"
}

// stricter merges a pinned definition's hints with the current ones: a
// read only when both say readOnlyHint true, not destructive only when
// both say destructiveHint false (MCP defaults for missing hints). The
// other hints are the pinned ones, the title the current one.
func stricter(pinned, now *decision.Annotations) *decision.Annotations {
	var p, n decision.Annotations
	if pinned != nil {
		p = *pinned
	}
	if now != nil {
		n = *now
	}
	is := func(h *bool, v bool) bool { return h != nil && *h == v }
	readOnly := is(p.ReadOnlyHint, true) && is(n.ReadOnlyHint, true)
	destructive := !(is(p.DestructiveHint, false) && is(n.DestructiveHint, false))
	return &decision.Annotations{Title: n.Title, ReadOnlyHint: &readOnly, DestructiveHint: &destructive,
		IdempotentHint: p.IdempotentHint, OpenWorldHint: p.OpenWorldHint}
}
