// Package statedir holds what the stores of the state directory share: the
// unknown-outcome ledger (internal/ledger), the approval store
// (internal/approval) and the pin store (internal/pins) keep their files
// side by side in one directory, and all treat it as hostile until
// checked.
//
// A Dir checks the directory (a directory owned by this process's
// effective uid, not writable by group or others) and each file it uses (a
// regular file, owned by the euid, not writable by group or others), opens
// files with O_NOFOLLOW|O_NONBLOCK (a FIFO swapped in after a check cannot
// block it) and checks what it opened with fstat, reads at most a cap,
// serializes read-modify-writes with an exclusive flock on a lock file, and
// replaces a file atomically and durably (google/renameio/v2, then an fsync
// of the directory). Its errors say what an operator does about them
// (*Error's Hint).
//
// A File is what the stores of records (internal/approval, internal/pins)
// share on top of that: a versioned JSON file (DecodeVersioned,
// EncodeRecords) read, cached and changed under its lock the same way.
// Every store — the ledger, which reads its file itself (CheckVersion),
// too — reports a store it must neither use nor overwrite with one error,
// *UnreadableError, and its other errors by the kinds the SDK matches
// alike (ErrNotFound, ErrMismatch, ErrNewerVersion; Kind).
package statedir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/renameio/v2"
	"github.com/mcpx/mcpx-policy/internal/trust"
	"golang.org/x/sys/unix"
)

// The trust checks of a file are package trust's; the state dir's
// errors are its errors.
var (
	// ErrUnsafe: see trust.ErrUnsafe.
	ErrUnsafe = trust.ErrUnsafe
	// ErrNotRegular: see trust.ErrNotRegular.
	ErrNotRegular = trust.ErrNotRegular
)

// Error is trust.Error: a problem with the state dir or one of its files.
type Error = trust.Error

// Dir is a state directory. The zero value is not usable; use New. A Dir
// is a path and nothing else: safe to copy and for concurrent use.
type Dir struct{ path string }

// New returns the Dir at path, which should be absolute.
func New(path string) Dir { return Dir{path: path} }

// Path is the directory's path.
func (d Dir) Path() string { return d.path }

// Check checks the directory itself. A missing directory reports false and
// no error.
func (d Dir) Check() (bool, error) {
	_, ok, err := d.CheckedStat()
	return ok, err
}

// CheckedStat is Check that also returns the directory's stat (taken
// following links, as the path is used), valid when ok.
func (d Dir) CheckedStat() (st unix.Stat_t, ok bool, err error) {
	err = unix.Stat(d.path, &st)
	if errors.Is(err, unix.ENOENT) {
		return st, false, nil
	}
	if err != nil {
		return st, false, d.fail(d.path, fmt.Errorf("state dir %s: %w", d.path, err), "")
	}
	if err := d.CheckDirStat(&st); err != nil {
		return st, false, err
	}
	return st, true, nil
}

// CheckDirStat checks a stat of the directory without a system call: a
// directory of this process's euid, not writable by group or others.
func (d Dir) CheckDirStat(st *unix.Stat_t) error {
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return d.fail(d.path, fmt.Errorf("state dir %s is not a directory", d.path),
			"point --state-dir (or MCPX_POLICY_STATE_DIR) at a directory of your own")
	}
	if uid := uint32(os.Geteuid()); st.Uid != uid {
		return d.fail(d.path, fmt.Errorf("%w: state dir %s is owned by uid %d, not by this process's uid %d", ErrUnsafe, d.path, st.Uid, uid),
			fmt.Sprintf("use a state dir of your own (--state-dir or MCPX_POLICY_STATE_DIR), or check its content and run: chown -R %d %s", uid, d.path))
	}
	if st.Mode&0o022 != 0 {
		return d.fail(d.path, fmt.Errorf("%w: state dir %s is writable by group or others (mode %04o)", ErrUnsafe, d.path, st.Mode&0o7777),
			"check its content, then run: chmod 700 "+d.path)
	}
	return nil
}

// Make creates the directory if it is missing (mode 0700) and checks it.
// A failure to create it is returned as is.
func (d Dir) Make() error {
	if err := os.MkdirAll(d.path, 0o700); err != nil {
		return err
	}
	_, err := d.Check()
	return err
}

// CheckStat checks the stat of a file of the directory, taken without
// following links: a regular file of this process's euid, not writable by
// group or others.
func (d Dir) CheckStat(path string, st *unix.Stat_t) error {
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		what := "not a regular file"
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			what = "a symbolic link"
			if to, err := os.Readlink(path); err == nil {
				what += " to " + to
			}
		case unix.S_IFIFO:
			what = "a named pipe"
		case unix.S_IFDIR:
			what = "a directory"
		case unix.S_IFCHR, unix.S_IFBLK:
			what = "a device"
		case unix.S_IFSOCK:
			what = "a socket"
		}
		return d.fail(path, fmt.Errorf("%s is %s, %w", path, what, ErrNotRegular),
			fmt.Sprintf("move it aside: mv %s %s.bad", path, path))
	}
	if uid := uint32(os.Geteuid()); st.Uid != uid {
		return d.fail(path, fmt.Errorf("%w: %s is owned by uid %d, not by this process's uid %d", ErrUnsafe, path, st.Uid, uid),
			fmt.Sprintf("check its content, then run: chown %d %s", uid, path))
	}
	if st.Mode&0o022 != 0 {
		return d.fail(path, fmt.Errorf("%w: %s is writable by group or others (mode %04o)", ErrUnsafe, path, st.Mode&0o7777),
			"check its content, then run: chmod 600 "+path)
	}
	return nil
}

// CheckFile lstats the file name of the directory and checks it; a missing
// file passes (false, nil stat).
func (d Dir) CheckFile(name string) (bool, *unix.Stat_t, error) {
	path := filepath.Join(d.path, name)
	var st unix.Stat_t
	err := unix.Lstat(path, &st)
	if errors.Is(err, unix.ENOENT) {
		return false, nil, nil
	}
	if err != nil {
		return false, nil, d.fail(path, fmt.Errorf("%s: %w", path, err), "")
	}
	if err := d.CheckStat(path, &st); err != nil {
		return false, nil, err
	}
	return true, &st, nil
}

// Open opens the file name of the directory without following a link and
// without blocking, and checks what it opened. flag adds to O_NOFOLLOW |
// O_NONBLOCK | O_CLOEXEC; with O_CREAT the file is made 0600. A missing
// file (without O_CREAT) is os.ErrNotExist, unwrapped.
func (d Dir) Open(name string, flag int) (*os.File, *unix.Stat_t, error) {
	path := filepath.Join(d.path, name)
	fd, err := unix.Open(path, flag|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	for errors.Is(err, unix.EINTR) {
		fd, err = unix.Open(path, flag|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	}
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, nil, os.ErrNotExist
	case errors.Is(err, unix.ELOOP):
		var st unix.Stat_t
		if unix.Lstat(path, &st) == nil {
			if err := d.CheckStat(path, &st); err != nil {
				return nil, nil, err
			}
		}
		return nil, nil, d.fail(path, fmt.Errorf("%s is a symbolic link, not a regular file", path), "")
	case err != nil:
		return nil, nil, d.fail(path, fmt.Errorf("open %s: %w", path, err), "")
	}
	f := os.NewFile(uintptr(fd), path)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, nil, d.fail(path, fmt.Errorf("fstat %s: %w", path, err), "")
	}
	if err := d.CheckStat(path, &st); err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, &st, nil
}

// MakeAndLock makes the state dir (Make) and takes the exclusive lock
// name (Lock): how a store begins a read-modify-write of its file. A
// failing check is an *Error; any other failure of Make reads
// "state dir: cause".
func (d Dir) MakeAndLock(name string) (func(), error) {
	if err := d.Make(); err != nil {
		var se *Error
		if errors.As(err, &se) {
			return nil, err
		}
		return nil, fmt.Errorf("state dir: %w", err)
	}
	return d.Lock(name)
}

// Lock takes the exclusive flock on the lock file name (created 0600 if
// missing), blocking until it is free, and returns the function that
// releases it. The lock is released by closing the descriptor, and by the
// kernel if the process dies; two Locks in one process exclude each other
// like two processes do. A bad lock file is an *Error; a failing flock is
// "lock PATH: cause".
func (d Dir) Lock(name string) (func(), error) {
	f, _, err := d.Open(name, unix.O_RDWR|unix.O_CREAT)
	if err != nil {
		return nil, err
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return func() { f.Close() }, nil
}

// LockShared takes a shared flock on the lock file name, if it exists,
// blocking while an exclusive Lock holds it, and returns the function that
// releases it: how a reader waits out a writer without excluding other
// readers. A missing lock file (no writer ever made it) is (nil, false,
// nil): the store was never written. Errors as Lock's.
func (d Dir) LockShared(name string) (func(), bool, error) {
	f, _, err := d.Open(name, unix.O_RDONLY)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_SH)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, false, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return func() { f.Close() }, true, nil
}

// Sync fsyncs the directory itself: what makes a file created in it (or
// renamed into it) survive a power cut. Errors read "fsync dir: cause".
func (d Dir) Sync() error { return d.sync() }

// Replace writes b to the file name atomically (renameio: a temp file in
// the same directory, fsync, rename; mode 0600) and then fsyncs the
// directory so the rename itself survives a power cut. It returns the stat
// of the file it wrote (nil if that failed), also when only the directory
// fsync failed. Errors read "write: cause" or "fsync dir: cause". Call it
// under the lock.
func (d Dir) Replace(name string, b []byte) (*unix.Stat_t, error) {
	pf, err := renameio.NewPendingFile(filepath.Join(d.path, name), renameio.WithTempDir(d.path), renameio.WithStaticPermissions(0o600))
	if err != nil {
		return nil, fmt.Errorf("write: %w", err)
	}
	defer pf.Cleanup()
	if _, err := pf.Write(b); err != nil {
		return nil, fmt.Errorf("write: %w", err)
	}
	var st unix.Stat_t
	written := &st
	if err := unix.Fstat(int(pf.Fd()), &st); err != nil {
		written = nil
	}
	if err := pf.CloseAtomicallyReplace(); err != nil {
		return written, fmt.Errorf("write: %w", err)
	}
	return written, d.sync()
}

func (d Dir) sync() error {
	f, err := os.Open(d.path)
	if err != nil {
		return fmt.Errorf("fsync dir: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync dir: %w", err)
	}
	return nil
}

// RemoveStaleTemps deletes the temp files a killed Replace of the file name
// left behind (".NAME" followed by digits) and returns how many. Call it
// only under the lock: then no temp file of name belongs to a live writer.
func (d Dir) RemoveStaleTemps(name string) int {
	ents, err := os.ReadDir(d.path)
	if err != nil {
		return 0
	}
	n := 0
	prefix := "." + name
	for _, e := range ents {
		base := e.Name()
		if !strings.HasPrefix(base, prefix) || len(base) == len(prefix) || !e.Type().IsRegular() {
			continue
		}
		if strings.Trim(base[len(prefix):], "0123456789") != "" {
			continue
		}
		if os.Remove(filepath.Join(d.path, base)) == nil {
			n++
		}
	}
	return n
}

func (d Dir) fail(path string, err error, hint string) *Error {
	return &Error{Path: path, Err: err, Hint: hint}
}
