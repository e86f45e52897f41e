package ledger

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// MaxFileSize caps ledger.json at 64 MiB, about 280,000 entries: a bigger
// file is unreadable (it blocks every write and is never overwritten) and
// is never read into memory. Archive the cleared history long before that
// (docs/ledger.md).
const MaxFileSize = 64 << 20

// ErrUnsafe is matched (errors.Is) by the UnreadableError of a state dir or
// ledger file that other users may write: group- or world-writable, or
// owned by another user than the process's effective uid. Such a ledger is
// not trusted: another user could empty it, or rename an empty one over it.
var ErrUnsafe = errors.New("writable by other users")

// The state dir and its files are hostile until checked: every read stats
// the directory and the files (no link followed) and refuses what is not a
// private directory and private regular files; every open is O_NOFOLLOW
// and O_NONBLOCK (a FIFO swapped in after the check cannot block it) and
// checks what it opened with fstat.

// checkDir checks the state directory. A missing directory is an empty
// ledger: it reports false and no error.
func (l *Ledger) checkDir() (bool, error) {
	var st unix.Stat_t
	err := unix.Stat(l.dir, &st)
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, l.unreadable(fmt.Errorf("state dir %s: %w", l.dir, err), "")
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return false, l.unreadable(fmt.Errorf("state dir %s is not a directory", l.dir),
			"point --state-dir (or MCPX_POLICY_STATE_DIR) at a directory of your own")
	}
	if uid := uint32(os.Geteuid()); st.Uid != uid {
		return false, l.unreadable(fmt.Errorf("%w: state dir %s is owned by uid %d, not by this process's uid %d", ErrUnsafe, l.dir, st.Uid, uid),
			fmt.Sprintf("use a state dir of your own (--state-dir or MCPX_POLICY_STATE_DIR), or check its content and run: chown -R %d %s", uid, l.dir))
	}
	if st.Mode&0o022 != 0 {
		return false, l.unreadable(fmt.Errorf("%w: state dir %s is writable by group or others (mode %04o)", ErrUnsafe, l.dir, st.Mode&0o7777),
			"check its content, then run: chmod 700 "+l.dir)
	}
	return true, nil
}

// preflight creates the state dir if missing (0700) and checks it and
// every file in it that exists, before a change creates any file there.
func (l *Ledger) preflight() error {
	if err := os.MkdirAll(l.dir, 0o700); err != nil {
		return fmt.Errorf("ledger: state dir: %w", err)
	}
	if _, err := l.checkDir(); err != nil {
		return err
	}
	for _, name := range []string{lockName, slotsName, FileName} {
		_, st, err := l.checkName(name)
		if err != nil {
			return err
		}
		if name == FileName && st != nil && st.Size > MaxFileSize {
			return l.tooBig(st.Size)
		}
	}
	return nil
}

// checkStat checks the stat of a file of the state dir, taken without
// following links: a regular file of this process's euid, not writable by
// group or others.
func (l *Ledger) checkStat(path string, st *unix.Stat_t) error {
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
		return l.unreadable(fmt.Errorf("%s is %s, not a regular file", path, what),
			fmt.Sprintf("the ledger's files must be regular files: move it aside (mv %s %s.bad) and restore the file from a backup (docs/ledger.md)", path, path))
	}
	if uid := uint32(os.Geteuid()); st.Uid != uid {
		return l.unreadable(fmt.Errorf("%w: %s is owned by uid %d, not by this process's uid %d", ErrUnsafe, path, st.Uid, uid),
			fmt.Sprintf("check its content, then run: chown %d %s", uid, path))
	}
	if st.Mode&0o022 != 0 {
		return l.unreadable(fmt.Errorf("%w: %s is writable by group or others (mode %04o)", ErrUnsafe, path, st.Mode&0o7777),
			"check its content, then run: chmod 600 "+path)
	}
	return nil
}

// checkName lstats a file of the state dir and checks it; a missing file
// passes (false).
func (l *Ledger) checkName(name string) (bool, *unix.Stat_t, error) {
	path := filepath.Join(l.dir, name)
	var st unix.Stat_t
	err := unix.Lstat(path, &st)
	if errors.Is(err, unix.ENOENT) {
		return false, nil, nil
	}
	if err != nil {
		return false, nil, l.unreadable(fmt.Errorf("%s: %w", path, err), "")
	}
	if err := l.checkStat(path, &st); err != nil {
		return false, nil, err
	}
	return true, &st, nil
}

// openChecked opens a file of the state dir without following a link and
// without blocking, and checks what it opened. flag adds to O_NOFOLLOW |
// O_NONBLOCK | O_CLOEXEC; with O_CREAT the file is made 0600. A missing
// file (without O_CREAT) is os.ErrNotExist, unwrapped.
func (l *Ledger) openChecked(name string, flag int) (*os.File, *unix.Stat_t, error) {
	path := filepath.Join(l.dir, name)
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
			return nil, nil, l.checkStat(path, &st)
		}
		return nil, nil, l.unreadable(fmt.Errorf("%s is a symbolic link, not a regular file", path), "")
	case err != nil:
		return nil, nil, l.unreadable(fmt.Errorf("open %s: %w", path, err), "")
	}
	f := os.NewFile(uintptr(fd), path)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, nil, l.unreadable(fmt.Errorf("fstat %s: %w", path, err), "")
	}
	if err := l.checkStat(path, &st); err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, &st, nil
}

// readCapped reads an opened, checked ledger file of st.Size bytes, at most
// MaxFileSize: a file that grows while it is read is cut at the cap, and
// refused.
func (l *Ledger) readCapped(f *os.File, st *unix.Stat_t) ([]byte, error) {
	if st.Size > MaxFileSize {
		return nil, l.tooBig(st.Size)
	}
	var buf bytes.Buffer
	buf.Grow(int(st.Size) + bytes.MinRead)
	if _, err := buf.ReadFrom(io.LimitReader(f, MaxFileSize+1)); err != nil {
		return nil, l.unreadable(fmt.Errorf("read: %w", err), "")
	}
	if buf.Len() > MaxFileSize {
		return nil, l.tooBig(int64(buf.Len()))
	}
	return buf.Bytes(), nil
}

func (l *Ledger) tooBig(size int64) error {
	return l.unreadable(fmt.Errorf("the file is %d bytes, above the cap of %d MiB", size, MaxFileSize>>20),
		"archive its cleared history: stop the writers, copy the file aside, empty \"cleared\", start them again (docs/ledger.md)")
}

func (l *Ledger) unreadable(err error, hint string) *UnreadableError {
	return &UnreadableError{Path: l.path, Err: err, Hint: hint}
}

// fileID is a file's identity for the read cache: the same device, inode,
// size, modification and change time. The cache keeps the file it parsed
// open, so its inode number cannot be given to another file while cached;
// the ledger is only ever replaced by rename, never changed in place.
type fileID struct {
	dev, ino     uint64
	size         int64
	mtime, ctime unix.Timespec
}
