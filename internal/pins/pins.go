// Package pins keeps the pinned tool definitions of the state dir: for each
// server and tool, the SHA-256 of the definition trusted on first sight (or
// accepted by an operator since), and the differing definition last seen
// while it waits for an operator's acceptance (docs/proxy.md, "Pinned tool
// definitions").
//
// A Store keeps them in pins.json in the state dir, beside the
// unknown-outcome ledger and the approval store and guarded the same way
// (internal/statedir): every change is a read-modify-write under an
// exclusive flock on pins.lock, written atomically and fsynced, so proxies,
// a daemon and the CLI sharing the directory see one set of pins. A read
// takes no lock (the file is only ever replaced whole) and is cached while
// the file's identity is unchanged, so a decision of a pinned tool costs a
// stat.
//
// The file holds no definition: per pin, the SHA-256 of the canonical
// definition and of each of its top-level fields (so a report can say
// which fields changed) and the annotation hints (booleans: what the policy
// classifies a call by). Never a description or a schema, which a server
// may fill with anything. A missing file is an empty store; a corrupt,
// newer-version or unsafe file fails every operation with an
// *UnreadableError (every pinned server's calls are then refused) and is
// never overwritten.
package pins

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/statedir"
)

// Limits of a Store.
const (
	// MaxPins caps the pins of a state dir: a tool seen first beyond it is
	// not pinned (ErrFull), so a server that invents tool names cannot grow
	// the file without bound.
	MaxPins = 20000
	// MaxNameSize caps a server's or a tool's name in bytes (ErrTooLarge).
	MaxNameSize = 1024
	// MaxFileSize caps pins.json: a bigger file is unreadable. The caps
	// above keep a full file below it.
	MaxFileSize = 64 << 20
)

// State is how a definition compares with its pin.
type State string

// The states See reports.
const (
	// OK: the definition is the pinned one.
	OK State = "ok"
	// New: the tool had no pin; See pinned this definition (trust on first
	// use).
	New State = "new"
	// Changed: the definition differs from the pinned one; it is kept as
	// the pin's Pending until an operator accepts it.
	Changed State = "changed"
)

// Errors of a Store; match them with errors.Is.
var (
	// ErrNotFound: no pin for that server and tool.
	ErrNotFound = statedir.Kind(statedir.ErrNotFound, "no pinned definition for that tool")
	// ErrNothingPending: the tool's pinned definition is the one last
	// seen; there is nothing to accept.
	ErrNothingPending = errors.New("no changed definition is waiting for acceptance")
	// ErrMismatch: the definition waiting is not the one the operator
	// named (it changed again since): nothing is accepted.
	ErrMismatch = statedir.Kind(statedir.ErrMismatch, "the changed definition is not the one named")
	// ErrFull: MaxPins tools are pinned already.
	ErrFull = errors.New("too many pinned tools")
	// ErrTooLarge: a server or tool name is above MaxNameSize.
	ErrTooLarge = errors.New("name too long to pin")
	// ErrUnreadable is matched by every *UnreadableError.
	ErrUnreadable = statedir.ErrUnreadable
	// ErrNewerVersion is matched by the *UnreadableError of a file written
	// by a newer build.
	ErrNewerVersion = statedir.Kind(statedir.ErrNewerVersion, "newer pin store version")
)

// UnreadableError reports a pin store that exists but cannot be used: the
// file, the lock file or the state dir (Store "pin store"). Nothing is
// written; every call to a server whose tools are pinned is refused until
// an operator repairs it.
type UnreadableError = statedir.UnreadableError

// Definition is what a pin keeps of one definition of a tool (as the SDK
// lists it).
type Definition = decision.PinnedDefinition

// Pin is one tool's pin (as the SDK lists it).
type Pin = decision.Pin

// Status is what See found.
type Status struct {
	State State
	// Pin is the tool's pin after See.
	Pin Pin
	// Changed lists the fields that differ between the pinned and the seen
	// definition (decision.DefinitionFields order); nil unless Changed.
	Changed []string
}

// Seen is one definition of a tool as a surface saw it.
type Seen struct {
	Tool string
	// SHA256 and Fields are decision.ToolSHA256's.
	SHA256 string
	Fields map[string]string
	// Annotations are the tool's; their title is not kept.
	Annotations *decision.Annotations
}

// SeenTool computes t's Seen. An error means t's schemas are not JSON.
func SeenTool(t decision.Tool) (Seen, error) {
	sum, fields, err := decision.ToolSHA256(t)
	if err != nil {
		return Seen{}, err
	}
	return Seen{Tool: t.Name, SHA256: sum, Fields: fields, Annotations: t.Annotations}, nil
}

// Store is the pin store of one state dir. It is safe for concurrent use;
// several Stores, in this or other processes, may share a directory.
type Store struct {
	file *statedir.File[*parsed]
	path string
	now  func() time.Time
}

// Option configures a Store.
type Option func(*Store)

// WithClock sets the clock (default time.Now).
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// Open returns the store in the state dir dir (made absolute). It touches
// nothing on disk: the directory (0700), pins.lock and pins.json (0600) are
// created by the first pin.
func Open(dir string, opts ...Option) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("pins: state dir %q: %w", dir, err)
	}
	path := filepath.Join(abs, FileName)
	s := &Store{path: path, now: time.Now}
	s.file = &statedir.File[*parsed]{
		Dir: statedir.New(abs), Name: FileName, Lock: lockName, Max: MaxFileSize,
		Empty: func() *parsed { return newParsed(&fileState{Version: Version}) },
		Decode: func(b []byte) (*parsed, error) {
			st, err := decode(b)
			if err != nil {
				return nil, err
			}
			return newParsed(st), nil
		},
		Store:  "pin store",
		Aside:  "inspect it, then move it aside (mv " + path + " " + path + ".bad): every tool is then pinned anew on first sight",
		Prefix: "pins",
		Cache:  true,
	}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

// Path is pins.json's path.
func (s *Store) Path() string { return s.path }

// See compares a definition of server's tool with its pin: OK when it is
// the pinned one, New when the tool had no pin (the definition is pinned
// now, durably, before See returns), Changed when it differs (it is kept as
// the pin's Pending, replacing an older pending one). A definition equal to
// the pinned one drops a stale Pending. A call that changes nothing takes
// no lock and writes nothing. Errors: ErrTooLarge, ErrFull, an
// *UnreadableError, I/O errors; on error nothing is pinned and the caller
// must treat the definition as unverified.
func (s *Store) See(server string, d Seen) (Status, error) {
	if len(server) > MaxNameSize || len(d.Tool) > MaxNameSize {
		return Status{}, fmt.Errorf("%w: %d and %d bytes, at most %d", ErrTooLarge, len(server), len(d.Tool), MaxNameSize)
	}
	if server == "" || d.Tool == "" || d.SHA256 == "" {
		return Status{}, errors.New("pins: see: server, tool and sha256 are required")
	}
	p, err := s.load()
	if err != nil {
		return Status{}, err
	}
	if st, ok := p.status(server, d); ok {
		return st, nil
	}
	var out Status
	err = s.transact(func(f *fileState, now time.Time) (bool, error) {
		i := f.find(server, d.Tool)
		if i < 0 {
			if len(f.Pins) >= MaxPins {
				return false, fmt.Errorf("%w: %d, the most a state dir keeps", ErrFull, MaxPins)
			}
			f.Pins = append(f.Pins, Pin{Server: server, Tool: d.Tool, Pinned: definition(d, now)})
			out = Status{State: New, Pin: f.Pins[len(f.Pins)-1]}
			return true, nil
		}
		pin := &f.Pins[i]
		switch {
		case pin.Pinned.SHA256 == d.SHA256:
			changed := pin.Pending != nil
			pin.Pending = nil
			out = Status{State: OK, Pin: *pin}
			return changed, nil
		case pin.Pending != nil && pin.Pending.SHA256 == d.SHA256:
			out = changedStatus(*pin)
			return false, nil
		default:
			def := definition(d, now)
			pin.Pending = &def
			out = changedStatus(*pin)
			return true, nil
		}
	})
	if err != nil {
		return Status{}, err
	}
	return out, nil
}

// Accept makes the definition waiting for server's tool its pin and
// returns the pin. With sha256 not "", it accepts only that definition: a
// pending one with another hash is ErrMismatch (the definition changed
// again since it was reported), and one equal to the pin already accepted
// is a success that changes nothing. Errors: ErrNotFound, ErrNothingPending,
// ErrMismatch, an *UnreadableError, I/O errors.
func (s *Store) Accept(server, tool, sha256 string) (Pin, error) {
	var out Pin
	err := s.transact(func(f *fileState, now time.Time) (bool, error) {
		i := f.find(server, tool)
		if i < 0 {
			return false, fmt.Errorf("%w: %s.%s", ErrNotFound, server, tool)
		}
		pin := &f.Pins[i]
		out = *pin
		switch {
		case sha256 != "" && pin.Pending == nil && pin.Pinned.SHA256 == sha256:
			return false, nil
		case pin.Pending == nil:
			return false, fmt.Errorf("%w: %s.%s is pinned to %s, the definition last seen", ErrNothingPending, server, tool, pin.Pinned.SHA256)
		case sha256 != "" && pin.Pending.SHA256 != sha256:
			return false, fmt.Errorf("%w: %s.%s's changed definition is now %s, not %s", ErrMismatch, server, tool, pin.Pending.SHA256, sha256)
		}
		pin.Pinned, pin.Pending, pin.Accepted = *pin.Pending, nil, now
		out = *pin
		return true, nil
	})
	return out, err
}

// List returns every pin, by server and tool, read without the lock. A
// missing file is an empty list. Errors: an *UnreadableError.
func (s *Store) List() ([]Pin, error) {
	p, err := s.load()
	if err != nil {
		return nil, err
	}
	out := slices.Clone(p.st.Pins)
	slices.SortFunc(out, func(a, b Pin) int {
		if c := strings.Compare(a.Server, b.Server); c != 0 {
			return c
		}
		return strings.Compare(a.Tool, b.Tool)
	})
	if out == nil {
		out = []Pin{}
	}
	return out, nil
}

func definition(d Seen, now time.Time) Definition {
	def := Definition{SHA256: d.SHA256, Fields: map[string]string{}, Seen: now}
	for k, v := range d.Fields {
		if v != "" {
			def.Fields[k] = v
		}
	}
	if a := d.Annotations; a != nil {
		hints := *a
		hints.Title = ""
		def.Annotations = &hints
	}
	return def
}

func changedStatus(p Pin) Status {
	return Status{State: Changed, Pin: p, Changed: decision.ChangedFields(p.Pinned.Fields, p.Pending.Fields)}
}
