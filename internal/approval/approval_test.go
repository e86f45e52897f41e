package approval_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcpx/mcpx-policy/internal/approval"
	"github.com/mcpx/mcpx-policy/internal/approval/approvaltest"
)

// fileStores is the suite's factory for the file store: a fresh state dir
// per test, each Backend a Store of its own on it (its own descriptors and
// view of the log, as another process has).
func fileStores(t *testing.T) approvaltest.Opener {
	dir := filepath.Join(t.TempDir(), "state")
	return func(opts ...approval.Option) approval.Backend {
		s, err := approval.Open(dir, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

// TestFileStore runs the behaviour every approval store promises on the
// file store.
func TestFileStore(t *testing.T) { approvaltest.Run(t, fileStores) }

const sumA = approvaltest.SumA

func open(t *testing.T, dir string, c *approvaltest.Clock, opts ...approval.Option) *approval.Store {
	t.Helper()
	s, err := approval.Open(dir, append([]approval.Option{approval.WithClock(c.Now), approval.WithTTL(time.Minute)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func request(t *testing.T, s approval.Backend, r approval.Record) approval.Record {
	t.Helper()
	got, err := s.Request(r)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: err = %v, want %v", what, err, want)
	}
}

// TestFileIsPrivateAndHoldsTheRecord: the directory is 0700, the log and
// the lock 0600, and the log is the documented format: a header, then one
// line a fact.
func TestFileIsPrivateAndHoldsTheRecord(t *testing.T) {
	t.Parallel()
	c := approvaltest.NewClock()
	dir := filepath.Join(t.TempDir(), "state")
	s := open(t, dir, c)
	r := request(t, s, approvaltest.Record(sumA))
	if _, err := s.Approve(r.ID, sumA); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, s.Path(): 0o600, filepath.Join(dir, "approvals.lock"): 0o600} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s: mode %o, want %o", path, st.Mode().Perm(), want)
		}
	}
	b, err := os.ReadFile(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 3 || lines[0] != `{"store":"mcpx-policy approvals","version":2}` {
		t.Fatalf("log = %s", b)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &got); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"op": "request", "id": r.ID, "sha256": sumA, "server": "fs", "tool": "write_file", "surface": "daemon",
		"caller": "daemon:x", "state": "pending", "binding": "bind-1", "created": "2026-11-29T12:00:00Z", "expires": "2026-11-29T12:01:00Z"} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
	}
	if _, ok := got["answered"]; ok {
		t.Errorf("an unanswered request has answered: %v", got["answered"])
	}
	if want := `{"op":"approve","id":"` + r.ID + `","at":"2026-11-29T12:00:00Z"}`; lines[2] != want {
		t.Errorf("answer line = %s, want %s", lines[2], want)
	}
}

// TestUnusableFileIsNeverOverwritten: a log that does not read (corrupt,
// newer, a line that cannot follow the ones before) or an unsafe state dir
// fails every operation with an *UnreadableError and is left as it was.
func TestUnusableFileIsNeverOverwritten(t *testing.T) {
	t.Parallel()
	const head = `{"store":"mcpx-policy approvals","version":2}` + "\n"
	req := `{"op":"request","id":"0123456789abcdef0123456789abcdef","sha256":"` + sumA + `","server":"fs","tool":"t","created":"2026-11-29T12:00:00Z","expires":"2099-01-01T00:00:00Z","state":"pending","binding":"b","prompt":{}}` + "\n"
	for _, tc := range []struct {
		name, content string
		mode          os.FileMode
		dirMode       os.FileMode
		want          error
	}{
		{"corrupt", head + `{"op":"request",` + "\n", 0o600, 0o700, approval.ErrUnreadable},
		{"no-header", req, 0o600, 0o700, approval.ErrUnreadable},
		{"old-whole-file", `{"version": 1, "approvals": []}` + "\n", 0o600, 0o700, approval.ErrUnreadable},
		{"unknown-field", head + strings.Replace(req, `"op"`, `"auto_approve":true,"op"`, 1), 0o600, 0o700, approval.ErrUnreadable},
		{"bad-state", head + strings.Replace(req, `"pending"`, `"auto"`, 1), 0o600, 0o700, approval.ErrUnreadable},
		{"unknown-op", head + `{"op":"grant","id":"0123456789abcdef0123456789abcdef"}` + "\n", 0o600, 0o700, approval.ErrUnreadable},
		{"answer-of-nothing", head + `{"op":"approve","id":"0123456789abcdef0123456789abcdef","at":"2026-11-29T12:00:00Z"}` + "\n", 0o600, 0o700, approval.ErrUnreadable},
		{"request-twice", head + req + req, 0o600, 0o700, approval.ErrUnreadable},
		{"newer", `{"store":"mcpx-policy approvals","version":3}` + "\n", 0o600, 0o700, approval.ErrNewerVersion},
		{"file-writable-by-others", head, 0o666, 0o700, approval.ErrUnreadable},
		{"dir-writable-by-others", head, 0o600, 0o777, approval.ErrUnreadable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "state")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, approval.LogName)
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			os.Chmod(path, tc.mode)
			os.Chmod(dir, tc.dirMode)
			s := open(t, dir, approvaltest.NewClock())
			_, err := s.Request(approvaltest.Record(sumA))
			wantErr(t, "request", err, tc.want)
			var ue *approval.UnreadableError
			if !errors.As(err, &ue) || ue.Hint == "" {
				t.Errorf("request: %v: want an *UnreadableError with a hint", err)
			}
			_, err = s.List()
			wantErr(t, "list", err, tc.want)
			_, err = s.Consume("0123456789abcdef0123456789abcdef", sumA, "")
			wantErr(t, "consume", err, tc.want)
			_, err = s.Approve("0123456789abcdef0123456789abcdef", sumA)
			wantErr(t, "approve", err, tc.want)
			b, _ := os.ReadFile(path)
			if string(b) != tc.content {
				t.Fatalf("the file changed: %s", b)
			}
		})
	}
}

// TestLinkedFileRefused: approvals.log or approvals.lock as a symbolic
// link or a FIFO is refused without following or blocking.
func TestLinkedFileRefused(t *testing.T) {
	t.Parallel()
	const content = `{"store":"mcpx-policy approvals","version":2}` + "\n"
	for _, name := range []string{approval.LogName, "approvals.lock"} {
		for _, kind := range []string{"symlink", "fifo"} {
			t.Run(name+"-"+kind, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				target := filepath.Join(t.TempDir(), "precious")
				os.WriteFile(target, []byte(content), 0o600)
				path := filepath.Join(dir, name)
				if kind == "symlink" {
					if err := os.Symlink(target, path); err != nil {
						t.Fatal(err)
					}
				} else if err := unix.Mkfifo(path, 0o600); err != nil {
					t.Fatal(err)
				}
				s := open(t, dir, approvaltest.NewClock())
				_, err := s.Request(approvaltest.Record(sumA))
				wantErr(t, "request", err, approval.ErrUnreadable)
				_, err = s.List()
				wantErr(t, "list", err, approval.ErrUnreadable)
				if b, _ := os.ReadFile(target); !bytes.Equal(b, []byte(content)) {
					t.Fatalf("the link's target changed: %s", b)
				}
			})
		}
	}
}

// TestTornLineIgnoredThenCut: the bytes a killed writer left after the
// last whole line are no fact: readers ignore them, and the next writer
// cuts them before it appends, so the log reads whole again.
func TestTornLineIgnoredThenCut(t *testing.T) {
	t.Parallel()
	c := approvaltest.NewClock()
	dir := filepath.Join(t.TempDir(), "state")
	s := open(t, dir, c)
	r := request(t, s, approvaltest.Record(sumA))
	whole, _ := os.ReadFile(s.Path())
	for _, torn := range []string{`{"op":"remove","id":"` + r.ID, "\x00\x00\x00\x00", `{"op":"approve","id":"` + r.ID + `","at":"2026-11-29T12:00:00Z"}`} {
		if err := os.WriteFile(s.Path(), append(bytes.Clone(whole), torn...), 0o600); err != nil {
			t.Fatal(err)
		}
		fresh := open(t, dir, c)
		got, err := fresh.Get(r.ID)
		if err != nil || got.State != approval.Pending {
			t.Fatalf("torn %q: get = %+v, %v; want the request, pending", torn, got, err)
		}
		if _, err := fresh.Approve(r.ID, sumA); err != nil {
			t.Fatalf("torn %q: approve: %v", torn, err)
		}
		b, _ := os.ReadFile(s.Path())
		if want := string(whole) + `{"op":"approve","id":"` + r.ID + `","at":"2026-11-29T12:00:00Z"}` + "\n"; string(b) != want {
			t.Fatalf("torn %q: the log after a write:\n%s\nwant\n%s", torn, b, want)
		}
		if got, err := open(t, dir, c).Get(r.ID); err != nil || got.State != approval.Approved {
			t.Fatalf("torn %q: after the write: %+v, %v", torn, got, err)
		}
		if err := os.WriteFile(s.Path(), whole, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCompaction: a log that outgrows its live requests is rewritten to
// them (answers folded in), so its size stays bounded however many
// requests come and go; another Store reading the old log carries on from
// the new one.
func TestCompaction(t *testing.T) {
	t.Parallel()
	c := approvaltest.NewClock()
	dir := filepath.Join(t.TempDir(), "state")
	s := open(t, dir, c)
	other := open(t, dir, c)
	kept := request(t, s, approvaltest.Record(sumA))
	if _, err := s.Approve(kept.ID, sumA); err != nil {
		t.Fatal(err)
	}
	if _, err := other.List(); err != nil { // other reads the log as it is now
		t.Fatal(err)
	}
	var largest int64
	big := json.RawMessage(`"` + strings.Repeat("x", 8<<10) + `"`)
	for i := range 150 { // about 4 compactions of 256 KiB
		r := approvaltest.Record(fmt.Sprintf("%064x", i+1))
		r.Prompt = big
		got := request(t, s, r)
		if _, err := s.Approve(got.ID, r.SHA256); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Consume(got.ID, r.SHA256, r.Binding); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(s.Path())
		if err != nil {
			t.Fatal(err)
		}
		largest = max(largest, st.Size())
	}
	if largest > 300<<10 {
		t.Errorf("the log grew to %d bytes for one live request", largest)
	}
	got, err := other.Get(kept.ID)
	if err != nil || got.State != approval.Approved {
		t.Fatalf("the kept request through the other store: %+v, %v", got, err)
	}
	if _, err := other.Consume(kept.ID, sumA, "bind-1"); err != nil {
		t.Fatal(err)
	}
	_, err = s.Consume(kept.ID, sumA, "bind-1")
	wantErr(t, "replay through the compacting store", err, approval.ErrUnknown)
	if temps, _ := filepath.Glob(filepath.Join(dir, "."+approval.LogName+"*")); len(temps) != 0 {
		t.Errorf("temp files left after compaction: %v", temps)
	}
}

// TestNothingOnDiskUntilTheFirstRequest: opening, listing and getting
// touch nothing; the state dir appears with the first request.
func TestNothingOnDiskUntilTheFirstRequest(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	s := open(t, dir, approvaltest.NewClock())
	if l, err := s.List(); err != nil || len(l) != 0 {
		t.Fatalf("list = %v, %v", l, err)
	}
	_, err := s.Get("0123456789abcdef0123456789abcdef")
	wantErr(t, "get", err, approval.ErrUnknown)
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the state dir exists before any request: %v", err)
	}
}

func ExampleStore() {
	dir, _ := os.MkdirTemp("", "approvals")
	defer os.RemoveAll(dir)
	s, _ := approval.Open(dir)
	r, _ := s.Request(approval.Record{SHA256: sumA, Server: "fs", Tool: "write_file", Caller: "cli", Binding: "b"})
	_, err := s.Consume(r.ID, sumA, "b")
	fmt.Println(errors.Is(err, approval.ErrNotApproved))
	s.Approve(r.ID, sumA)
	_, err = s.Consume(r.ID, sumA, "b")
	fmt.Println(err)
	_, err = s.Consume(r.ID, sumA, "b")
	fmt.Println(errors.Is(err, approval.ErrUnknown))
	// Output:
	// true
	// <nil>
	// true
}

// TestHoldingAnAskAppendsOneLine: with a thousand requests pending, a
// new ask, its answer and its use each append one line to the log and
// leave every byte before it as it was (the same file, not a rewrite):
// holding an ask costs the same whatever is pending. The same ask asked
// again writes nothing.
func TestHoldingAnAskAppendsOneLine(t *testing.T) {
	t.Parallel()
	c := approvaltest.NewClock()
	dir := filepath.Join(t.TempDir(), "state")
	s := open(t, dir, c, approval.WithMaxLive(4096), approval.WithMaxPerCaller(4096))
	for i := range 1000 {
		request(t, s, approvaltest.Record(fmt.Sprintf("%064x", i+1)))
	}
	before, err := os.ReadFile(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	var st0 unix.Stat_t
	if err := unix.Stat(s.Path(), &st0); err != nil {
		t.Fatal(err)
	}
	step := func(what string, fn func()) {
		t.Helper()
		fn()
		after, err := os.ReadFile(s.Path())
		if err != nil {
			t.Fatal(err)
		}
		var st unix.Stat_t
		if err := unix.Stat(s.Path(), &st); err != nil {
			t.Fatal(err)
		}
		added := after[min(len(before), len(after)):]
		switch {
		case st.Ino != st0.Ino:
			t.Fatalf("%s replaced the log", what)
		case !bytes.HasPrefix(after, before):
			t.Fatalf("%s changed the log before its end", what)
		case bytes.Count(added, []byte("\n")) != 1 || !bytes.HasSuffix(added, []byte("\n")):
			t.Fatalf("%s appended %q; want one line", what, added)
		}
		before = after
	}
	r := approvaltest.Record(sumA)
	var got approval.Record
	step("a new ask", func() { got = request(t, s, r) })
	if again := request(t, s, r); again.ID != got.ID {
		t.Fatalf("the same ask again opened %s; want %s", again.ID, got.ID)
	}
	if after, _ := os.ReadFile(s.Path()); !bytes.Equal(after, before) {
		t.Fatal("the same ask asked again wrote to the log")
	}
	step("its answer", func() {
		if _, err := s.Approve(got.ID, sumA); err != nil {
			t.Fatal(err)
		}
	})
	step("its use", func() {
		if _, err := s.Consume(got.ID, sumA, r.Binding); err != nil {
			t.Fatal(err)
		}
	})
}

// TestLiveBytesBounded: with caps raised far above the defaults, requests
// with the largest prompts are refused (ErrFull) before the log could
// outgrow MaxFileSize — which would make it unreadable and every ask of
// every caller fail — and the log still reads.
func TestLiveBytesBounded(t *testing.T) {
	t.Parallel()
	c := approvaltest.NewClock()
	dir := filepath.Join(t.TempDir(), "state")
	s := open(t, dir, c, approval.WithMaxLive(4096), approval.WithMaxPerCaller(4096))
	big := json.RawMessage(`"` + strings.Repeat("x", approval.MaxPromptSize-3) + `"`)
	held := 0
	for i := range approval.MaxFileSize / approval.MaxPromptSize {
		r := approvaltest.Record(fmt.Sprintf("%064x", i+1))
		r.Prompt = big
		if _, err := s.Request(r); err != nil {
			wantErr(t, "a request past the log's room", err, approval.ErrFull)
			break
		}
		held++
	}
	if held == 0 || held >= approval.MaxFileSize/approval.MaxPromptSize/2 {
		t.Errorf("%d requests of %d KiB held; want fewer than half the log's %d MiB", held, approval.MaxPromptSize>>10, approval.MaxFileSize>>20)
	}
	if l, err := open(t, dir, c).List(); err != nil || len(l) != held {
		t.Fatalf("the log after the flood lists %d, %v; want %d", len(l), err, held)
	}
	c.Add(time.Minute) // they expire: room again
	if _, err := s.Request(approvaltest.Record(sumA)); err != nil {
		t.Fatal(err)
	}
}
