package mcpxpolicy

import (
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/pins"
)

// Pinned tool definitions (docs/proxy.md#pinned-tool-definitions): with
// pinTools ask or deny for a server, Decide compares the call's tool with
// the definition pinned for it in the pin store (Pins), pinning a
// tool it sees first, and a definition that changed since is refused or
// asked with ToolDefinitionChanged until an operator accepts it (Pins).

// Pins is the pin store: the definition trusted for each pinned tool and
// the changed one waiting for an operator, in the state dir (pins.json) or
// in the PostgreSQL database of the config's ledger section, which a
// fleet of gateways shares (docs/ledger.md#approvals-and-pins-a-fleet-shares).
// It is what `mcpx-policy pins` lists and accepts and serve's /v1/pins
// routes use. Its methods are safe for concurrent use, with each other
// and with every Engine and process sharing the store.
type Pins struct {
	s      pins.Backend
	engine bool         // the Engine's own: Engine.Close closes the database
	close  func() error // the database's pool, when OpenPins opened one
}

// OpenPins opens the pin store opts name — the config's ledger section
// when opts.ConfigPaths are given (the config must load) and it names
// PostgreSQL, else the state dir opts.StateDir (see Options) — without a
// policy. It touches nothing until used. Close releases it.
func OpenPins(opts Options) (*Pins, error) {
	st, err := openState(opts)
	if err != nil {
		return nil, err
	}
	p, err := st.pins()
	if err != nil {
		return nil, err
	}
	p.close = st.close
	return p, nil
}

// Close releases the database connections OpenPins opened; on the
// Engine's own (Engine.Pins), and on a state dir's store, it does
// nothing.
func (p *Pins) Close() error {
	if p.engine || p.close == nil {
		return nil
	}
	return p.close()
}

// List returns every pin, by server and tool. An unusable store is an
// error errors.Is matches to ErrUnreadable.
func (p *Pins) List() ([]decision.Pin, error) { return p.s.List() }

// Accept makes the changed definition last seen of server's tool its pin,
// and returns the pin: calls to the tool with that definition pass the
// pin check from then on (in every process and gateway of the store).
// With sha256 not "", only the definition with that SHA-256 is accepted
// (the one a ToolDefinitionChanged reason names): ErrMismatch when the
// tool changed again since, and a success that changes nothing when it is
// the pin already. Errors: ErrNotFound (no pin), ErrNothingToAccept,
// ErrMismatch, ErrUnreadable, I/O errors.
func (p *Pins) Accept(server, tool, sha256 string) (decision.Pin, error) {
	return p.s.Accept(server, tool, sha256)
}
