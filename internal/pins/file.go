package pins

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcpx/mcpx-policy/internal/decision"
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

// encode renders the file with one pin per line, each compact.
func (st *fileState) encode() ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "{\"version\": %d, \"pins\": [", Version)
	for i, p := range st.Pins {
		line, err := json.Marshal(p)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n  ")
		b.Write(line)
	}
	if len(st.Pins) > 0 {
		b.WriteByte('\n')
	}
	b.WriteString("]}\n")
	return b.Bytes(), nil
}

func (st *fileState) find(server, tool string) int {
	return slices.IndexFunc(st.Pins, func(p Pin) bool { return p.Server == server && p.Tool == tool })
}

// parsed is one version of the file, parsed and indexed, with its
// identity. Never modified once made.
type parsed struct {
	id    fileID
	file  *os.File // kept open while cached, so its inode is not reused
	st    *fileState
	index map[string]int // server \x00 tool -> index in st.Pins
}

// fileID is a file's identity for the read cache: device, inode, size,
// modification and change time. The file is only ever replaced by rename.
type fileID struct {
	dev, ino     uint64
	size         int64
	mtime, ctime unix.Timespec
}

func idOf(st *unix.Stat_t) fileID {
	return fileID{dev: uint64(st.Dev), ino: st.Ino, size: st.Size, mtime: st.Mtim, ctime: st.Ctim}
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

// transact is one read-modify-write under the exclusive lock: check the
// state dir and its files, read the file (missing is empty; unreadable
// aborts with nothing written), let fn change it, and if it did, replace
// the file atomically and durably. fn's error is returned (nothing is
// written then); else a failed write.
func (s *Store) transact(fn func(st *fileState, now time.Time) (changed bool, err error)) error {
	unlock, err := s.sd.MakeAndLock(lockName)
	if err != nil {
		var se *statedir.Error
		if errors.As(err, &se) {
			return s.wrap(err)
		}
		return fmt.Errorf("pins: %w", err)
	}
	defer unlock()
	p, err := s.read()
	if err != nil {
		return err
	}
	// fn changes a copy: the cached parse is shared with readers
	st := &fileState{Version: Version, Pins: slices.Clone(p.st.Pins)}
	changed, err := fn(st, s.now().UTC())
	if err != nil || !changed {
		return err
	}
	b, err := st.encode()
	if err != nil {
		return fmt.Errorf("pins: %w", err)
	}
	s.sd.RemoveStaleTemps(FileName)
	if _, err := s.sd.Replace(FileName, b); err != nil {
		return fmt.Errorf("pins: %w", err)
	}
	return nil
}

// load checks the state dir and reads the file without the lock.
func (s *Store) load() (*parsed, error) {
	ok, err := s.sd.Check()
	if err != nil {
		return nil, s.wrap(err)
	}
	if !ok {
		return newParsed(&fileState{Version: Version}), nil
	}
	if _, _, err := s.sd.CheckFile(lockName); err != nil {
		return nil, s.wrap(err)
	}
	return s.read()
}

// read returns the file as it is now, from the cache when its identity is
// unchanged, else read (O_NOFOLLOW, O_NONBLOCK, at most MaxFileSize),
// decoded and cached. Missing is empty.
func (s *Store) read() (*parsed, error) {
	exists, lst, err := s.sd.CheckFile(FileName)
	if err != nil {
		return nil, s.wrap(err)
	}
	if !exists {
		return newParsed(&fileState{Version: Version}), nil
	}
	s.mu.Lock()
	c := s.cache
	s.mu.Unlock()
	if c != nil && c.id == idOf(lst) {
		return c, nil
	}
	f, fst, err := s.sd.Open(FileName, unix.O_RDONLY)
	if errors.Is(err, os.ErrNotExist) {
		return newParsed(&fileState{Version: Version}), nil
	}
	if err != nil {
		return nil, s.wrap(err)
	}
	hint := "inspect it, then move it aside (mv " + s.path + " " + s.path + ".bad): every tool is then pinned anew on first sight"
	b, err := statedir.ReadCapped(f, fst.Size, MaxFileSize)
	var big *statedir.TooBigError
	if errors.As(err, &big) {
		f.Close()
		return nil, s.unreadable(big, hint)
	}
	if err != nil {
		f.Close()
		return nil, s.wrap(err)
	}
	st, err := decode(b)
	if err != nil {
		f.Close()
		if errors.Is(err, ErrNewerVersion) {
			hint = "a newer mcpx-policy wrote this file: use that version; the file was left untouched"
		}
		return nil, s.unreadable(err, hint)
	}
	p := newParsed(st)
	p.id, p.file = idOf(fst), f
	s.mu.Lock()
	old := s.cache
	s.cache = p
	s.mu.Unlock()
	if old != nil && old.file != nil {
		old.file.Close()
	}
	return p, nil
}

func (s *Store) unreadable(err error, hint string) *UnreadableError {
	return &UnreadableError{Path: s.path, Err: err, Hint: hint}
}

// wrap turns a *statedir.Error into an *UnreadableError; any other error
// (nil included) is returned as is.
func (s *Store) wrap(err error) error {
	var se *statedir.Error
	if !errors.As(err, &se) {
		return err
	}
	return s.unreadable(se.Err, se.Hint)
}
