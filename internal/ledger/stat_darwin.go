package ledger

import "golang.org/x/sys/unix"

func idOf(st *unix.Stat_t) fileID {
	return fileID{dev: uint64(st.Dev), ino: st.Ino, size: st.Size, mtime: st.Mtimespec, ctime: st.Ctimespec}
}
