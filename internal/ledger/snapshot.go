package ledger

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// A decision reads the ledger every time, and a full read checks the
// state dir and each of its three files by path (a stat each). The
// snapshot makes that one stat of the directory plus one fstat of each
// file already open and checked, and no allocation, while nothing changed:
//
//   - An entry of the directory cannot be created, removed, renamed over
//     or replaced (by a symlink, a FIFO, another process's new ledger.json)
//     without changing the directory's change time (ctime), which nobody
//     but the kernel sets. So while the directory at the path is the same
//     inode with the same ctime and mtime as when the snapshot was taken,
//     each name still is the file the snapshot opened, or still missing.
//   - A change of a file's owner or mode changes only that file: the fast
//     path fstats each open file and checks its type, owner and mode
//     again, and the ledger file's identity (size, mtime, ctime) as the
//     cache does; the directory's owner and mode are checked on its stat.
//   - Timestamps are coarse: two changes within one clock tick (up to 10
//     ms; a second on file systems that keep whole seconds) can get the
//     same time. So a snapshot is only taken of a directory whose ctime is
//     older than settle (by this host's clock, before its first stat):
//     any later change of it gets a later ctime. On a network file
//     system the server's clock stamps the directory; it must not lag
//     this host's by settle or more (NTP keeps it within milliseconds).
//
// The fast path only accepts: on any difference it gives way to the full
// read, which reports what is wrong as before and takes a new snapshot.
type snapshot struct {
	dir   fileID   // the directory at the path
	uid   uint32   // the euid the files were checked against
	lock  *os.File // ledger.lock, open and checked; nil when missing
	slots *os.File // ledger.slots, likewise
	p     *parsed  // the ledger file's parse (noFile when missing)
	fds   [3]int   // lock, slots, ledger file (-1: none)
}

// settle is how old the directory's ctime must be for a snapshot: above
// the file system's timestamp granularity.
func settle(dir fileID) time.Duration {
	if dir.ctime.Nsec == 0 && dir.mtime.Nsec == 0 {
		return 2*time.Second + 100*time.Millisecond // whole seconds kept
	}
	return 100 * time.Millisecond
}

// fastLoad returns the snapshot's parse if the state dir and its files are
// as the snapshot found them, else nil (then the full read). It holds the
// cache's read lock throughout, so no descriptor it uses is closed
// meanwhile.
func (l *Ledger) fastLoad() *parsed {
	l.cacheMu.RLock()
	defer l.cacheMu.RUnlock()
	s := l.snap
	if s == nil {
		return nil
	}
	uid := uint32(os.Geteuid())
	var st unix.Stat_t
	if uid != s.uid || unix.Stat(l.dir, &st) != nil || !private(&st, unix.S_IFDIR, uid) || idOf(&st) != s.dir {
		return nil
	}
	for i, fd := range s.fds {
		if fd < 0 {
			continue
		}
		if unix.Fstat(fd, &st) != nil || !private(&st, unix.S_IFREG, uid) {
			return nil
		}
		if i == 2 && idOf(&st) != s.p.id { // changed in place
			return nil
		}
	}
	l.fastLoads.Add(1)
	return s.p
}

// private mirrors statedir's checks for the fast path, which only
// accepts: a file of type typ, owned by uid, not writable by group or
// others.
func private(st *unix.Stat_t, typ, uid uint32) bool {
	mode := uint32(st.Mode) // uint16 on darwin
	return mode&unix.S_IFMT == typ && st.Uid == uid && mode&0o022 == 0
}

// remember takes a snapshot after a full read that began at start with
// the directory's stat dir and returned p, when the directory is old
// enough (settle) and did not change during the read. Errors only mean no
// snapshot.
func (l *Ledger) remember(start time.Time, dir *unix.Stat_t, p *parsed) {
	id := idOf(dir)
	if start.Sub(time.Unix(id.ctime.Unix())) <= settle(id) {
		return
	}
	uid := uint32(os.Geteuid())
	if dir.Uid != uid {
		return
	}
	s := &snapshot{dir: id, uid: uid, p: p, fds: [3]int{-1, -1, -1}}
	for i, name := range [2]string{lockName, slotsName} {
		f, _, err := l.openChecked(name, unix.O_RDONLY)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			s.close()
			return
		}
		if i == 0 {
			s.lock = f
		} else {
			s.slots = f
		}
		s.fds[i] = int(f.Fd())
	}
	if !p.missing {
		s.fds[2] = int(p.pin.Fd())
	}
	var again unix.Stat_t
	if unix.Stat(l.dir, &again) != nil || idOf(&again) != id {
		s.close()
		return
	}
	l.cacheMu.Lock()
	if !p.missing && l.cache != p { // replaced meanwhile: its file may be closed
		l.cacheMu.Unlock()
		s.close()
		return
	}
	old := l.snap
	l.snap = s
	l.cacheMu.Unlock()
	old.close()
}

// close closes the files the snapshot opened (not the parse's).
func (s *snapshot) close() {
	if s == nil {
		return
	}
	if s.lock != nil {
		s.lock.Close()
	}
	if s.slots != nil {
		s.slots.Close()
	}
}
