package mcpxpolicy

import (
	"errors"
	"fmt"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/config"
	"github.com/mcpx/mcpx-policy/internal/engine"
	"github.com/mcpx/mcpx-policy/internal/ledger"
	"github.com/mcpx/mcpx-policy/internal/pins"
)

// Pinned tool definitions (docs/proxy.md#pinned-tool-definitions): with
// pinTools ask or deny for a server, Decide compares the call's tool with
// the definition pinned for it in the state dir (pins.json), pinning a
// tool it sees first, and a definition that changed since is refused or
// asked with ToolDefinitionChanged until an operator accepts it (Pins).

// Pins is the pin store of a state dir: what `mcpx-policy pins` lists and
// accepts and serve's /v1/pins routes use. Its methods are safe for
// concurrent use, with each other and with every Engine and process
// sharing the state dir.
type Pins struct{ s *pins.Store }

// Pin is one tool's pin: the trusted definition's SHA-256 (and of each of
// its fields) and annotation hints, and the changed definition waiting for
// acceptance, if any. It holds no description and no schema.
type Pin = pins.Pin

// PinnedDefinition is what a Pin keeps of one definition.
type PinnedDefinition = pins.Definition

// Errors of the pin store, for errors.Is.
var (
	// ErrPinsUnreadable: pins.json (or the state dir) cannot be used;
	// calls to servers that pin are refused meanwhile.
	ErrPinsUnreadable = pins.ErrUnreadable
	// ErrPinNotFound: Accept names a tool that has no pin.
	ErrPinNotFound = pins.ErrNotFound
	// ErrNothingToAccept: the tool's pin is the definition last seen.
	ErrNothingToAccept = pins.ErrNothingPending
	// ErrPinMismatch: the changed definition is not the one Accept names
	// (it changed again since it was reported); nothing was accepted.
	ErrPinMismatch = pins.ErrMismatch
)

// PinsUnreadableError is the error (errors.As) of a pin store that exists
// but cannot be used: its Path, the cause and, when not empty, a Hint
// saying what an operator does about it. It matches ErrPinsUnreadable.
type PinsUnreadableError = pins.UnreadableError

// PinChanges lists the definition fields (description, inputSchema, …)
// whose hashes differ between p's pinned and its pending definition; nil
// when nothing is pending.
func PinChanges(p Pin) []string {
	if p.Pending == nil {
		return nil
	}
	return decision.ChangedFields(p.Pinned.Fields, p.Pending.Fields)
}

// OpenPins opens the pin store of stateDir ("" means DefaultStateDir). It
// touches nothing until used.
func OpenPins(stateDir string) (*Pins, error) {
	if stateDir == "" {
		d, err := ledger.DefaultStateDir()
		if err != nil {
			return nil, fmt.Errorf("mcpxpolicy: state dir: %w", err)
		}
		stateDir = d
	}
	s, err := pins.Open(stateDir)
	if err != nil {
		return nil, fmt.Errorf("mcpxpolicy: %w", err)
	}
	return &Pins{s: s}, nil
}

// List returns every pin, by server and tool. An unusable store is an
// error errors.Is matches to ErrPinsUnreadable.
func (p *Pins) List() ([]Pin, error) { return p.s.List() }

// Accept makes the changed definition last seen of server's tool its pin,
// and returns the pin: calls to the tool with that definition pass the
// pin check from then on (in every process of the state dir). With sha256
// not "", only the definition with that SHA-256 is accepted (the one a
// ToolDefinitionChanged reason names): ErrPinMismatch when the tool
// changed again since, and a success that changes nothing when it is the
// pin already. Errors: ErrPinNotFound, ErrNothingToAccept, ErrPinMismatch,
// ErrPinsUnreadable, I/O errors.
func (p *Pins) Accept(server, tool, sha256 string) (Pin, error) {
	return p.s.Accept(server, tool, sha256)
}

// Where is pins.json's path.
func (p *Pins) Where() string { return p.s.Path() }

// Pins is the pin store the Engine decides with (Options.StateDir's).
func (e *Engine) Pins() *Pins { return &Pins{s: e.pins} }

// ToolSHA256 is the hex SHA-256 of a tool's canonical definition — name,
// description, inputSchema, outputSchema and annotations in RFC 8785
// canonical JSON —, the value a pin holds. A schema that is not JSON is
// an error.
func ToolSHA256(t decision.Tool) (string, error) {
	sum, _, err := decision.ToolSHA256(t)
	return sum, err
}

// pinView compares call's tool with its pin when the server pins tool
// definitions (config.Compiled.PinMode), pinning a tool seen first, and
// returns what the policy reads as input.tool.pin (nil when pinning is
// off; with a changed definition, the command that accepts it,
// AcceptCommand) and the call as the policy judges it: while the definition differs
// from the pinned one, its annotations are the stricter of the two (a
// server that flips readOnlyHint to true after pinning does not turn a
// write into a read, nor one that drops destructiveHint: false the
// reverse).
func (e *Engine) pinView(c *config.Compiled, call decision.Call) (*engine.Pin, decision.Call) {
	if c.PinMode(call.Server) == config.DefaultPinTools {
		return nil, call
	}
	seen, err := pins.SeenTool(call.Tool)
	if err != nil {
		return &engine.Pin{Status: "error", Error: "the tool's definition is not JSON, so it has no pin"}, call
	}
	st, err := e.pins.See(call.Server, seen)
	if err != nil {
		return &engine.Pin{Status: "error", SHA256: seen.SHA256, Error: pinError(err)}, call
	}
	p := &engine.Pin{Status: string(st.State), SHA256: seen.SHA256}
	switch st.State {
	case pins.OK:
		p.PinnedSHA256 = st.Pin.Pinned.SHA256
	case pins.Changed:
		p.PinnedSHA256, p.Changed = st.Pin.Pinned.SHA256, st.Changed
		p.Accept = e.AcceptCommand(call.Server, call.Tool.Name, seen.SHA256)
		call.Tool.Annotations = stricter(st.Pin.Pinned.Annotations, call.Tool.Annotations)
	}
	return p, call
}

// pinError says, in words fit for an agent (no paths), why a pin could not
// be checked.
func pinError(err error) string {
	switch {
	case errors.Is(err, pins.ErrNewerVersion):
		return "the pin store was written by a newer mcpx-policy; an operator runs 'mcpx-policy pins' to see why"
	case errors.Is(err, pins.ErrUnreadable):
		return "the pin store is unreadable or not trusted; an operator runs 'mcpx-policy pins' to see why"
	case errors.Is(err, pins.ErrFull):
		return fmt.Sprintf("the pin store holds %d pins, the most it keeps", pins.MaxPins)
	case errors.Is(err, pins.ErrTooLarge):
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
