// Package ledger is the unknown-outcome ledger (docs/ledger.md): a versioned JSON
// file that remembers writes whose outcome was lost, so that further writes
// to the same server are denied until an operator clears them.
//
// The file is replaced atomically (google/renameio/v2 plus an fsync of the
// directory) under an exclusive flock on a separate lock file, so several
// processes — a daemon, a proxy, a CLI clear — never lose each other's
// updates. A missing file is an empty ledger; a corrupt, truncated,
// unreadable or newer-version file makes every read and every mutation fail
// with an *UnreadableError and is never overwritten.
//
// A write is tracked through its dispatch lifecycle: Begin makes an
// in-flight marker durable before the request bytes go out; Settle (a
// definite result or error) or Abort (the bytes never went out) removes it;
// Unknown turns it into an unknown-outcome entry. A marker left by a process
// that died becomes an unknown-outcome entry, so a kill -9 at any moment
// leaves either a settled call or an unknown entry — never a lost write.
package ledger

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/statedir"
)

// ErrUnreadable is matched (errors.Is) by every error about a ledger file
// that exists but cannot be used: unreadable, corrupt, truncated or of a
// newer version.
var ErrUnreadable = statedir.ErrUnreadable

// ErrNewerVersion is matched (errors.Is) by the UnreadableError of a file
// written by a newer build (version > Version).
var ErrNewerVersion = statedir.Kind(statedir.ErrNewerVersion, "newer ledger version")

// ErrNotFound is returned by Clear when the id names no unknown-outcome
// entry of that server.
var ErrNotFound = statedir.Kind(statedir.ErrNotFound, "no such unknown-outcome entry")

// UnreadableError reports a ledger that exists but cannot be used: the
// file, the state dir, or the lock or slot file beside it, or the
// database (Store "ledger"). Nothing is overwritten; writes stay blocked
// until it reads again.
type UnreadableError = statedir.UnreadableError

// Ledger is the ledger in one state directory. It is safe for concurrent
// use by many goroutines; several Ledgers, in this or other processes, may
// share a directory.
type Ledger struct {
	dir  string
	path string
	sd   statedir.Dir

	mu      sync.Mutex
	queue   []*op
	pending int // submitted, not yet committed
	writing bool
	// retry holds changes whose commit failed: the retrier applies them
	// again in the background, with backoff, and so does every commit.
	// Unknowns among them are reported by Entries and List meanwhile.
	retry    map[string]retryOp
	retrying bool     // the retrier runs
	slots    *os.File // the slot file, opened by the first Begin

	commits uint64 // successful file replacements, for tests and benchmarks
	parses  atomic.Uint64

	// cache is the last file parsed, reused while its identity (fileID)
	// holds; it keeps that file open. snap lets a read skip the checks by
	// path while the state dir is unchanged (snapshot.go); it is dropped
	// whenever cache changes. Both under cacheMu, which a fast read holds
	// (read-locked) while it uses their descriptors.
	cacheMu   sync.RWMutex
	cache     *parsed
	snap      *snapshot
	fastLoads atomic.Uint64
}

// StateDirEnv names the environment variable that chooses the state dir
// when none is given (DefaultStateDir).
const StateDirEnv = "MCPX_POLICY_STATE_DIR"

// DefaultStateDir is $MCPX_POLICY_STATE_DIR, else $XDG_STATE_HOME/mcpx-policy,
// else ~/.local/state/mcpx-policy. It errors only when none is set and the
// home directory is unknown.
func DefaultStateDir() (string, error) {
	if d := os.Getenv(StateDirEnv); d != "" {
		return d, nil
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "mcpx-policy"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no state directory: set MCPX_POLICY_STATE_DIR or XDG_STATE_HOME: %w", err)
	}
	return filepath.Join(home, ".local", "state", "mcpx-policy"), nil
}

// Open returns the ledger in dir ("" means DefaultStateDir). It touches
// nothing on disk: the directory (0700), the lock file and ledger.json
// (0600) are created by the first change. Open does not read the file, so
// an unreadable file is reported by the first read or change.
func Open(dir string) (*Ledger, error) {
	if dir == "" {
		d, err := DefaultStateDir()
		if err != nil {
			return nil, err
		}
		dir = d
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("ledger: state dir %q: %w", dir, err)
	}
	return &Ledger{dir: abs, path: filepath.Join(abs, FileName), sd: statedir.New(abs), retry: map[string]retryOp{}}, nil
}

// Path is the ledger file's path.
func (l *Ledger) Path() string { return l.path }

// Dir is the state directory.
func (l *Ledger) Dir() string { return l.dir }

// State is a snapshot of the ledger for listing.
type State struct {
	// Entries are the unknown-outcome writes, oldest first. They include
	// in-flight markers whose process is gone (not yet rewritten by
	// Recover or the next change), markers whose owner declared the
	// outcome unknown and could not save the entry yet (its slot is
	// locked), and unknowns of this Ledger whose commit failed and is
	// being retried.
	Entries []Entry `json:"entries"`
	// InFlight are writes of live processes awaiting their answer.
	InFlight []Marker `json:"in_flight"`
	// Cleared are the entries operators cleared, in clear order.
	Cleared []Cleared `json:"cleared"`
	// Seen is, for each server with entries, the token of its entries as
	// listed here (Seen): ClearSeen with it clears exactly those.
	Seen map[string]string `json:"seen"`
}

// Pending is what the policy sees of one server's unknown-outcome entries.
type Pending struct {
	// Entries are the oldest entries, oldest first, at most the limit
	// asked for.
	Entries []decision.LedgerEntry
	// Total counts them all.
	Total int
	// Seen is the token of all of them (Seen): ClearSeen with it clears
	// exactly these. "" when there are none.
	Seen string
}

// Listed is how many entries a decision lists (Pending's limit in the
// engine): a deny names the oldest Listed entries and the total.
const Listed = 10

// List reads the ledger without locking (the file is only ever replaced
// whole). A missing file is an empty State; any other read problem is an
// *UnreadableError. Safe for concurrent use; it does not write.
func (l *Ledger) List() (State, error) {
	empty := State{Entries: []Entry{}, InFlight: []Marker{}, Cleared: []Cleared{}, Seen: map[string]string{}}
	var s State
	err := l.view(func(p *parsed, t *slotTester, last bool) (bool, error) {
		s = State{Entries: slices.Clone(p.st.Entries), Cleared: slices.Clone(nonNil(p.st.Cleared)), InFlight: []Marker{}}
		// this Ledger's unsaved unknowns first: they know their cause
		ex := l.retried(func(string) bool { return true })
		mx, tested, err := l.extras(p, p.st.InFlight, t, last)
		if err != nil {
			return false, err
		}
		ex = append(ex, mx...)
		for _, x := range ex {
			switch {
			case x.inFlight:
				s.InFlight = append(s.InFlight, x.marker)
			case !p.hasEntry(x.entry.ID) && !p.cleared(x.entry.ID) && !containsID(s.Entries, x.entry.ID):
				s.Entries = append(s.Entries, x.entry)
			}
		}
		s.InFlight = slices.DeleteFunc(s.InFlight, func(m Marker) bool { return containsID(s.Entries, m.ID) })
		return tested, nil
	})
	if err != nil {
		return empty, err
	}
	slices.SortStableFunc(s.Entries, func(a, b Entry) int { return cmpTime(a.Time, b.Time) })
	s.Entries = nonNil(s.Entries)
	s.Seen = SeenOf(s.Entries)
	return s, nil
}

// Entries returns every unknown-outcome entry of server as the policy
// sees them, oldest first; nil when there are none. Pending with no
// limit. Safe for concurrent use; it does not lock and does not write.
func (l *Ledger) Entries(server string) ([]decision.LedgerEntry, error) {
	p, err := l.Pending(server, -1)
	return p.Entries, err
}

// Pending returns server's unknown-outcome entries as the policy sees
// them (input.ledger): the oldest limit of them (all when limit < 0) and
// the total. An error (always an *UnreadableError for a bad file or state
// dir) means the caller must deny writes with LedgerUnreadable.
//
// It reads only server's part of a parse cached by the file's identity
// (device, inode, size, modification and change time): a decision costs a
// stat of the state dir and an fstat of each of its files while the dir
// is unchanged (snapshot.go), a few stat calls else, not a read of the
// file. In-flight markers of server
// count as entries when their process is gone or when their slot is locked
// (the owner declared the outcome unknown and could not save it yet); the
// slot test is followed by a second stat, and the read is done again if
// the file changed meanwhile. Safe for concurrent use; it does not lock
// and does not write.
func (l *Ledger) Pending(server string, limit int) (Pending, error) {
	var out Pending
	err := l.view(func(p *parsed, t *slotTester, last bool) (bool, error) {
		idx := p.index()
		srv := idx.servers[server]
		var markers []Marker
		if srv != nil {
			for _, i := range srv.markers {
				markers = append(markers, p.st.InFlight[i])
			}
		}
		ex := l.retried(func(s string) bool { return s == server })
		mx, tested, err := l.extras(p, markers, t, last)
		if err != nil {
			return false, err
		}
		ex = append(ex, mx...)
		var more []Entry
		for _, x := range ex {
			if !x.inFlight && !p.hasEntry(x.entry.ID) && !p.cleared(x.entry.ID) &&
				!slices.ContainsFunc(more, func(e Entry) bool { return e.ID == x.entry.ID }) {
				more = append(more, x.entry)
			}
		}
		slices.SortStableFunc(more, func(a, b Entry) int { return cmpTime(a.Time, b.Time) })
		var file []int32
		if srv != nil {
			file = srv.entries
		}
		out = Pending{Total: len(file) + len(more)}
		if out.Total > 0 {
			ids := make([]string, 0, out.Total)
			for _, i := range file {
				ids = append(ids, p.st.Entries[i].ID)
			}
			for _, e := range more {
				ids = append(ids, e.ID)
			}
			out.Seen = SeenIDs(ids)
		}
		n := out.Total
		if limit >= 0 && limit < n {
			n = limit
		}
		if n > 0 {
			out.Entries = make([]decision.LedgerEntry, 0, n)
		}
		for len(out.Entries) < n { // merge, oldest first
			if len(more) > 0 && (len(file) == 0 || cmpTime(more[0].Time, p.st.Entries[file[0]].Time) < 0) {
				out.Entries = append(out.Entries, more[0].LedgerEntry)
				more = more[1:]
			} else {
				out.Entries = append(out.Entries, p.st.Entries[file[0]].LedgerEntry)
				file = file[1:]
			}
		}
		return tested, nil
	})
	if err != nil {
		return Pending{}, err
	}
	return out, nil
}

// maxViews bounds how often a reader reads again because the file changed
// while it tested slots; the last attempt counts every live marker with a
// slot as an entry (fail closed).
const maxViews = 8

// view runs fn on the current parse until fn made no slot test or the file
// did not change since: a slot is unlocked by its owner only after the
// entry it stands for is in the file, so a reader that found it unlocked
// and then sees the same file saw the marker in flight.
func (l *Ledger) view(fn func(p *parsed, t *slotTester, last bool) (tested bool, err error)) error {
	for attempt := 1; ; attempt++ {
		p, err := l.load()
		if err != nil {
			return err
		}
		t := &slotTester{l: l}
		tested, err := fn(p, t, attempt == maxViews)
		t.close()
		if err != nil {
			return err
		}
		if !tested || attempt == maxViews {
			return nil
		}
		if same, err := l.unchanged(p); err != nil || same {
			return err
		}
	}
}

// extra is an in-flight marker as a reader sees it: an entry, or a write
// in flight.
type extra struct {
	entry    Entry
	marker   Marker
	inFlight bool
}

// extras classifies markers: a locked slot or a dead owner makes an entry,
// a live owner a write in flight. tested says whether a slot was found
// unlocked (the caller must check the file did not change since it was
// read). With last, an unlocked slot of a live owner counts as locked.
func (l *Ledger) extras(p *parsed, markers []Marker, t *slotTester, last bool) ([]extra, bool, error) {
	if len(markers) == 0 {
		return nil, false, nil
	}
	self := selfOwner()
	alive := livenessCache{}
	var out []extra
	tested := false
	for _, m := range markers {
		if p.hasEntry(m.ID) {
			continue // the entry is already counted
		}
		if m.Slot > 0 {
			locked, err := t.locked(m.Slot)
			if err != nil {
				return nil, false, err
			}
			if locked || last {
				out = append(out, extra{entry: unsavedEntry(m)})
				continue
			}
			tested = true
		}
		if alive.check(m.Owner, self) {
			out = append(out, extra{marker: m, inFlight: true})
		} else {
			out = append(out, extra{entry: deadEntry(m)})
		}
	}
	return out, tested, nil
}

// retried returns this Ledger's unknowns whose commit failed, of the
// servers keep accepts.
func (l *Ledger) retried(keep func(server string) bool) []extra {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []extra
	for _, r := range l.retry {
		if r.unknown != nil && keep(r.unknown.Server) {
			out = append(out, extra{entry: *r.unknown})
		}
	}
	return out
}

// unsavedEntry is the unknown-outcome entry a marker with a locked slot
// stands for.
func unsavedEntry(m Marker) Entry {
	return Entry{LedgerEntry: m.LedgerEntry,
		Cause: fmt.Sprintf("outcome unknown; process %d could not save the entry yet and keeps retrying", m.Owner.PID)}
}

// parsed is one version of the file, parsed, with its identity. Never
// modified once made.
type parsed struct {
	id      fileID
	missing bool     // no file: an empty ledger
	pin     *os.File // the file, kept open while cached (see fileID)
	st      *fileState

	once sync.Once
	idx  *index
}

// index is a parse's entries and markers by server, built on first use.
type index struct {
	servers map[string]*serverIndex
	entries map[string]struct{} // ids of entries
	cleared map[string]struct{} // ids of cleared entries
}

type serverIndex struct {
	entries []int32 // into st.Entries, oldest first
	markers []int32 // into st.InFlight
}

func (p *parsed) index() *index {
	p.once.Do(func() {
		x := &index{servers: map[string]*serverIndex{},
			entries: make(map[string]struct{}, len(p.st.Entries)), cleared: make(map[string]struct{}, len(p.st.Cleared))}
		srv := func(name string) *serverIndex {
			s := x.servers[name]
			if s == nil {
				s = &serverIndex{}
				x.servers[name] = s
			}
			return s
		}
		for i, e := range p.st.Entries {
			s := srv(e.Server)
			s.entries = append(s.entries, int32(i))
			x.entries[e.ID] = struct{}{}
		}
		for _, s := range x.servers {
			slices.SortStableFunc(s.entries, func(a, b int32) int { return cmpTime(p.st.Entries[a].Time, p.st.Entries[b].Time) })
		}
		for i, m := range p.st.InFlight {
			s := srv(m.Server)
			s.markers = append(s.markers, int32(i))
		}
		for _, c := range p.st.Cleared {
			x.cleared[c.ID] = struct{}{}
		}
		p.idx = x
	})
	return p.idx
}

func (p *parsed) hasEntry(id string) bool {
	_, ok := p.index().entries[id]
	return ok
}

func (p *parsed) cleared(id string) bool {
	_, ok := p.index().cleared[id]
	return ok
}

// load returns the current version of the file, checking the state dir and
// its files first: from the cache when the file's identity is unchanged,
// else read (O_NOFOLLOW, O_NONBLOCK, at most MaxFileSize) and parsed. A
// missing dir or file is an empty ledger; anything else wrong is an
// *UnreadableError.
func (l *Ledger) load() (*parsed, error) {
	if p := l.fastLoad(); p != nil {
		return p, nil
	}
	start := time.Now()
	dir, ok, err := l.sd.CheckedStat()
	if err != nil {
		return nil, l.wrap(err)
	}
	if !ok {
		return missingFile(), nil
	}
	for _, name := range [2]string{lockName, slotsName} {
		if _, _, err := l.checkName(name); err != nil {
			return nil, err
		}
	}
	exists, st, err := l.checkName(FileName)
	if err != nil {
		return nil, err
	}
	if !exists {
		l.remember(start, &dir, missingFile())
		return missingFile(), nil
	}
	if st.Size > MaxFileSize {
		return nil, l.tooBig(st.Size)
	}
	id := idOf(st)
	l.cacheMu.RLock()
	p := l.cache
	l.cacheMu.RUnlock()
	if p != nil && p.id == id {
		l.remember(start, &dir, p)
		return p, nil
	}
	f, fst, err := l.openChecked(FileName, unix.O_RDONLY)
	if errors.Is(err, os.ErrNotExist) {
		return missingFile(), nil // removed since the stat
	}
	if err != nil {
		return nil, err
	}
	b, err := l.readCapped(f, fst)
	if err == nil {
		var fs *fileState
		if fs, err = decodeFile(b); err == nil {
			l.parses.Add(1)
			p = &parsed{id: idOf(fst), pin: f, st: fs}
			l.setCache(p)
			l.remember(start, &dir, p)
			return p, nil
		}
		hint := ""
		if errors.Is(err, ErrNewerVersion) {
			hint = statedir.NewerHint
		}
		err = l.unreadable(err, hint)
	}
	f.Close()
	l.setCache(nil)
	return nil, err
}

// setCache makes p the cached parse and closes the file the previous one
// kept open, and drops the snapshot, which may refer to it.
func (l *Ledger) setCache(p *parsed) {
	l.cacheMu.Lock()
	old := l.cache
	l.cache = p
	var snap *snapshot
	if old != p {
		snap, l.snap = l.snap, nil
	}
	l.cacheMu.Unlock()
	snap.close()
	if old != nil && old != p && old.pin != nil {
		old.pin.Close()
	}
}

// unchanged reports whether p is still the file at the path.
func (l *Ledger) unchanged(p *parsed) (bool, error) {
	var st unix.Stat_t
	err := unix.Lstat(l.path, &st)
	if errors.Is(err, unix.ENOENT) {
		return p.missing, nil
	}
	if err != nil {
		return false, l.unreadable(fmt.Errorf("%s: %w", l.path, err), "")
	}
	l.cacheMu.RLock()
	defer l.cacheMu.RUnlock()
	return !p.missing && l.cache == p && idOf(&st) == p.id, nil
}

// missingFile is the parse of a ledger with no file: one for every reader
// (a decision reads the ledger each time, and most ledgers have no file),
// never changed — a write clones its state first, as for any parse.
func missingFile() *parsed { return noFile }

var noFile = &parsed{missing: true, st: emptyState()}

// slotTester tests slots of the slot file through its own open of it, so
// that it sees the locks of every other open, this process's included.
type slotTester struct {
	l       *Ledger
	f       *os.File
	opened  bool
	missing bool
}

func (t *slotTester) locked(slot int64) (bool, error) {
	if !t.opened {
		t.opened = true
		f, _, err := t.l.openChecked(slotsName, unix.O_RDONLY)
		switch {
		case errors.Is(err, os.ErrNotExist):
			t.missing = true // no slot file: no slot was ever locked
		case err != nil:
			return false, err
		default:
			t.f = f
		}
	}
	if t.missing {
		return false, nil
	}
	locked, err := slotLocked(t.f, slot)
	if err != nil {
		return false, t.l.unreadable(fmt.Errorf("test slot %d of %s: %w", slot, t.f.Name(), err), "")
	}
	return locked, nil
}

func (t *slotTester) close() {
	if t.f != nil {
		t.f.Close()
	}
}

func containsID(es []Entry, id string) bool {
	return slices.ContainsFunc(es, func(e Entry) bool { return e.ID == id })
}

// cmpTime orders ledger times. Times this package writes sort as strings;
// a time it cannot parse sorts by its text.
func cmpTime(a, b string) int {
	if len(a) == len(TimeFormat) && len(b) == len(TimeFormat) && a[len(a)-1] == 'Z' && b[len(b)-1] == 'Z' {
		return strings.Compare(a, b) // fixed width, UTC: the text orders
	}
	ta, ea := time.Parse(time.RFC3339Nano, a)
	tb, eb := time.Parse(time.RFC3339Nano, b)
	if ea == nil && eb == nil {
		return ta.Compare(tb)
	}
	return strings.Compare(a, b)
}
