package ledger

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcpx/mcpx-policy/internal/statedir"
)

// op is one change waiting for the group commit. apply runs under the file
// lock on the freshly read state, after the markers of dead processes were
// converted (recovered says how many); it must either change the state
// and return changed, or leave it untouched and return an error. after,
// when set, runs once the change is durable (or was not needed), still
// under the lock.
type op struct {
	apply func(st *fileState, now time.Time, recovered int) (changed bool, err error)
	after func()
	err   error
	done  chan error
}

// retryOp is a change whose commit failed, applied again by the retrier
// and by every commit until one succeeds.
type retryOp struct {
	id      string
	unknown *Entry // nil: remove the marker (Settle, Abort, a failed Begin)
	slot    int64  // the marker's slot (0: none)
	held    bool   // this Ledger holds the slot's lock (an Unknown)
}

// The retrier's backoff: the first retry after retryFirst, doubling up to
// retryMax between attempts while they fail.
const (
	retryFirst = 20 * time.Millisecond
	retryMax   = 2 * time.Second
)

// submit queues apply for the group commit and returns once the change is
// durable (or failed). Changes submitted while a commit is in progress are
// written together by the next one: one file write and two fsyncs (file
// and directory) for the whole batch.
func (l *Ledger) submit(apply func(st *fileState, now time.Time, recovered int) (bool, error)) error {
	return l.submitOp(&op{apply: apply})
}

func (l *Ledger) submitOp(o *op) error {
	o.done = make(chan error, 1)
	l.mu.Lock()
	l.queue = append(l.queue, o)
	l.pending++
	if !l.writing {
		l.writing = true
		go l.writeLoop()
	}
	l.mu.Unlock()
	return <-o.done
}

// writeLoop commits batches until the queue is empty, then exits; submit
// starts it again. At most one runs per Ledger.
func (l *Ledger) writeLoop() {
	for {
		l.mu.Lock()
		batch := l.queue
		l.queue = nil
		if len(batch) == 0 {
			l.writing = false
			l.mu.Unlock()
			return
		}
		retry := make([]retryOp, 0, len(l.retry))
		for _, r := range l.retry {
			retry = append(retry, r)
		}
		l.mu.Unlock()

		err := l.transact(func(st *fileState, now time.Time) bool {
			changed := applyRetries(st, retry)
			recovered := recoverDead(st)
			if recovered > 0 {
				changed = true
			}
			for _, o := range batch {
				c, err := o.apply(st, now, recovered)
				o.err = err
				changed = changed || c
			}
			return changed
		}, func() {
			// Durable: the retried changes are done, and the entries the
			// held slots stood for are in the file, so their locks may go
			// (a reader who finds one unlocked sees the new file on its
			// second stat). One critical section with relock, so that a
			// lock it takes is released here.
			l.mu.Lock()
			for _, r := range retry {
				if cur := l.retry[r.id]; cur.held && l.slots != nil {
					unlockSlot(l.slots, cur.slot)
				}
				delete(l.retry, r.id)
			}
			l.mu.Unlock()
			for _, o := range batch {
				if o.after != nil && o.err == nil {
					o.after()
				}
			}
		})
		l.mu.Lock()
		l.pending -= len(batch)
		l.mu.Unlock()
		for _, o := range batch {
			if err != nil {
				o.done <- err
			} else {
				o.done <- o.err
			}
		}
	}
}

// addRetry keeps a change whose commit failed and makes sure the retrier
// runs.
func (l *Ledger) addRetry(r retryOp) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.retry[r.id] = r
	if !l.retrying {
		l.retrying = true
		go l.retryLoop()
	}
}

// retryLoop commits the retried changes in the background until none is
// left, waiting retryFirst, then twice as long after each failure, up to
// retryMax. It also takes again the slot locks an Unknown could not take.
func (l *Ledger) retryLoop() {
	delay := retryFirst
	done := func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		if len(l.retry) == 0 {
			l.retrying = false
			return true
		}
		return false
	}
	for {
		time.Sleep(delay)
		if done() { // another commit applied them meanwhile
			return
		}
		l.relock()
		err := l.submit(func(*fileState, time.Time, int) (bool, error) { return false, nil })
		if done() {
			return
		}
		if err != nil {
			delay = min(2*delay, retryMax)
		} else {
			delay = retryFirst
		}
	}
}

func applyRetries(st *fileState, retry []retryOp) bool {
	changed := false
	for _, r := range retry {
		if removeMarker(st, r.id) {
			changed = true
		}
		if r.unknown != nil && !containsID(st.Entries, r.id) && !clearedID(st, r.id) {
			st.Entries = append(st.Entries, *r.unknown)
			changed = true
		}
	}
	return changed
}

// clearedID reports whether an operator cleared id: an Unknown saved late
// must not bring it back.
func clearedID(st *fileState, id string) bool {
	return slices.ContainsFunc(st.Cleared, func(c Cleared) bool { return c.ID == id })
}

// recoverDead turns the markers of dead processes into entries.
func recoverDead(st *fileState) int {
	self := selfOwner()
	alive := livenessCache{}
	n := 0
	kept := st.InFlight[:0]
	for _, m := range st.InFlight {
		if alive.check(m.Owner, self) {
			kept = append(kept, m)
			continue
		}
		if !containsID(st.Entries, m.ID) {
			st.Entries = append(st.Entries, deadEntry(m))
		}
		n++
	}
	clear(st.InFlight[len(kept):])
	st.InFlight = kept
	return n
}

func removeMarker(st *fileState, id string) bool {
	for i, m := range st.InFlight {
		if m.ID == id {
			st.InFlight = append(st.InFlight[:i], st.InFlight[i+1:]...)
			return true
		}
	}
	return false
}

// transact is one read-modify-write under the exclusive lock: check the
// state dir and its files, read the file (missing is empty; unreadable
// aborts with nothing written), let fn change a copy of it, and if it did,
// replace the file atomically and durably. after, when set, runs once the
// change is durable or was not needed, still under the lock.
func (l *Ledger) transact(fn func(st *fileState, now time.Time) bool, after func()) error {
	if err := l.preflight(); err != nil {
		return err
	}
	unlock, err := l.lock()
	if err != nil {
		return err
	}
	defer unlock()

	p, err := l.load()
	if err != nil {
		return err
	}
	st := p.st.clone()
	if !fn(st, time.Now().UTC()) {
		if after != nil {
			after()
		}
		return nil
	}
	b, err := st.encode()
	if err != nil {
		return fmt.Errorf("ledger: encode: %w", err)
	}
	written, err := l.replace(b)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.commits++
	l.mu.Unlock()
	l.cacheWritten(st, written)
	if after != nil {
		after()
	}
	return nil
}

// cacheWritten caches the state this Ledger just wrote, so that the next
// read does not parse it again, provided the file at the path is still the
// inode it wrote (written: device and inode).
func (l *Ledger) cacheWritten(st *fileState, written [2]uint64) {
	f, fst, err := l.openChecked(FileName, unix.O_RDONLY)
	if err != nil {
		l.setCache(nil)
		return
	}
	id := idOf(fst)
	if [2]uint64{id.dev, id.ino} != written { // replaced by someone outside the lock: read it
		f.Close()
		l.setCache(nil)
		return
	}
	l.setCache(&parsed{id: id, pin: f, st: st})
}

// lock takes the exclusive flock on the lock file, blocking until it is
// free. The lock is released by closing the descriptor, and by the kernel
// if the process dies.
func (l *Ledger) lock() (func(), error) {
	unlock, err := l.sd.Lock(lockName)
	var se *statedir.Error
	switch {
	case errors.As(err, &se):
		return nil, l.wrap(err)
	case err != nil:
		return nil, fmt.Errorf("ledger: %w", err)
	}
	return unlock, nil
}

// replace writes b to the ledger file atomically (renameio: temp file in
// the same directory, fsync, rename) and then fsyncs the directory so the
// rename itself survives a power cut.
// It returns the new file's device and inode.
func (l *Ledger) replace(b []byte) ([2]uint64, error) {
	var id [2]uint64
	st, err := l.sd.Replace(FileName, b)
	if st != nil {
		fid := idOf(st)
		id = [2]uint64{fid.dev, fid.ino}
	}
	if err != nil {
		return id, fmt.Errorf("ledger: %w", err)
	}
	return id, nil
}

// removeStaleTemps deletes temp files a killed writer left behind. Call it
// only under the lock: then no temp file belongs to a live writer.
func (l *Ledger) removeStaleTemps() int { return l.sd.RemoveStaleTemps(FileName) }
