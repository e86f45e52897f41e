package ledger

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/mcpx/mcpx-policy/internal/statedir"
	"github.com/mcpx/mcpx-policy/internal/trust"
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
// It is statedir.ErrUnsafe.
var ErrUnsafe = statedir.ErrUnsafe

// The state dir and its files are hostile until checked: every read stats
// the directory and the files (no link followed) and refuses what is not a
// private directory and private regular files; every open is O_NOFOLLOW
// and O_NONBLOCK (a FIFO swapped in after the check cannot block it) and
// checks what it opened with fstat. internal/statedir does the checking,
// for the approval store too; the methods below turn its errors into the
// ledger's *UnreadableError.

// preflight creates the state dir if missing (0700) and checks it and
// every file in it that exists, before a change creates any file there.
func (l *Ledger) preflight() error {
	if err := l.sd.Make(); err != nil {
		var se *statedir.Error
		if errors.As(err, &se) {
			return l.wrap(err)
		}
		return fmt.Errorf("ledger: state dir: %w", err)
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

// checkName lstats a file of the state dir and checks it; a missing file
// passes (false).
func (l *Ledger) checkName(name string) (bool, *unix.Stat_t, error) {
	ok, st, err := l.sd.CheckFile(name)
	return ok, st, l.wrap(err)
}

// openChecked opens a file of the state dir without following a link and
// without blocking, and checks what it opened. flag adds to O_NOFOLLOW |
// O_NONBLOCK | O_CLOEXEC; with O_CREAT the file is made 0600. A missing
// file (without O_CREAT) is os.ErrNotExist, unwrapped.
func (l *Ledger) openChecked(name string, flag int) (*os.File, *unix.Stat_t, error) {
	f, st, err := l.sd.Open(name, flag)
	return f, st, l.wrap(err)
}

// readCapped reads an opened, checked ledger file of st.Size bytes, at most
// MaxFileSize: a file that grows while it is read is cut at the cap, and
// refused.
func (l *Ledger) readCapped(f *os.File, st *unix.Stat_t) ([]byte, error) {
	b, err := trust.ReadCapped(f, st.Size, MaxFileSize)
	var big *trust.TooBigError
	if errors.As(err, &big) {
		return nil, l.tooBig(big.Size)
	}
	return b, l.wrap(err)
}

func (l *Ledger) tooBig(size int64) error {
	return l.unreadable(fmt.Errorf("the file is %d bytes, above the cap of %d MiB", size, MaxFileSize>>20),
		"archive its cleared history: stop the writers, copy the file aside, empty \"cleared\", start them again (docs/ledger.md)")
}

func (l *Ledger) unreadable(err error, hint string) *UnreadableError {
	return &UnreadableError{Store: "ledger", Path: l.path, Err: err, Hint: hint}
}

// wrap turns a *statedir.Error into the ledger's *UnreadableError, with the
// ledger's own hint for a file that is not a regular file; any other error
// (nil included) is returned as is.
func (l *Ledger) wrap(err error) error {
	var se *statedir.Error
	if !errors.As(err, &se) {
		return err
	}
	hint := se.Hint
	if errors.Is(se.Err, statedir.ErrNotRegular) {
		hint = fmt.Sprintf("the ledger's files must be regular files: move it aside (mv %s %s.bad) and restore the file from a backup (docs/ledger.md)", se.Path, se.Path)
	}
	return l.unreadable(se.Err, hint)
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
