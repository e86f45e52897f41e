// Package trust checks the files an operator trusts the process with —
// config files and their conf.d folder, override Rego, a tool catalog,
// the serve token, a bundle signing key, a ledger DSN file — and the
// state dir's files (package statedir uses it): a regular file, owned by
// the process's euid (or root), that nobody else may write. It holds no
// policy fact, so every adapter may use it.
package trust

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// ErrUnsafe is matched (errors.Is) by the error about a state dir or file
// that other users may write: group- or world-writable, or owned by
// another user than the process's effective uid.
var ErrUnsafe = errors.New("writable by other users")

// ErrNotRegular is matched (errors.Is) by the error about a file of the
// state dir that is a link, a FIFO, a directory, a device or a socket.
var ErrNotRegular = errors.New("not a regular file")

// Error is a problem with the state dir or one of its files: Err names the
// file and the cause, Hint (possibly empty) says what an operator does.
type Error struct {
	// Path is the file or directory at fault.
	Path string
	Err  error
	Hint string
}

// Error returns Err's text.
func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// TooBigError is returned by ReadCapped for a file above the cap.
type TooBigError struct {
	Size, Max int64
}

// Error says how big the file is.
func (e *TooBigError) Error() string {
	return fmt.Sprintf("the file is %d bytes, above the cap of %d MiB", e.Size, e.Max>>20)
}

// ReadCapped reads an opened, checked file of size bytes, at most limit: a
// bigger file is a *TooBigError, and so is a file that grows past the cap
// while it is read (it is cut there). A read error is an *Error.
func ReadCapped(f *os.File, size, limit int64) ([]byte, error) {
	if size > limit {
		return nil, &TooBigError{Size: size, Max: limit}
	}
	var buf bytes.Buffer
	buf.Grow(int(size) + bytes.MinRead)
	if _, err := buf.ReadFrom(io.LimitReader(f, limit+1)); err != nil {
		return nil, &Error{Path: f.Name(), Err: fmt.Errorf("read: %w", err)}
	}
	if int64(buf.Len()) > limit {
		return nil, &TooBigError{Size: int64(buf.Len()), Max: limit}
	}
	return buf.Bytes(), nil
}

// Trust is what an operator's file holds, and so what its mode may be.
// The files of the state dir are checked by Dir; the files an operator
// writes for the process to read — config files and their conf.d folder,
// override Rego, a tool catalog, the serve token, a bundle signing key, a
// ledger DSN file — are checked by OpenTrusted and CheckTrustedDir, with
// the same rules: a regular file, owned by the process's euid, that nobody
// else may write. One difference: such a file may also be root's, since
// root can change the process's binary anyway and /etc files are root's.
type Trust int

const (
	// Config is a file whose content decides what the process does (a
	// config file, an override, a catalog): writable by its owner only.
	Config Trust = iota
	// Secret is a file that also holds a secret (a token, a signing key, a
	// connection string with a password): checked as Config, and besides
	// Exposed says when other users may read it — group-readable is fine
	// only when root owns it (0640, as PostgreSQL asks of its key files, so
	// a service's group can read a root-owned secret), others-readable
	// never. A secret others may read is said, not refused: whoever could
	// read it may already have, and refusing it would not take it back.
	Secret
)

// OpenTrusted opens path for reading — links followed (operators link
// config and secrets into place, as Kubernetes volumes do), without
// blocking on a FIFO — and checks what it opened with fstat
// (CheckTrusted). The caller reads the file and closes it. A missing file
// is an error matched by errors.Is(err, os.ErrNotExist); a file that fails
// a check is an *Error (ErrUnsafe or ErrNotRegular) with a hint.
func OpenTrusted(path string, trust Trust) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	for errors.Is(err, unix.EINTR) {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if err := CheckTrusted(path, &st, trust); err != nil {
		f.Close()
		return nil, err
	}
	// back to blocking reads: a regular file never blocks, and a read
	// that returned EAGAIN would be read as an error
	if err := unix.SetNonblock(fd, false); err != nil {
		f.Close()
		return nil, &os.PathError{Op: "fcntl", Path: path, Err: err}
	}
	return f, nil
}

// ReadTrusted reads a file an operator trusts (OpenTrusted), at most
// limit bytes: a bigger file is a *TooBigError. For a Secret, exposed is
// Exposed's warning ("" when only its owner may read it).
func ReadTrusted(path string, trust Trust, limit int64) (data []byte, exposed string, err error) {
	f, err := OpenTrusted(path, trust)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, "", err
	}
	if trust == Secret {
		exposed = Exposed(f)
	}
	data, err = ReadCapped(f, st.Size(), limit)
	return data, exposed, err
}

// Exposed says, for an opened file that holds a secret, that other users
// may read it and what to do: others may read it, or its group may and
// root does not own it. "" when only its owner (and root's group, for a
// root-owned file) may read it.
func Exposed(f *os.File) string {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return ""
	}
	open := uint32(0o044)
	if st.Uid == 0 {
		open = 0o004
	}
	mode := uint32(st.Mode) & 0o7777
	if mode&open == 0 {
		return ""
	}
	return fmt.Sprintf("%s holds a secret and other users may read it (mode %04o): make a new secret (the old one may have been read), then run: chmod 600 %s", f.Name(), mode, f.Name())
}

// CheckTrusted checks the stat of a file an operator trusts: a regular
// file owned by this process's euid or by root, not writable by group or
// others (for a Secret too; who may read it is Exposed's to say).
func CheckTrusted(path string, st *unix.Stat_t, trust Trust) error {
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return &Error{Path: path, Err: fmt.Errorf("%s is %s, %w", path, kindOf(path, uint32(st.Mode)), ErrNotRegular),
			Hint: "name a regular file"}
	}
	if err := trustedOwner(path, st); err != nil {
		return err
	}
	mode := uint32(st.Mode) & 0o7777
	if mode&0o022 != 0 {
		return &Error{Path: path, Err: fmt.Errorf("%w: %s is writable by group or others (mode %04o): whoever can write it decides what this process does", ErrUnsafe, path, mode),
			Hint: "check its content, then run: chmod go-w " + path}
	}
	return nil
}

// CheckTrustedDir checks a folder whose files an operator trusts (a
// config's conf.d): a directory owned by this process's euid or by root
// that nobody else may write (whoever could would add a file to it). A
// missing folder passes (false, nil).
func CheckTrustedDir(path string) (bool, error) {
	var st unix.Stat_t
	err := unix.Stat(path, &st)
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return false, &Error{Path: path, Err: fmt.Errorf("%s is %s, not a directory", path, kindOf(path, uint32(st.Mode)))}
	}
	if err := trustedOwner(path, &st); err != nil {
		return false, err
	}
	if mode := uint32(st.Mode) & 0o7777; mode&0o022 != 0 {
		return false, &Error{Path: path, Err: fmt.Errorf("%w: folder %s is writable by group or others (mode %04o): whoever can write it can add a file to the config", ErrUnsafe, path, mode),
			Hint: "check its content, then run: chmod go-w " + path}
	}
	return true, nil
}

func trustedOwner(path string, st *unix.Stat_t) error {
	if uid := uint32(os.Geteuid()); st.Uid != uid && st.Uid != 0 {
		return &Error{Path: path, Err: fmt.Errorf("%w: %s is owned by uid %d, neither this process's uid %d nor root", ErrUnsafe, path, st.Uid, uid),
			Hint: fmt.Sprintf("check its content, then run: chown %d %s", uid, path)}
	}
	return nil
}

// kindOf names the kind of file a stat mode says, for messages.
func kindOf(path string, mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "a regular file"
	case unix.S_IFLNK:
		what := "a symbolic link"
		if to, err := os.Readlink(path); err == nil {
			what += " to " + to
		}
		return what
	case unix.S_IFIFO:
		return "a named pipe"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "a device"
	case unix.S_IFSOCK:
		return "a socket"
	}
	return "not a regular file"
}
