package approval

import (
	"fmt"
	"regexp"
	"slices"
	"time"

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

// transact is one read-modify-write under the exclusive lock
// (statedir.File.Update): read the file (missing is empty; unreadable
// aborts with nothing written), let fn change it, drop expired requests,
// and if anything changed replace the file atomically and durably. fn's
// error is returned, after the file is written if fn changed it (a
// refusal may still remove the request it refused); a failed write is
// returned when fn had no error of its own.
func (s *Store) transact(fn func(st *fileState, now time.Time) (changed bool, err error)) error {
	return s.file.Update(func(st *fileState) ([]byte, error) {
		now := s.now().UTC()
		changed, ferr := fn(st, now)
		st.purge(now) // after fn, so that fn can tell an expired request from an unknown one
		if !changed && !st.dropped {
			return nil, ferr
		}
		// one request a line, each compact (a prompt is kept byte for
		// byte as it was given)
		b, err := statedir.EncodeRecords(Version, "approvals", st.Approvals)
		if err != nil {
			if ferr != nil {
				return nil, ferr
			}
			return nil, fmt.Errorf("approval: %w", err)
		}
		return b, ferr
	})
}

// load checks the state dir and reads the file without the lock.
func (s *Store) load() (*fileState, error) { return s.file.Load() }
