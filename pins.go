package mcpxpolicy

import (
	"fmt"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/pins"
)

// Pinned tool definitions (docs/proxy.md#pinned-tool-definitions): with
// pinTools ask or deny for a server, Decide compares the call's tool with
// the definition pinned for it in the state dir (pins.json), pinning a
// tool it sees first, and a definition that changed since is refused or
// asked with ToolDefinitionChanged until an operator accepts it (Pins).

// Pins is the pin store of a state dir: the definition trusted for each
// pinned tool and the changed one waiting for an operator. It is what
// `mcpx-policy pins` lists and accepts and serve's /v1/pins routes use.
// Its methods are safe for concurrent use, with each other and with every
// Engine and process sharing the state dir.
type Pins struct{ s *pins.Store }

// OpenPins opens the pin store of opts.StateDir (see Options) without a
// policy. It touches nothing until used.
func OpenPins(opts Options) (*Pins, error) {
	dir, err := stateDir(opts.StateDir)
	if err != nil {
		return nil, err
	}
	return openPins(dir)
}

func openPins(dir string) (*Pins, error) {
	s, err := pins.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("mcpxpolicy: %w", err)
	}
	return &Pins{s: s}, nil
}

// Where is pins.json's path.
func (p *Pins) Where() string { return p.s.Path() }

// List returns every pin, by server and tool. An unusable store is an
// error errors.Is matches to ErrUnreadable.
func (p *Pins) List() ([]decision.Pin, error) { return p.s.List() }

// Accept makes the changed definition last seen of server's tool its pin,
// and returns the pin: calls to the tool with that definition pass the
// pin check from then on (in every process of the state dir). With sha256
// not "", only the definition with that SHA-256 is accepted (the one a
// ToolDefinitionChanged reason names): ErrMismatch when the tool changed
// again since, and a success that changes nothing when it is the pin
// already. Errors: ErrNotFound (no pin), ErrNothingToAccept, ErrMismatch,
// ErrUnreadable, I/O errors.
func (p *Pins) Accept(server, tool, sha256 string) (decision.Pin, error) {
	return p.s.Accept(server, tool, sha256)
}
