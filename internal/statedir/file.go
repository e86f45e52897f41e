package statedir

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/mcpx/mcpx-policy/internal/trust"
	"golang.org/x/sys/unix"
)

// NewerHint is the hint of a store's unreadable-file error for a file a
// newer build wrote.
const NewerHint = "a newer mcpx-policy wrote this file: use that version; the file was left untouched"

// File is a store's state file in a Dir — a versioned JSON document
// (DecodeVersioned, EncodeRecords) — and the lock file beside it, with
// the read and the read-modify-write every such store does; S is the
// file as the store parses it. A file, lock file or state dir it must
// neither use nor overwrite is an *UnreadableError naming Store; Prefix
// starts its other errors.
// Set the fields, then use the File by pointer only; safe for concurrent
// use.
type File[S any] struct {
	// Dir is the state dir.
	Dir Dir
	// Name is the file, Lock the lock file beside it: an exclusive flock
	// on it serializes every read-modify-write of Name.
	Name, Lock string
	// Max caps the file's size: a bigger file is unreadable.
	Max int64
	// Empty is the state of a missing file (or state dir).
	Empty func() S
	// Decode parses the file strictly. Every failure is the cause of an
	// unreadable-file error: the file is neither used nor overwritten.
	Decode func([]byte) (S, error)
	// Store names the store in its *UnreadableError ("approval store").
	// Decode's error for a file a newer build wrote matches
	// ErrNewerVersion; that error gets NewerHint.
	Store string
	// Aside is the hint for a file too big to read or that does not
	// decode: how to move it aside, and what is lost then.
	Aside string
	// Prefix starts the other errors ("prefix: cause"): a state dir that
	// cannot be made, a write that fails.
	Prefix string
	// Cache keeps the last file read, and the file open so that its inode
	// is not reused, while its identity (device, inode, size, modification
	// and change time) holds: the file is only ever replaced by rename. A
	// cached S is shared by every reader and must not be changed.
	Cache bool

	mu     sync.Mutex
	cached *cachedFile[S]
}

type cachedFile[S any] struct {
	id   fileID
	file *os.File
	s    S
}

// fileID is a file's identity for the cache.
type fileID struct {
	dev, ino     uint64
	size         int64
	mtime, ctime unix.Timespec
}

func idOf(st *unix.Stat_t) fileID {
	return fileID{dev: uint64(st.Dev), ino: st.Ino, size: st.Size, mtime: st.Mtim, ctime: st.Ctim}
}

// Load checks the state dir and the lock file and reads the file, without
// the lock: a missing state dir or file is Empty().
func (f *File[S]) Load() (S, error) {
	ok, err := f.Dir.Check()
	if err != nil {
		return f.fail(err)
	}
	if !ok {
		return f.Empty(), nil
	}
	if _, _, err := f.Dir.CheckFile(f.Lock); err != nil {
		return f.fail(err)
	}
	return f.Read()
}

// Read returns the file as it is now (O_NOFOLLOW, O_NONBLOCK, at most
// Max), decoded — from the cache when Cache is set and the file's identity
// is unchanged. Missing is Empty().
func (f *File[S]) Read() (S, error) {
	if f.Cache {
		exists, lst, err := f.Dir.CheckFile(f.Name)
		if err != nil {
			return f.fail(err)
		}
		if !exists {
			return f.Empty(), nil
		}
		f.mu.Lock()
		c := f.cached
		f.mu.Unlock()
		if c != nil && c.id == idOf(lst) {
			return c.s, nil
		}
	}
	fh, fst, err := f.Dir.Open(f.Name, unix.O_RDONLY)
	if errors.Is(err, os.ErrNotExist) {
		return f.Empty(), nil
	}
	if err != nil {
		return f.fail(err)
	}
	var zero S
	b, err := trust.ReadCapped(fh, fst.Size, f.Max)
	var big *trust.TooBigError
	if errors.As(err, &big) {
		fh.Close()
		return zero, f.unreadable(big, f.Aside)
	}
	if err != nil {
		fh.Close()
		return f.fail(err)
	}
	s, err := f.Decode(b)
	if err != nil {
		fh.Close()
		hint := f.Aside
		if errors.Is(err, ErrNewerVersion) {
			hint = NewerHint
		}
		return zero, f.unreadable(err, hint)
	}
	if !f.Cache {
		fh.Close()
		return s, nil
	}
	f.mu.Lock()
	old := f.cached
	f.cached = &cachedFile[S]{id: idOf(fst), file: fh, s: s}
	f.mu.Unlock()
	if old != nil {
		old.file.Close()
	}
	return s, nil
}

// Update is one read-modify-write under the exclusive lock: make and check
// the state dir and its files, read the file (Read; unreadable aborts with
// nothing written), and let change decide what to write: the new file,
// or nil for nothing. When it returns bytes they replace the file
// atomically and durably (after the temp files of a killed writer are
// removed), also when it returns an error too; its error is returned, else
// a failed write.
func (f *File[S]) Update(change func(S) ([]byte, error)) error {
	unlock, err := f.Dir.MakeAndLock(f.Lock)
	if err != nil {
		var se *Error
		if errors.As(err, &se) {
			return f.wrap(err)
		}
		return fmt.Errorf("%s: %w", f.Prefix, err)
	}
	defer unlock()
	s, err := f.Read()
	if err != nil {
		return err
	}
	b, cerr := change(s)
	if b == nil {
		return cerr
	}
	f.Dir.RemoveStaleTemps(f.Name)
	_, err = f.Dir.Replace(f.Name, b)
	if cerr != nil {
		return cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", f.Prefix, err)
	}
	return nil
}

// wrap turns an *Error into the store's unreadable-file error; any other
// error (nil included) is returned as is.
func (f *File[S]) wrap(err error) error {
	var se *Error
	if !errors.As(err, &se) {
		return err
	}
	return f.unreadable(se.Err, se.Hint)
}

// unreadable is the store's *UnreadableError for cause.
func (f *File[S]) unreadable(cause error, hint string) error {
	return &UnreadableError{Store: f.Store, Path: filepath.Join(f.Dir.Path(), f.Name), Err: cause, Hint: hint}
}

func (f *File[S]) fail(err error) (S, error) {
	var zero S
	return zero, f.wrap(err)
}

// EncodeRecords renders a versioned state file of records under key:
// {"version": N, "key": [record, …]}, one record a line, each compact.
func EncodeRecords[R any](version int, key string, records []R) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "{\"version\": %d, %q: [", version, key)
	for i, r := range records {
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
	if len(records) > 0 {
		b.WriteByte('\n')
	}
	b.WriteString("]}\n")
	return b.Bytes(), nil
}
