package approval_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcpx/mcpx-policy/internal/approval"
)

// clock is a settable test clock shared by the Stores of one test.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newClock() *clock { return &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)} }

func open(t *testing.T, dir string, c *clock, opts ...approval.Option) *approval.Store {
	t.Helper()
	s, err := approval.Open(dir, append([]approval.Option{approval.WithClock(c.now), approval.WithTTL(time.Minute)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const (
	sumA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	sumB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

func record(sum string) approval.Record {
	return approval.Record{SHA256: sum, Server: "fs", Tool: "write_file", Surface: "daemon", Binding: "bind-1",
		Prompt: json.RawMessage(`{"server":"fs","tool":"write_file","arguments":{"path":"/workspace/a"}}`)}
}

func request(t *testing.T, s *approval.Store, sum string) approval.Record {
	t.Helper()
	r, err := s.Request(record(sum))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: err = %v, want %v", what, err, want)
	}
}

// TestApproveThenConsumeOnce: a request is pending, approved with the
// sha256 the approver saw, used once by the exact call, and then gone: a
// replay is ErrUnknown.
func TestApproveThenConsumeOnce(t *testing.T) {
	t.Parallel()
	c := newClock()
	s := open(t, t.TempDir(), c)
	r := request(t, s, sumA)
	if len(r.ID) != 32 || r.State != approval.Pending || !r.Created.Equal(c.now()) || !r.Expires.Equal(c.now().Add(time.Minute)) {
		t.Fatalf("request = %+v", r)
	}
	if r2 := request(t, s, sumA); r2.ID == r.ID {
		t.Fatal("two requests for one call got the same id")
	}
	_, err := s.Consume(r.ID, sumA, "bind-1")
	wantErr(t, "consume before the answer", err, approval.ErrNotApproved)
	a, err := s.Approve(r.ID, sumA)
	if err != nil || a.State != approval.Approved {
		t.Fatalf("approve: %+v, %v", a, err)
	}
	if _, err := s.Approve(r.ID, sumA); err != nil {
		t.Fatalf("approving twice: %v", err)
	}
	if _, err := s.Consume(r.ID, sumA, "bind-1"); err != nil {
		t.Fatalf("consume: %v", err)
	}
	_, err = s.Consume(r.ID, sumA, "bind-1")
	wantErr(t, "replay", err, approval.ErrUnknown)
	_, err = s.Approve(r.ID, sumA)
	wantErr(t, "approve after use", err, approval.ErrUnknown)
}

// TestChangedCallVoidsTheApproval: a call with another sha256 or another
// binding does not use the approval and voids it; an approver who saw
// another call's sha256 approves nothing.
func TestChangedCallVoidsTheApproval(t *testing.T) {
	t.Parallel()
	c := newClock()
	s := open(t, t.TempDir(), c)

	r := request(t, s, sumA)
	_, err := s.Approve(r.ID, sumB)
	wantErr(t, "approve with another sha256", err, approval.ErrMismatch)
	if got, _ := s.Get(r.ID); got.State != approval.Pending {
		t.Fatalf("after a mismatched approve the state is %s, want pending", got.State)
	}
	if _, err := s.Approve(r.ID, sumA); err != nil {
		t.Fatal(err)
	}
	_, err = s.Consume(r.ID, sumB, "bind-1")
	wantErr(t, "consume for another call", err, approval.ErrMismatch)
	_, err = s.Consume(r.ID, sumA, "bind-1")
	wantErr(t, "consume after the mismatch voided it", err, approval.ErrUnknown)

	r = request(t, s, sumA)
	if _, err := s.Approve(r.ID, sumA); err != nil {
		t.Fatal(err)
	}
	_, err = s.Consume(r.ID, sumA, "bind-2")
	wantErr(t, "consume with another binding", err, approval.ErrMismatch)
	_, err = s.Consume(r.ID, sumA, "bind-1")
	wantErr(t, "consume after the binding mismatch", err, approval.ErrUnknown)
}

// TestExpiry: an approval used at or after its expiry is refused, and
// neither an answer nor a use extends it.
func TestExpiry(t *testing.T) {
	t.Parallel()
	c := newClock()
	s := open(t, t.TempDir(), c)
	r := request(t, s, sumA)
	c.add(30 * time.Second)
	if _, err := s.Approve(r.ID, sumA); err != nil {
		t.Fatal(err)
	}
	c.add(30 * time.Second) // exactly at the expiry
	_, err := s.Consume(r.ID, sumA, "bind-1")
	wantErr(t, "consume at the expiry", err, approval.ErrExpired)
	_, err = s.Consume(r.ID, sumA, "bind-1")
	wantErr(t, "consume after", err, approval.ErrUnknown)

	r = request(t, s, sumA)
	c.add(2 * time.Minute)
	_, err = s.Approve(r.ID, sumA)
	wantErr(t, "approve after the expiry", err, approval.ErrExpired)
	if l, err := s.List(); err != nil || len(l) != 0 {
		t.Fatalf("list = %v, %v; want nothing live", l, err)
	}
}

// TestDecline: a declined request cannot be approved or used; declining
// after a yes (before the use) wins.
func TestDecline(t *testing.T) {
	t.Parallel()
	c := newClock()
	s := open(t, t.TempDir(), c)
	r := request(t, s, sumA)
	if d, err := s.Decline(r.ID); err != nil || d.State != approval.Declined {
		t.Fatalf("decline: %+v, %v", d, err)
	}
	_, err := s.Approve(r.ID, sumA)
	wantErr(t, "approve after decline", err, approval.ErrDeclined)
	_, err = s.Consume(r.ID, sumA, "bind-1")
	wantErr(t, "consume after decline", err, approval.ErrDeclined)
	_, err = s.Consume(r.ID, sumA, "bind-1")
	wantErr(t, "consume again", err, approval.ErrUnknown)

	r = request(t, s, sumA)
	s.Approve(r.ID, sumA)
	if _, err := s.Decline(r.ID); err != nil {
		t.Fatal(err)
	}
	_, err = s.Consume(r.ID, sumA, "bind-1")
	wantErr(t, "consume after yes then no", err, approval.ErrDeclined)
	_, err = s.Decline("0123456789abcdef0123456789abcdef")
	wantErr(t, "decline an unknown id", err, approval.ErrUnknown)
}

// TestBounded: at most MaxLive requests live at once; expired ones make
// room; a prompt above MaxPromptSize is refused, not stored.
func TestBounded(t *testing.T) {
	t.Parallel()
	c := newClock()
	s := open(t, t.TempDir(), c, approval.WithMaxLive(3))
	for range 3 {
		request(t, s, sumA)
	}
	_, err := s.Request(record(sumA))
	wantErr(t, "the fourth request", err, approval.ErrFull)
	c.add(time.Minute)
	request(t, s, sumA)

	big := record(sumA)
	big.Prompt = json.RawMessage(`"` + strings.Repeat("x", approval.MaxPromptSize) + `"`)
	_, err = s.Request(big)
	wantErr(t, "a huge prompt", err, approval.ErrTooLarge)
}

// TestAcrossStores: a request made through one Store is answered through
// a second and used through a third, all on one state dir, as a daemon,
// the CLI and another daemon would.
func TestAcrossStores(t *testing.T) {
	t.Parallel()
	c := newClock()
	dir := t.TempDir()
	r := request(t, open(t, dir, c), sumA)
	l, err := open(t, dir, c).List()
	if err != nil || len(l) != 1 || l[0].ID != r.ID || string(l[0].Prompt) != string(record(sumA).Prompt) {
		t.Fatalf("list through another store = %+v, %v", l, err)
	}
	if _, err := open(t, dir, c).Approve(r.ID, sumA); err != nil {
		t.Fatal(err)
	}
	if _, err := open(t, dir, c).Consume(r.ID, sumA, "bind-1"); err != nil {
		t.Fatal(err)
	}
	_, err = open(t, dir, c).Consume(r.ID, sumA, "bind-1")
	wantErr(t, "replay through a fourth store", err, approval.ErrUnknown)
}

// TestConcurrentConsumersOneWins: many Stores on one state dir (each takes
// the lock through its own open file description, as processes do) race
// to use one approval: exactly one succeeds, the others get ErrUnknown.
func TestConcurrentConsumersOneWins(t *testing.T) {
	t.Parallel()
	c := newClock()
	dir := t.TempDir()
	for round := range 5 {
		s := open(t, dir, c)
		r := request(t, s, sumA)
		if _, err := s.Approve(r.ID, sumA); err != nil {
			t.Fatal(err)
		}
		var wins, unknown atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 16 {
			st := open(t, dir, c)
			wg.Go(func() {
				<-start
				_, err := st.Consume(r.ID, sumA, "bind-1")
				switch {
				case err == nil:
					wins.Add(1)
				case errors.Is(err, approval.ErrUnknown):
					unknown.Add(1)
				default:
					t.Errorf("consume: %v", err)
				}
			})
		}
		close(start)
		wg.Wait()
		if wins.Load() != 1 || unknown.Load() != 15 {
			t.Fatalf("round %d: %d consumers won, %d got ErrUnknown; want 1 and 15", round, wins.Load(), unknown.Load())
		}
	}
}

// TestFileIsPrivateAndHoldsTheRecord: the directory is 0700, the file 0600,
// and the file is the documented format.
func TestFileIsPrivateAndHoldsTheRecord(t *testing.T) {
	t.Parallel()
	c := newClock()
	dir := filepath.Join(t.TempDir(), "state")
	s := open(t, dir, c)
	r := request(t, s, sumA)
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
	var doc struct {
		Version   int              `json:"version"`
		Approvals []map[string]any `json:"approvals"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Version != 1 || len(doc.Approvals) != 1 {
		t.Fatalf("file = %s", b)
	}
	got := doc.Approvals[0]
	for k, want := range map[string]any{"id": r.ID, "sha256": sumA, "server": "fs", "tool": "write_file", "surface": "daemon",
		"state": "pending", "binding": "bind-1", "created": "2026-11-29T12:00:00Z", "expires": "2026-11-29T12:01:00Z"} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
	}
	if _, ok := got["answered"]; ok {
		t.Errorf("an unanswered request has answered: %v", got["answered"])
	}
}

// TestUnusableFileIsNeverOverwritten: a corrupt or newer file, or an
// unsafe state dir, fails every operation with an *UnreadableError and is
// left as it was.
func TestUnusableFileIsNeverOverwritten(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, content string
		mode          os.FileMode
		dirMode       os.FileMode
		want          error
	}{
		{"corrupt", `{"version": 1, "approvals": [`, 0o600, 0o700, approval.ErrUnreadable},
		{"unknown-field", `{"version": 1, "approvals": [], "auto_approve": true}`, 0o600, 0o700, approval.ErrUnreadable},
		{"bad-state", `{"version": 1, "approvals": [{"id": "0123456789abcdef0123456789abcdef", "sha256": "` + sumA + `", "server": "fs", "tool": "t", "expires": "2099-01-01T00:00:00Z", "state": "auto"}]}`, 0o600, 0o700, approval.ErrUnreadable},
		{"newer", `{"version": 2, "approvals": []}`, 0o600, 0o700, approval.ErrNewerVersion},
		{"file-writable-by-others", `{"version": 1, "approvals": []}`, 0o666, 0o700, approval.ErrUnreadable},
		{"dir-writable-by-others", `{"version": 1, "approvals": []}`, 0o600, 0o777, approval.ErrUnreadable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "state")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, approval.FileName)
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			os.Chmod(path, tc.mode)
			os.Chmod(dir, tc.dirMode)
			s := open(t, dir, newClock())
			_, err := s.Request(record(sumA))
			wantErr(t, "request", err, tc.want)
			var ue *approval.UnreadableError
			if !errors.As(err, &ue) || ue.Hint == "" {
				t.Errorf("request: %v: want an *UnreadableError with a hint", err)
			}
			_, err = s.List()
			wantErr(t, "list", err, tc.want)
			_, err = s.Consume("0123456789abcdef0123456789abcdef", sumA, "")
			wantErr(t, "consume", err, tc.want)
			b, _ := os.ReadFile(path)
			if string(b) != tc.content {
				t.Fatalf("the file changed: %s", b)
			}
		})
	}
}

// TestLinkedFileRefused: approvals.json or approvals.lock as a symbolic
// link or a FIFO is refused without following or blocking.
func TestLinkedFileRefused(t *testing.T) {
	t.Parallel()
	for _, name := range []string{approval.FileName, "approvals.lock"} {
		for _, kind := range []string{"symlink", "fifo"} {
			t.Run(name+"-"+kind, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				target := filepath.Join(t.TempDir(), "precious")
				os.WriteFile(target, []byte(`{"version": 1, "approvals": []}`), 0o600)
				path := filepath.Join(dir, name)
				if kind == "symlink" {
					if err := os.Symlink(target, path); err != nil {
						t.Fatal(err)
					}
				} else if err := unix.Mkfifo(path, 0o600); err != nil {
					t.Fatal(err)
				}
				_, err := open(t, dir, newClock()).Request(record(sumA))
				wantErr(t, "request", err, approval.ErrUnreadable)
				if b, _ := os.ReadFile(target); !bytes.Equal(b, []byte(`{"version": 1, "approvals": []}`)) {
					t.Fatalf("the link's target changed: %s", b)
				}
			})
		}
	}
}

func ExampleStore() {
	dir, _ := os.MkdirTemp("", "approvals")
	defer os.RemoveAll(dir)
	s, _ := approval.Open(dir)
	r, _ := s.Request(approval.Record{SHA256: sumA, Server: "fs", Tool: "write_file", Binding: "b"})
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
