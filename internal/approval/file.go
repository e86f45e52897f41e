package approval

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcpx/mcpx-policy/internal/statedir"
)

// MaxFileSize caps approvals.log: a bigger log is unreadable. Compaction
// keeps a log under twice its live requests and compactFloor, far below
// it with the default caps.
const MaxFileSize = 64 << 20

// compactFloor is how big a log may grow before it is compacted whatever
// its live requests: compaction rewrites the live requests once per
// compactFloor of lines appended at least, so its cost per operation is
// O(1) amortized.
const compactFloor = 256 << 10

// maxLiveBytes caps what the live requests take in the log: a request
// beyond it is refused with ErrFull, so that the log, compacted past twice
// its live requests and compactFloor, never reaches MaxFileSize (which
// would make it unreadable, and every ask of every caller fail). The
// default caps stay far below it (256 prompts of at most 64 KiB).
const maxLiveBytes = MaxFileSize/2 - compactFloor

// Store is the approval store of one state dir: the log approvals.log,
// appended to under an exclusive flock on approvals.lock and fdatasynced
// before each change returns, read under a shared one. Each Store keeps
// what it read of the log and reads only what other processes appended
// since, so an operation costs O(1) in the number of requests (amortized:
// the log is compacted when it outgrows its live requests).
//
// It is safe for concurrent use; several Stores, in this or other
// processes, may share a directory.
type Store struct {
	dir  statedir.Dir
	path string
	cfg  Config

	mu  sync.Mutex
	m   *mem     // nil: not read yet (or the log changed under it)
	f   *os.File // the log, open for reading and appending
	id  [2]uint64
	off int64 // bytes of whole lines read
	end int64 // the log's size when last read: off..end is a torn line
}

// Open returns the store in the state dir dir (made absolute). It touches
// nothing on disk: the directory (0700), approvals.lock and approvals.log
// (0600) are created by the first request.
func Open(dir string, opts ...Option) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("approval: state dir %q: %w", dir, err)
	}
	return &Store{dir: statedir.New(abs), path: filepath.Join(abs, LogName), cfg: Configure(opts...)}, nil
}

// Path is approvals.log's path.
func (s *Store) Path() string { return s.path }

// Where is Path.
func (s *Store) Where() string { return s.path }

// Request: see Backend.
func (s *Store) Request(r Record) (Record, error) {
	if err := CheckRequest(r); err != nil {
		return Record{}, err
	}
	var out Record
	err := s.change(func(m *mem, now time.Time) ([]byte, error) {
		if same, ok := m.same(r, now); ok {
			out = same
			return nil, nil
		}
		if err := s.cfg.Limits.Admit(r, m.counts(r)); err != nil {
			return nil, err
		}
		out = Renew(r, now, s.cfg.TTL)
		line, err := requestOf(out)
		if err == nil && m.liveBytes+int64(len(line)) > maxLiveBytes {
			err = fmt.Errorf("%w: their prompts take %d bytes, the most %s keeps; answer or decline them, or let them expire",
				ErrFull, m.liveBytes, LogName)
		}
		if err != nil {
			return nil, err
		}
		return line, nil
	})
	if err != nil {
		return Record{}, err
	}
	return out, nil
}

// Approve: see Backend.
func (s *Store) Approve(id, sha256 string) (Record, error) {
	return s.answer(id, opApprove, func(r *Record) error {
		switch {
		case r.SHA256 != sha256:
			return fmt.Errorf("%w: approval %s is for the call with sha256 %s, not %s", ErrMismatch, id, r.SHA256, sha256)
		case r.State == Declined:
			return fmt.Errorf("%w: approval %s", ErrDeclined, id)
		}
		return nil
	})
}

// Decline: see Backend.
func (s *Store) Decline(id string) (Record, error) {
	return s.answer(id, opDecline, func(*Record) error { return nil })
}

func (s *Store) answer(id, op string, check func(*Record) error) (Record, error) {
	var out Record
	err := s.change(func(m *mem, now time.Time) ([]byte, error) {
		e, err := m.find(id, now)
		if errors.Is(err, ErrExpired) {
			return expired(e, err)
		}
		if err != nil {
			return nil, err
		}
		if err := check(&e.Record); err != nil {
			return nil, err
		}
		out = e.Record
		to := Approved
		if op == opDecline {
			to = Declined
		}
		if e.State == to {
			return nil, nil
		}
		out.State, out.Answered = to, now
		return answerOf(op, id, now)
	})
	return out, err
}

// expired is the change for request e found expired: its removal, and
// err.
func expired(e *entry, err error) ([]byte, error) {
	line, lerr := removeOf(e.ID, whyExpired)
	if lerr != nil {
		return nil, err
	}
	return line, err
}

// Consume: see Backend.
func (s *Store) Consume(id, sha256, binding string) (Record, error) {
	var out Record
	err := s.change(func(m *mem, now time.Time) ([]byte, error) {
		e, err := m.find(id, now)
		if errors.Is(err, ErrExpired) {
			out = e.Record
			return expired(e, err)
		}
		if err != nil {
			return nil, err
		}
		out = e.Record
		why := whyUsed
		switch {
		case e.SHA256 != sha256:
			err, why = fmt.Errorf("%w: approval %s is for the call with sha256 %s, this call's is %s", ErrMismatch, id, e.SHA256, sha256), whyVoid
		case e.Binding != binding:
			err, why = fmt.Errorf("%w: approval %s was given for other reasons to ask, another principal or another config revision than this call's now", ErrMismatch, id), whyVoid
		case e.State == Declined:
			err, why = fmt.Errorf("%w: approval %s", ErrDeclined, id), whyDeclined
		case e.State == Pending:
			return nil, fmt.Errorf("%w: approval %s", ErrNotApproved, id)
		}
		line, lerr := removeOf(id, why)
		if lerr != nil {
			return nil, lerr
		}
		return line, err
	})
	return out, err
}

// Discard: see Backend.
func (s *Store) Discard(id string) (bool, error) {
	found := false
	err := s.change(func(m *mem, now time.Time) ([]byte, error) {
		if m.recs[id] == nil {
			return nil, nil
		}
		found = true
		return removeOf(id, whyDiscarded)
	})
	return found, err
}

// List: see Backend. A missing state dir or log is an empty list.
func (s *Store) List() ([]Record, error) {
	var out []Record
	err := s.read(func(m *mem, now time.Time) { out = m.list(now) })
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []Record{}
	}
	return out, nil
}

// Get: see Backend.
func (s *Store) Get(id string) (Record, error) {
	var out Record
	var ferr error
	err := s.read(func(m *mem, now time.Time) {
		var e *entry
		if e, ferr = m.find(id, now); ferr == nil {
			out = e.Record
		}
	})
	if err != nil {
		return Record{}, err
	}
	if ferr != nil {
		return Record{}, ferr
	}
	return out, nil
}

// change is one change of the store under the exclusive lock: make and
// check the state dir and its files, read what was appended since the last
// read (a log that does not read aborts, nothing written), let fn decide
// on the line to append (nil for none), and append it durably: one
// write(2), then fdatasync. fn's error is returned, after its line is
// appended (a refusal may remove the request it refused); a failed append
// is returned when fn had no error of its own. The log is compacted when
// it outgrew its live requests.
func (s *Store) change(fn func(m *mem, now time.Time) ([]byte, error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	unlock, err := s.dir.MakeAndLock(lockName)
	if err != nil {
		return s.wrap(err)
	}
	defer unlock()
	if err := s.sync(); err != nil {
		return err
	}
	now := s.cfg.Clock()
	s.m.advance(now)
	line, ferr := fn(s.m, now)
	if line == nil {
		return ferr
	}
	err = s.append(line)
	if ferr != nil {
		return ferr
	}
	if err != nil {
		return err
	}
	if s.end > 2*s.m.liveBytes+compactFloor {
		// A failed compaction leaves the log as it was: the change stands.
		s.compact(now)
	}
	return nil
}

// read is one read of the store under the shared lock: what was appended
// since the last read is read first. A missing state dir or lock file is
// an empty store.
func (s *Store) read(fn func(m *mem, now time.Time)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ok, err := s.dir.Check()
	if err != nil {
		return s.wrap(err)
	}
	if !ok {
		fn(newMem(), s.cfg.Clock())
		return nil
	}
	// Without a lock file no writer ever came (it makes the lock file
	// first), or someone removed it: the whole lines of the log are read
	// all the same.
	unlock, ok, err := s.dir.LockShared(lockName)
	if err != nil {
		return s.wrap(err)
	}
	if ok {
		defer unlock()
	}
	if err := s.sync(); err != nil {
		return err
	}
	now := s.cfg.Clock()
	s.m.advance(now)
	fn(s.m, now)
	return nil
}

// sync brings s.m up to the log as it is now; the caller holds a lock. A
// log replaced since (compacted, moved aside) is read again from its
// start; a missing one is empty.
func (s *Store) sync() error {
	exists, st, err := s.dir.CheckFile(LogName)
	if err != nil {
		s.forget()
		return s.wrap(err)
	}
	if !exists {
		s.forget()
		s.m = newMem()
		return nil
	}
	// A log that shrank under what was read was cut by hand: read it anew.
	if s.f == nil || s.m == nil || s.id != [2]uint64{uint64(st.Dev), st.Ino} || st.Size < s.off {
		s.forget()
		f, fst, err := s.dir.Open(LogName, unix.O_RDWR|unix.O_APPEND)
		if errors.Is(err, os.ErrNotExist) {
			s.m = newMem()
			return nil
		}
		if err != nil {
			return s.wrap(err)
		}
		s.f, s.id, s.m = f, [2]uint64{uint64(fst.Dev), fst.Ino}, newMem()
		st = fst
	}
	if st.Size > MaxFileSize {
		s.forget()
		return s.unreadable(fmt.Errorf("%s is %d bytes, more than the %d a log may be", s.path, st.Size, MaxFileSize), s.aside())
	}
	if err := s.readFrom(st.Size); err != nil {
		s.forget()
		return err
	}
	return nil
}

// readFrom reads the log from s.off up to size and applies each whole line.
func (s *Store) readFrom(size int64) error {
	s.end = size
	if size <= s.off {
		return nil
	}
	buf := make([]byte, size-s.off)
	n, err := s.f.ReadAt(buf, s.off)
	if err != nil && !errors.Is(err, io.EOF) {
		return s.unreadable(fmt.Errorf("read %s: %w", s.path, err), "")
	}
	buf = buf[:n]
	s.end = s.off + int64(n)
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			return nil // a torn line, or none
		}
		line := buf[:i+1]
		if s.off == 0 {
			if err := checkHeader(line); err != nil {
				hint := s.aside()
				if errors.Is(err, ErrNewerVersion) {
					hint = statedir.NewerHint
				}
				return s.unreadable(fmt.Errorf("%s: %w", s.path, err), hint)
			}
		} else {
			l, err := decodeLine(line)
			if err == nil {
				err = s.m.apply(l, int64(len(line)))
			}
			if err != nil {
				return s.unreadable(fmt.Errorf("%s at byte %d: %w", s.path, s.off, err), s.aside())
			}
		}
		s.off += int64(len(line))
		buf = buf[i+1:]
	}
}

// append writes line at the end of the log (created with its header if
// missing), after cutting a torn line a killed writer left, and syncs it;
// then applies it. The caller holds the exclusive lock and has synced.
func (s *Store) append(line []byte) error {
	if s.f == nil {
		if err := s.create(); err != nil {
			return err
		}
	}
	if s.end > s.off {
		if err := s.f.Truncate(s.off); err != nil {
			s.forget()
			return fmt.Errorf("approval: cut the torn end of %s: %w", s.path, err)
		}
		s.end = s.off
	}
	out := line
	if s.off == 0 {
		out = append(slices.Clip(header), line...)
	}
	n, err := s.f.Write(out)
	if err == nil {
		err = datasync(int(s.f.Fd()))
	}
	if err != nil {
		// What reached the file is read back by the next sync: a whole
		// line is a fact (its operation reports this error all the same),
		// a torn one is cut.
		s.forget()
		return fmt.Errorf("approval: write %s: %w", s.path, err)
	}
	if s.off == 0 {
		s.off, s.end = int64(len(header)), int64(len(header))
	}
	l, err := decodeLine(line)
	if err == nil {
		err = s.m.apply(l, int64(len(line)))
	}
	if err != nil {
		s.forget()
		return fmt.Errorf("approval: %w", err)
	}
	s.off += int64(n - (len(out) - len(line)))
	s.end = s.off
	return nil
}

// create makes the log (0600) and syncs the directory, so that the lines
// appended to it survive a power cut.
func (s *Store) create() error {
	f, st, err := s.dir.Open(LogName, unix.O_RDWR|unix.O_APPEND|unix.O_CREAT|unix.O_EXCL)
	if err != nil {
		return s.wrap(err)
	}
	if err := s.dir.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("approval: %w", err)
	}
	s.f, s.id, s.off, s.end, s.m = f, [2]uint64{uint64(st.Dev), st.Ino}, 0, 0, newMem()
	return nil
}

// compact replaces the log with its header and the live requests, their
// answers folded in, atomically and durably (statedir.Dir.Replace), and
// reads it again. The caller holds the exclusive lock.
func (s *Store) compact(now time.Time) {
	var b bytes.Buffer
	b.Write(header)
	for _, r := range s.m.list(now) {
		line, err := requestOf(r)
		if err != nil {
			return
		}
		b.Write(line)
	}
	s.dir.RemoveStaleTemps(LogName)
	if _, err := s.dir.Replace(LogName, b.Bytes()); err != nil {
		return
	}
	s.forget()
	s.sync() // an error here is the next operation's
}

// forget drops what was read: the next sync reads the log from its start.
func (s *Store) forget() {
	if s.f != nil {
		s.f.Close()
	}
	s.f, s.m, s.off, s.end, s.id = nil, nil, 0, 0, [2]uint64{}
}

func (s *Store) aside() string {
	return "move it aside (mv " + s.path + " " + s.path + ".bad): the requests in it are lost and their calls are asked again"
}

// wrap turns a *statedir.Error into the store's *UnreadableError; other
// errors read "approval: cause".
func (s *Store) wrap(err error) error {
	var se *statedir.Error
	if errors.As(err, &se) {
		return s.unreadable(se.Err, se.Hint)
	}
	var ue *UnreadableError
	if errors.As(err, &ue) {
		return err
	}
	return fmt.Errorf("approval: %w", err)
}

func (s *Store) unreadable(cause error, hint string) error {
	return &UnreadableError{Store: "approval store", Path: s.path, Err: cause, Hint: hint}
}
