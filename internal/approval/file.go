package approval

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

	"github.com/mcpx/mcpx-policy/internal/statedir"
)

// FileName is the store's file inside the state directory.
const FileName = "approvals.json"

// lockName is the lock file beside it: an exclusive flock on it serializes
// every read-modify-write of FileName.
const lockName = "approvals.lock"

// Version is the file format version this build reads and writes. A file
// with a higher version is unreadable (ErrNewerVersion) and never
// overwritten.
const Version = 1

// fileState is the whole file: {"version": 1, "approvals": [Record…]}.
type fileState struct {
	Version   int      `json:"version"`
	Approvals []Record `json:"approvals"`

	dropped bool // live dropped an expired request: the file must be written
}

var (
	hexID  = regexp.MustCompile(`^[0-9a-f]{32}$`)
	hexSum = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// decode parses the file strictly. Every failure is the cause of an
// *UnreadableError: the caller must neither use nor overwrite the file.
func decode(b []byte) (*fileState, error) {
	var st fileState
	if err := statedir.DecodeVersioned(b, Version, ErrNewerVersion, &st); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for i, r := range st.Approvals {
		switch {
		case !hexID.MatchString(r.ID) || seen[r.ID]:
			return nil, fmt.Errorf("approvals[%d]: id %q is not 32 hex digits, or not unique", i, r.ID)
		case !hexSum.MatchString(r.SHA256):
			return nil, fmt.Errorf("approvals[%d]: sha256 %q is not 64 hex digits", i, r.SHA256)
		case r.State != Pending && r.State != Approved && r.State != Declined:
			return nil, fmt.Errorf("approvals[%d]: unknown state %q", i, r.State)
		case r.Expires.IsZero() || r.Server == "" || r.Tool == "":
			return nil, fmt.Errorf("approvals[%d]: server, tool and expires are required", i)
		}
		seen[r.ID] = true
	}
	return &st, nil
}

// encode renders the file with one request per line, each compact (a
// prompt is kept byte for byte as it was given).
func (st *fileState) encode() ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "{\"version\": %d, \"approvals\": [", Version)
	for i, r := range st.Approvals {
		line, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n  ")
		b.Write(line)
	}
	if len(st.Approvals) > 0 {
		b.WriteByte('\n')
	}
	b.WriteString("]}\n")
	return b.Bytes(), nil
}

// live returns the index of request id if it has not expired; an expired
// one is removed (and dropped set) and is ErrExpired.
func (st *fileState) live(id string, now time.Time) (int, error) {
	i := slices.IndexFunc(st.Approvals, func(r Record) bool { return r.ID == id })
	if i < 0 {
		return -1, fmt.Errorf("%w: %s", ErrUnknown, id)
	}
	if exp := st.Approvals[i].Expires; !now.Before(exp) {
		st.Approvals = slices.Delete(st.Approvals, i, i+1)
		st.dropped = true
		return -1, fmt.Errorf("%w: approval %s expired at %s", ErrExpired, id, exp.Format(time.RFC3339))
	}
	return i, nil
}

// liveCount counts the unexpired requests.
func (st *fileState) liveCount(now time.Time) int {
	n := 0
	for _, r := range st.Approvals {
		if now.Before(r.Expires) {
			n++
		}
	}
	return n
}

// purge drops the expired requests.
func (st *fileState) purge(now time.Time) {
	n := len(st.Approvals)
	st.Approvals = slices.DeleteFunc(st.Approvals, func(r Record) bool { return !now.Before(r.Expires) })
	if len(st.Approvals) != n {
		st.dropped = true
	}
}

// transact is one read-modify-write under the exclusive lock: check the
// state dir and its files, read the file (missing is empty; unreadable
// aborts with nothing written), let fn change it, drop expired requests,
// and if anything changed replace the file atomically and durably. fn's
// error is returned, after the file is written if fn changed it (a
// refusal may still remove the request it refused); a failed write is
// returned when fn had no error of its own.
func (s *Store) transact(fn func(st *fileState, now time.Time) (changed bool, err error)) error {
	unlock, err := s.sd.MakeAndLock(lockName)
	if err != nil {
		var se *statedir.Error
		if errors.As(err, &se) {
			return s.wrap(err)
		}
		return fmt.Errorf("approval: %w", err)
	}
	defer unlock()
	st, err := s.read()
	if err != nil {
		return err
	}
	now := s.now().UTC()
	changed, ferr := fn(st, now)
	st.purge(now) // after fn, so that fn can tell an expired request from an unknown one
	if !changed && !st.dropped {
		return ferr
	}
	b, err := st.encode()
	if err == nil {
		s.sd.RemoveStaleTemps(FileName)
		_, err = s.sd.Replace(FileName, b)
	}
	if ferr != nil {
		return ferr
	}
	if err != nil {
		return fmt.Errorf("approval: %w", err)
	}
	return nil
}

// load checks the state dir and reads the file without the lock.
func (s *Store) load() (*fileState, error) {
	ok, err := s.sd.Check()
	if err != nil {
		return nil, s.wrap(err)
	}
	if !ok {
		return &fileState{Version: Version}, nil
	}
	if _, _, err := s.sd.CheckFile(lockName); err != nil {
		return nil, s.wrap(err)
	}
	return s.read()
}

// read reads and decodes the file; missing is empty.
func (s *Store) read() (*fileState, error) {
	f, fst, err := s.sd.Open(FileName, unix.O_RDONLY)
	if errors.Is(err, os.ErrNotExist) {
		return &fileState{Version: Version}, nil
	}
	if err != nil {
		return nil, s.wrap(err)
	}
	defer f.Close()
	b, err := statedir.ReadCapped(f, fst.Size, MaxFileSize)
	var big *statedir.TooBigError
	if errors.As(err, &big) {
		return nil, s.unreadable(big, "move it aside (mv "+s.path+" "+s.path+".bad): the requests in it are lost and their calls are asked again")
	}
	if err != nil {
		return nil, s.wrap(err)
	}
	st, err := decode(b)
	if err != nil {
		hint := "move it aside (mv " + s.path + " " + s.path + ".bad): the requests in it are lost and their calls are asked again"
		if errors.Is(err, ErrNewerVersion) {
			hint = "a newer mcpx-policy wrote this file: use that version; the file was left untouched"
		}
		return nil, s.unreadable(err, hint)
	}
	return st, nil
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
