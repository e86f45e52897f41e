package approval

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mcpx/mcpx-policy/internal/statedir"
)

// BenchmarkHoldAnAsk measures what an ask costs the store: a request opened
// and removed again (Request, then Discard), with n others pending, on the
// append-only log (log) and on a whole-file store as this package kept
// before it (wholefile: every change reads, decodes, re-encodes and
// atomically replaces approvals.json — the baseline, kept here so that both
// are measured in one process, alternated). Both write durably: an
// fdatasync per line, an fsync per replaced file. Run it with
//
//	go test ./internal/approval/ -run '^$' -bench HoldAnAsk -benchtime 200x -count 3
//
// and compare the two at each n (docs/decisions/0022-approvals-log-and-fairness.md).
func BenchmarkHoldAnAsk(b *testing.B) {
	for _, n := range []int{10, 1_000, 10_000} {
		b.Run(fmt.Sprintf("pending=%d/log", n), func(b *testing.B) { benchLog(b, n) })
		b.Run(fmt.Sprintf("pending=%d/wholefile", n), func(b *testing.B) { benchWholeFile(b, n) })
	}
}

// benchRecord is the i-th distinct ask of one caller, with a prompt the size
// of a small write's (~400 bytes).
func benchRecord(i int) Record {
	sum := sha256.Sum256([]byte(fmt.Sprint("call ", i)))
	return Record{SHA256: hex.EncodeToString(sum[:]), Server: "fs", Tool: "write_file", Surface: "daemon",
		Caller: "daemon:127.0.0.1", Binding: "5b7f0d6c2a9e4f3b8c1d0e2f4a6b8c9d5b7f0d6c2a9e4f3b8c1d0e2f4a6b8c9d",
		Prompt: json.RawMessage(fmt.Sprintf(`{"server":"fs","tool":"write_file","arguments":{"path":"/workspace/notes/%d.md",`+
			`"content":"# Notes\n\nThe quarterly figures go here; the draft is due on Friday and the review after it."},`+
			`"reasons":[{"code":"Ask","message":"fs.write_file writes a file: a person confirms each write"}],`+
			`"write":true,"destructive":false}`, i))}
}

// pendingRecords are n live pending requests, as Request opens them.
func pendingRecords(n int, now time.Time) []Record {
	out := make([]Record, n)
	for i := range out {
		out[i] = Renew(benchRecord(-1-i), now, time.Hour)
	}
	return out
}

// benchDir is a fresh private state dir.
func benchDir(b *testing.B) string {
	dir := filepath.Join(b.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	return dir
}

func benchLog(b *testing.B, n int) {
	b.ReportAllocs()
	dir := benchDir(b)
	log := slices.Clone(header)
	for _, r := range pendingRecords(n, time.Now().UTC()) {
		line, err := requestOf(r)
		if err != nil {
			b.Fatal(err)
		}
		log = append(log, line...)
	}
	if err := os.WriteFile(filepath.Join(dir, LogName), log, 0o600); err != nil {
		b.Fatal(err)
	}
	s, err := Open(dir, WithTTL(time.Hour), WithMaxLive(4*n+16), WithMaxPerCaller(4*n+16))
	if err != nil {
		b.Fatal(err)
	}
	if l, err := s.List(); err != nil || len(l) != n {
		b.Fatalf("%d pending, %v; want %d", len(l), err, n)
	}
	b.ResetTimer()
	for i := range b.N {
		got, err := s.Request(benchRecord(i))
		if err != nil {
			b.Fatal(err)
		}
		if ok, err := s.Discard(got.ID); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

// wholeFile is the baseline: the store as one versioned file of every
// request ({"version":1,"approvals":[…]}), read, decoded, checked and
// replaced whole under the exclusive lock on each change (statedir.File).
type wholeFile struct {
	file    *statedir.File[*wholeState]
	maxLive int
}

type wholeState struct {
	Version   int      `json:"version"`
	Approvals []Record `json:"approvals"`
}

func openWholeFile(dir string, maxLive int) *wholeFile {
	return &wholeFile{maxLive: maxLive, file: &statedir.File[*wholeState]{
		Dir: statedir.New(dir), Name: "approvals.json", Lock: lockName, Max: MaxFileSize,
		Empty: func() *wholeState { return &wholeState{Version: 1} },
		Decode: func(b []byte) (*wholeState, error) {
			var st wholeState
			if err := statedir.DecodeVersioned(b, 1, ErrNewerVersion, &st); err != nil {
				return nil, err
			}
			seen := map[string]bool{}
			for i, r := range st.Approvals {
				if !hexID.MatchString(r.ID) || seen[r.ID] || !hexSum.MatchString(r.SHA256) || r.Expires.IsZero() {
					return nil, fmt.Errorf("approvals[%d] does not read", i)
				}
				seen[r.ID] = true
			}
			return &st, nil
		},
		Store: "approval store", Prefix: "approval",
	}}
}

// change is one read-modify-write: fn changes the requests, the expired
// ones are dropped, and the file is replaced.
func (w *wholeFile) change(fn func(st *wholeState, now time.Time) error) error {
	return w.file.Update(func(st *wholeState) ([]byte, error) {
		now := time.Now().UTC()
		if err := fn(st, now); err != nil {
			return nil, err
		}
		st.Approvals = slices.DeleteFunc(st.Approvals, func(r Record) bool { return !now.Before(r.Expires) })
		return statedir.EncodeRecords(1, "approvals", st.Approvals)
	})
}

func (w *wholeFile) request(r Record) (Record, error) {
	err := w.change(func(st *wholeState, now time.Time) error {
		live := 0
		for _, x := range st.Approvals {
			if now.Before(x.Expires) {
				live++
			}
		}
		if live >= w.maxLive {
			return ErrFull
		}
		r = Renew(r, now, time.Hour)
		st.Approvals = append(st.Approvals, r)
		return nil
	})
	return r, err
}

func (w *wholeFile) discard(id string) error {
	return w.change(func(st *wholeState, _ time.Time) error {
		st.Approvals = slices.DeleteFunc(st.Approvals, func(r Record) bool { return r.ID == id })
		return nil
	})
}

func benchWholeFile(b *testing.B, n int) {
	b.ReportAllocs()
	dir := benchDir(b)
	file, err := statedir.EncodeRecords(1, "approvals", pendingRecords(n, time.Now().UTC()))
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "approvals.json"), file, 0o600); err != nil {
		b.Fatal(err)
	}
	w := openWholeFile(dir, 4*n+16)
	b.ResetTimer()
	for i := range b.N {
		got, err := w.request(benchRecord(i))
		if err != nil {
			b.Fatal(err)
		}
		if err := w.discard(got.ID); err != nil {
			b.Fatal(err)
		}
	}
}
