package approval

import "golang.org/x/sys/unix"

// datasync makes the file's data durable (fdatasync: the metadata a read
// does not need, such as the modification time, may wait).
func datasync(fd int) error { return unix.Fdatasync(fd) }
