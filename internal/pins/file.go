package pins

import (
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/statedir"
)

// FileName is the store's file inside the state directory.
const FileName = "pins.json"

// lockName is the lock file beside it: an exclusive flock on it serializes
// every read-modify-write of FileName.
const lockName = "pins.lock"

// Version is the file format version this build reads and writes. A file
// with a higher version is unreadable (ErrNewerVersion) and never
// overwritten.
const Version = 1

// fileState is the whole file: {"version": 1, "pins": [Pin…]}.
type fileState struct {
	Version int   `json:"version"`
	Pins    []Pin `json:"pins"`
}

var hexSum = regexp.MustCompile(`^[0-9a-f]{64}$`)

// decode parses the file strictly. Every failure is the cause of an
// *UnreadableError: the caller must neither use nor overwrite the file.
func decode(b []byte) (*fileState, error) {
	var st fileState
	if err := statedir.DecodeVersioned(b, Version, ErrNewerVersion, &st); err != nil {
		return nil, err
	}
	if len(st.Pins) > MaxPins {
		return nil, fmt.Errorf("%d pins, more than the %d a state dir keeps", len(st.Pins), MaxPins)
	}
	seen := make(map[string]bool, len(st.Pins))
	for i, p := range st.Pins {
		key := p.Server + "\x00" + p.Tool
		switch {
		case p.Server == "" || p.Tool == "":
			return nil, fmt.Errorf("pins[%d]: server and tool are required", i)
		case seen[key]:
			return nil, fmt.Errorf("pins[%d]: %s.%s is pinned twice", i, p.Server, p.Tool)
		}
		if err := checkDefinition(p.Pinned); err != nil {
			return nil, fmt.Errorf("pins[%d].pinned: %w", i, err)
		}
		if p.Pending != nil {
			if err := checkDefinition(*p.Pending); err != nil {
				return nil, fmt.Errorf("pins[%d].pending: %w", i, err)
			}
		}
		seen[key] = true
	}
	return &st, nil
}

func checkDefinition(d Definition) error {
	if !hexSum.MatchString(d.SHA256) {
		return fmt.Errorf("sha256 %q is not 64 hex digits", d.SHA256)
	}
	for k, v := range d.Fields {
		if !slices.Contains(decision.DefinitionFields, k) || !hexSum.MatchString(v) {
			return fmt.Errorf("fields: %q: %q is not a field's 64 hex digits", k, v)
		}
	}
	return nil
}

func (st *fileState) find(server, tool string) int {
	return slices.IndexFunc(st.Pins, func(p Pin) bool { return p.Server == server && p.Tool == tool })
}

// parsed is one version of the file, parsed and indexed. Never modified
// once made: the store's File caches it for every reader.
type parsed struct {
	st    *fileState
	index map[string]int // server \x00 tool -> index in st.Pins
}

func newParsed(st *fileState) *parsed {
	p := &parsed{st: st, index: make(map[string]int, len(st.Pins))}
	for i, pin := range st.Pins {
		p.index[pin.Server+"\x00"+pin.Tool] = i
	}
	return p
}

// status is See's answer when it needs no change to the file.
func (p *parsed) status(server string, d Seen) (Status, bool) {
	i, ok := p.index[server+"\x00"+d.Tool]
	if !ok {
		return Status{}, false
	}
	pin := p.st.Pins[i]
	switch {
	case pin.Pinned.SHA256 == d.SHA256 && pin.Pending == nil:
		return Status{State: OK, Pin: pin}, true
	case pin.Pinned.SHA256 != d.SHA256 && pin.Pending != nil && pin.Pending.SHA256 == d.SHA256:
		return changedStatus(pin), true
	}
	return Status{}, false
}

// transact is one read-modify-write under the exclusive lock
// (statedir.File.Update): read the file (missing is empty; unreadable
// aborts with nothing written), let fn change it, and if it did, replace
// the file atomically and durably. fn's error is returned (nothing is
// written then); else a failed write.
func (s *Store) transact(fn func(st *fileState, now time.Time) (changed bool, err error)) error {
	return s.file.Update(func(p *parsed) ([]byte, error) {
		// fn changes a copy: the cached parse is shared with readers
		st := &fileState{Version: Version, Pins: slices.Clone(p.st.Pins)}
		changed, err := fn(st, s.now().UTC())
		if err != nil || !changed {
			return nil, err
		}
		b, err := statedir.EncodeRecords(Version, "pins", st.Pins)
		if err != nil {
			return nil, fmt.Errorf("pins: %w", err)
		}
		return b, nil
	})
}

// load checks the state dir and reads the file without the lock.
func (s *Store) load() (*parsed, error) { return s.file.Load() }
