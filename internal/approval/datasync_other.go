//go:build !linux

package approval

import "golang.org/x/sys/unix"

// datasync makes the file's data durable: fsync where the system has no
// fdatasync.
func datasync(fd int) error { return unix.Fsync(fd) }
