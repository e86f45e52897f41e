package proxy

import (
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// pollable returns a copy of in, the process's stdin, that the Go
// runtime's poller reads, or nil when it cannot make one (in is then read
// as it is, by a goroutine blocked in read(2)).
//
// A blocked read(2) holds an OS thread and the runtime's processor: each
// frame it reads then wakes another thread to take it over, and that
// wake-up sat on every call's path (ADR 0038). A pollable copy is read
// like the server's pipes: its goroutine parks, the frame's reader runs
// at once, and Close ends a read in progress.
//
//   - A pipe is opened again through /proc/self/fd: a new open file
//     description of the same pipe, made non-blocking, while the one the
//     process inherited (which a parent may share) stays as it was. It
//     must be the same pipe (device and inode) or it is not used.
//   - A socket (an MCP client built on libuv, Node's, hands its servers a
//     socket pair) cannot be opened again: its descriptor is duplicated
//     and made non-blocking, as net.FileConn does. The other end is the
//     client's own; this end is the proxy's.
//
// Anything else (a terminal, a file, /dev/null) is read as it is.
func pollable(in *os.File) (r interface {
	Read([]byte) (int, error)
	Close() error
}) {
	fd := int(in.Fd())
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFIFO:
		nfd, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", fd), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil
		}
		var again unix.Stat_t
		if err := unix.Fstat(nfd, &again); err != nil || again.Dev != st.Dev || again.Ino != st.Ino || again.Mode&unix.S_IFMT != unix.S_IFIFO {
			unix.Close(nfd)
			return nil
		}
		// NewFile registers a non-blocking descriptor with the poller.
		return os.NewFile(uintptr(nfd), in.Name())
	case unix.S_IFSOCK:
		c, err := net.FileConn(in)
		if err != nil {
			return nil
		}
		return c
	}
	return nil
}
