package ledger_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/crashtest"
	"github.com/mcpx/mcpx-policy/internal/ledger"
)

// childRoles are the roles a re-executed test binary plays (childEnv names
// one); each runs until the process exits or is killed.
var childRoles = map[string]func(){"crash": crashChild, "proc": procChild, "budget": budgetChild}

func TestMain(m *testing.M) { crashtest.Main(m, childEnv, childRoles) }

func open(t testing.TB, dir string) *ledger.Ledger {
	t.Helper()
	l, err := ledger.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// rawFile is the file as any JSON reader sees it.
type rawFile struct {
	Version  int              `json:"version"`
	Entries  []ledger.Entry   `json:"entries"`
	Cleared  []ledger.Cleared `json:"cleared"`
	InFlight []ledger.Marker  `json:"in_flight"`
	Extra    map[string]any   `json:"-"`
}

func readRaw(t testing.TB, dir string) rawFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, ledger.FileName))
	if err != nil {
		t.Fatal(err)
	}
	var f rawFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("ledger file does not parse: %v\n%s", err, b)
	}
	return f
}

func TestMissingFileIsEmpty(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	l := open(t, dir)
	es, err := l.Entries("fs")
	if err != nil || len(es) != 0 {
		t.Fatalf("Entries = %v, %v; want none, nil", es, err)
	}
	st, err := l.List()
	if err != nil || len(st.Entries)+len(st.InFlight)+len(st.Cleared) != 0 {
		t.Fatalf("List = %+v, %v; want empty", st, err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("reads created the state dir: %v", err)
	}
	if n, err := l.Recover(); err != nil || n != 0 {
		t.Fatalf("Recover = %d, %v", n, err)
	}
}

func TestDefaultStateDir(t *testing.T) {
	t.Setenv("MCPX_POLICY_STATE_DIR", "/x/state")
	t.Setenv("XDG_STATE_HOME", "/x/xdg")
	t.Setenv("HOME", "/x/home")
	for _, tc := range []struct{ unset, want string }{
		{"", "/x/state"},
		{"MCPX_POLICY_STATE_DIR", "/x/xdg/mcpx-policy"},
		{"XDG_STATE_HOME", "/x/home/.local/state/mcpx-policy"},
	} {
		if tc.unset != "" {
			t.Setenv(tc.unset, "")
		}
		if got, err := ledger.DefaultStateDir(); err != nil || got != tc.want {
			t.Errorf("after unsetting %q: DefaultStateDir = %q, %v; want %q", tc.unset, got, err, tc.want)
		}
	}
}

func TestLifecycle(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l := open(t, dir)
	args := map[string]any{"path": "/workspace/a", "content": "secret-ish text"}

	d, err := l.Begin("fs", "write_file", args, "mcp")
	if err != nil {
		t.Fatal(err)
	}
	f := readRaw(t, dir)
	if len(f.InFlight) != 1 || f.InFlight[0].ID != d.ID() || f.InFlight[0].Owner != ledger.SelfOwner() {
		t.Fatalf("after Begin the durable file has in_flight %+v; want the marker of %s", f.InFlight, d.ID())
	}
	want, _ := decision.ArgsSHA256(args)
	if f.InFlight[0].ArgsSHA256 != want {
		t.Fatalf("args_sha256 = %s, want %s", f.InFlight[0].ArgsSHA256, want)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ledger.FileName)); bytes.Contains(b, []byte("secret-ish")) {
		t.Fatal("the ledger file holds argument values")
	}
	if es, _ := l.Entries("fs"); len(es) != 0 {
		t.Fatalf("a live in-flight write counts as unknown: %v", es)
	}
	d.Sent()
	if err := d.Settle(); err != nil {
		t.Fatal(err)
	}
	if err := d.Unknown("late"); err != nil { // ended: a no-op
		t.Fatal(err)
	}
	if f := readRaw(t, dir); len(f.InFlight)+len(f.Entries) != 0 {
		t.Fatalf("after Settle: %+v; want nothing recorded", f)
	}

	// Never sent: Abort records nothing.
	d, _ = l.Begin("fs", "write_file", args, "mcp")
	if err := d.Abort(); err != nil {
		t.Fatal(err)
	}
	if f := readRaw(t, dir); len(f.InFlight)+len(f.Entries) != 0 {
		t.Fatalf("after Abort: %+v; want nothing recorded", f)
	}

	// Sent, then lost: an entry.
	d, _ = l.Begin("fs", "write_file", args, "mcp")
	d.Sent()
	if err := d.Unknown("timeout after 30s"); err != nil {
		t.Fatal(err)
	}
	// Sent, then aborted: still unknown.
	d2, _ := l.Begin("fs", "edit_file", nil, "daemon")
	d2.Sent()
	if err := d2.Abort(); err != nil {
		t.Fatal(err)
	}
	es, err := l.Entries("fs")
	if err != nil || len(es) != 2 {
		t.Fatalf("Entries(fs) = %v, %v; want 2", es, err)
	}
	if es[0] != d.Entry() || es[1] != d2.Entry() {
		t.Fatalf("Entries(fs) = %+v; want %+v, %+v", es, d.Entry(), d2.Entry())
	}
	if es, _ := l.Entries("git"); len(es) != 0 {
		t.Fatalf("Entries(git) = %v; want none", es)
	}
	f = readRaw(t, dir)
	if len(f.InFlight) != 0 || len(f.Entries) != 2 || f.Entries[0].Cause != "timeout after 30s" ||
		f.Entries[1].Cause != "aborted after the request was sent" {
		t.Fatalf("file = %+v", f)
	}
}

func TestBeginErrors(t *testing.T) {
	t.Parallel()
	l := open(t, t.TempDir())
	for _, tc := range []struct {
		server, tool string
		args         map[string]any
	}{
		{"", "t", nil},
		{"s", "", nil},
		{"s", "t", map[string]any{"bad": func() {}}},
	} {
		if d, err := l.Begin(tc.server, tc.tool, tc.args, ""); err == nil {
			t.Errorf("Begin(%q, %q, %v) = %v, nil; want an error", tc.server, tc.tool, tc.args, d)
		}
	}
	if _, err := os.Stat(l.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused Begin wrote the file: %v", err)
	}
}

func TestModes(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "a", "state")
	l := open(t, dir)
	d, err := l.Begin("fs", "w", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	d.Settle()
	for _, tc := range []struct {
		path string
		mode os.FileMode
	}{
		{dir, 0o700 | os.ModeDir},
		{filepath.Join(dir, ledger.FileName), 0o600},
		{filepath.Join(dir, "ledger.lock"), 0o600},
		{filepath.Join(dir, "ledger.slots"), 0o600},
	} {
		fi, err := os.Stat(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != tc.mode {
			t.Errorf("%s: mode %v, want %v", tc.path, fi.Mode(), tc.mode)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 3 {
		t.Errorf("state dir holds %d files, want ledger.json, ledger.lock and ledger.slots: %v", len(ents), ents)
	}
}

func TestClear(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l := open(t, dir)
	var ids []string
	for _, srv := range []string{"fs", "fs", "fs", "git"} {
		d, _ := l.Begin(srv, "w", map[string]any{"n": len(ids)}, "")
		d.Sent()
		d.Unknown("timeout")
		ids = append(ids, d.ID())
	}
	if _, err := l.Clear("fs", "nope", "x"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("Clear unknown id: %v; want ErrNotFound", err)
	}
	if _, err := l.Clear("git", ids[0], "x"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("Clear id of another server: %v; want ErrNotFound", err)
	}
	got, err := l.Clear("fs", ids[1], "checked: the file exists")
	if err != nil || len(got) != 1 || got[0].ID != ids[1] {
		t.Fatalf("Clear one = %+v, %v", got, err)
	}
	got, err = l.Clear("fs", "", "all checked")
	if err != nil || len(got) != 2 || got[0].ID != ids[0] || got[1].ID != ids[2] {
		t.Fatalf("Clear all = %+v, %v", got, err)
	}
	got, err = l.Clear("fs", "", "again")
	if err != nil || len(got) != 0 {
		t.Fatalf("Clear with nothing left = %+v, %v", got, err)
	}
	f := readRaw(t, dir)
	if len(f.Entries) != 1 || f.Entries[0].ID != ids[3] {
		t.Fatalf("entries left = %+v; want only git's", f.Entries)
	}
	if len(f.Cleared) != 3 || f.Cleared[0].ID != ids[1] || f.Cleared[0].Reason != "checked: the file exists" ||
		f.Cleared[2].Reason != "all checked" || f.Cleared[0].Cause != "timeout" {
		t.Fatalf("cleared = %+v", f.Cleared)
	}
	if _, err := time.Parse(time.RFC3339Nano, f.Cleared[0].ClearedAt); err != nil {
		t.Fatalf("cleared_at: %v", err)
	}
}

func TestRestartPersistence(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l := open(t, dir)
	d, _ := l.Begin("fs", "write_file", map[string]any{"a": 1}, "mcp")
	d.Sent()
	d.Unknown("transport closed")
	d2, _ := l.Begin("fs", "edit_file", map[string]any{"a": 2}, "mcp")
	d2.Sent()
	d2.Unknown("timeout")
	if _, err := l.Clear("fs", d2.ID(), "done by hand"); err != nil {
		t.Fatal(err)
	}
	before, _ := l.List()

	l2 := open(t, dir) // a restarted process sees the same state
	after, err := l2.List()
	if err != nil {
		t.Fatal(err)
	}
	bj, _ := json.Marshal(before)
	aj, _ := json.Marshal(after)
	if !bytes.Equal(bj, aj) || len(after.Entries) != 1 || len(after.Cleared) != 1 {
		t.Fatalf("after reopening:\n%s\nbefore:\n%s", aj, bj)
	}
	es, _ := l2.Entries("fs")
	if len(es) != 1 || es[0] != d.Entry() {
		t.Fatalf("Entries after reopening = %+v; want %+v", es, d.Entry())
	}
}

// deadPID is the PID of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	// this test binary, running no test, exits at once on any machine
	cmd := crashtest.Command()
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func writeFile(t *testing.T, dir string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ledger.FileName), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestRecoverDeadMarkers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	self := ledger.SelfOwner()
	if self.Start == "" {
		t.Skip("no /proc: liveness falls back to signal 0")
	}
	parentStart := procStart(t, os.Getppid())
	marker := func(id string, o ledger.Owner) ledger.Marker {
		return ledger.Marker{LedgerEntry: decision.LedgerEntry{ID: id, Server: "fs", Tool: "w",
			ArgsSHA256: strings.Repeat("0", 64), Time: "2026-01-01T00:00:00.000000000Z", Surface: "mcp"}, Owner: o}
	}
	writeFile(t, dir, map[string]any{
		"version": 1, "entries": []any{}, "cleared": []any{},
		"in_flight": []ledger.Marker{
			marker("dead", ledger.Owner{PID: deadPID(t), Start: "1", Boot: self.Boot}),
			marker("reused", ledger.Owner{PID: os.Getppid(), Start: parentStart + "0", Boot: self.Boot}),
			marker("rebooted", ledger.Owner{PID: os.Getppid(), Start: parentStart, Boot: "another-boot"}),
			marker("live", ledger.Owner{PID: os.Getppid(), Start: parentStart, Boot: self.Boot}),
			marker("mine", self),
		},
		"x_future": map[string]any{"kept": true},
	})
	// Readers already report dead markers as entries, before any recovery.
	l := open(t, dir)
	es, err := l.Entries("fs")
	if err != nil || len(es) != 3 {
		t.Fatalf("Entries = %+v, %v; want the 3 dead markers", es, err)
	}
	// A leftover temp file of a killed writer.
	tmp := filepath.Join(dir, "."+ledger.FileName+"12345")
	os.WriteFile(tmp, []byte("{"), 0o600)

	n, err := l.Recover()
	if err != nil || n != 3 {
		t.Fatalf("Recover = %d, %v; want 3", n, err)
	}
	f := readRaw(t, dir)
	var gotE, gotM []string
	for _, e := range f.Entries {
		gotE = append(gotE, e.ID)
		if !strings.Contains(e.Cause, "exited while the call was in flight") {
			t.Errorf("entry %s cause %q", e.ID, e.Cause)
		}
	}
	for _, m := range f.InFlight {
		gotM = append(gotM, m.ID)
	}
	if strings.Join(gotE, ",") != "dead,reused,rebooted" || strings.Join(gotM, ",") != "live,mine" {
		t.Fatalf("entries %v, in_flight %v; want dead,reused,rebooted and live,mine", gotE, gotM)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stale temp file left: %v", err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, ledger.FileName))
	if !bytes.Contains(b, []byte(`"x_future": {`)) {
		t.Fatalf("an unknown top-level field was dropped:\n%s", b)
	}
	if n, _ := l.Recover(); n != 0 {
		t.Fatalf("second Recover converted %d", n)
	}
}

func procStart(t *testing.T, pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Skip(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return f[19]
}

func TestUnreadableFileIsNeverOverwritten(t *testing.T) {
	t.Parallel()
	valid := []byte(`{"version": 1, "entries": [{"id": "a1", "server": "fs", "tool": "w", "args_sha256": "00", "time": "2026-01-01T00:00:00Z", "surface": "mcp"}], "cleared": [], "in_flight": []}`)
	for _, tc := range []struct {
		name  string
		data  []byte
		newer bool
	}{
		{"corrupt", []byte(`{"version": 1, "entries": [}`), false},
		{"truncated", valid[:len(valid)/2], false},
		{"empty", []byte{}, false},
		{"garbage", []byte("\x00\x00\x00\x00"), false},
		{"trailing", append(append([]byte{}, valid...), []byte(`{}`)...), false},
		{"no-version", []byte(`{"entries": []}`), false},
		{"version-zero", []byte(`{"version": 0, "entries": []}`), false},
		{"newer", []byte(`{"version": 2, "entries": [], "whatever": {"new": "shape"}}`), true},
		{"wrong-shape", []byte(`{"version": 1, "entries": {"id": "a"}}`), false},
		{"entry-without-id", []byte(`{"version": 1, "entries": [{"server": "fs"}]}`), false},
		{"array", []byte(`[1, 2]`), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, ledger.FileName)
			if err := os.WriteFile(path, tc.data, 0o600); err != nil {
				t.Fatal(err)
			}
			assertUnreadable(t, dir, tc.newer)
			if got, _ := os.ReadFile(path); !bytes.Equal(got, tc.data) {
				t.Fatalf("file changed:\n%q\nwas\n%q", got, tc.data)
			}
		})
	}
	t.Run("not-a-file", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		os.Mkdir(filepath.Join(dir, ledger.FileName), 0o700)
		assertUnreadable(t, dir, false)
		if fi, err := os.Stat(filepath.Join(dir, ledger.FileName)); err != nil || !fi.IsDir() {
			t.Fatalf("replaced: %v", err)
		}
	})
}

// assertUnreadable checks that every read and every change fails with an
// *UnreadableError.
func assertUnreadable(t *testing.T, dir string, newer bool) {
	t.Helper()
	l := open(t, dir)
	check := func(what string, err error) {
		t.Helper()
		var ue *ledger.UnreadableError
		if !errors.Is(err, ledger.ErrUnreadable) || !errors.As(err, &ue) || ue.Path != l.Path() {
			t.Errorf("%s: err = %v; want an *UnreadableError for %s", what, err, l.Path())
		}
		if errors.Is(err, ledger.ErrNewerVersion) != newer {
			t.Errorf("%s: errors.Is(err, ErrNewerVersion) = %v, want %v", what, !newer, newer)
		}
	}
	_, err := l.Entries("fs")
	check("Entries", err)
	_, err = l.List()
	check("List", err)
	d, err := l.Begin("fs", "w", nil, "")
	check("Begin", err)
	if d != nil {
		t.Error("Begin returned a dispatch")
	}
	_, err = l.Clear("fs", "", "x")
	check("Clear", err)
	_, err = l.Clear("fs", "a1", "x")
	check("Clear id", err)
	_, err = l.Recover()
	check("Recover", err)
}

// TestUnreadableAfterBegin: the file goes bad while a write is in flight.
// The dispatch cannot end in the file, the file is not touched, and an
// Unknown is still reported by this Ledger once the file reads again.
func TestUnreadableAfterBegin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l := open(t, dir)
	d, err := l.Begin("fs", "w", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	good, _ := os.ReadFile(l.Path())
	if _, err := l.Entries("fs"); err != nil { // fills the read cache
		t.Fatal(err)
	}
	bad := []byte(`{"version": 1, "entr`)
	os.WriteFile(l.Path(), bad, 0o600)
	if _, err := l.Entries("fs"); !errors.Is(err, ledger.ErrUnreadable) {
		t.Fatalf("Entries after the file went bad: %v", err)
	}
	d.Sent()
	if err := d.Unknown("timeout"); !errors.Is(err, ledger.ErrUnreadable) {
		t.Fatalf("Unknown on a bad file: %v", err)
	}
	if got, _ := os.ReadFile(l.Path()); !bytes.Equal(got, bad) {
		t.Fatal("file changed")
	}
	// The operator restores the file: the pending Unknown is visible at
	// once and lands with the next commit.
	os.WriteFile(l.Path(), good, 0o600)
	es, err := l.Entries("fs")
	if err != nil || len(es) != 1 || es[0].ID != d.ID() {
		t.Fatalf("Entries = %+v, %v; want the pending unknown", es, err)
	}
	if _, err := l.Recover(); err != nil {
		t.Fatal(err)
	}
	f := readRaw(t, dir)
	if len(f.Entries) != 1 || f.Entries[0].ID != d.ID() || len(f.InFlight) != 0 {
		t.Fatalf("after the retry: %+v", f)
	}
	// The background retrier stops by itself once nothing is left.
	for deadline := time.Now().Add(10 * time.Second); ledger.RetrierRunning(l); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the retrier still runs with nothing to retry")
		}
	}
}

// TestGroupCommit holds the file lock from outside so that 16 Begins queue
// up behind the first, then checks that they share one commit.
func TestGroupCommit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l := open(t, dir)
	if _, err := l.Begin("fs", "warm", nil, ""); err != nil { // creates the lock file
		t.Fatal(err)
	}
	base := ledger.Commits(l)
	lf, err := os.OpenFile(filepath.Join(dir, "ledger.lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	type result struct {
		d   *ledger.Dispatch
		err error
	}
	res := make(chan result, 16)
	for i := range 16 {
		go func() {
			d, err := l.Begin("fs", "w", map[string]any{"i": i}, "")
			res <- result{d, err}
		}()
	}
	// All 16 Begins are submitted: a commit is blocked on the lock, the
	// rest are queued behind it.
	deadline := time.Now().Add(10 * time.Second)
	for ledger.Queued(l) < 16 {
		if time.Now().After(deadline) {
			t.Fatalf("pending %d, want 16", ledger.Queued(l))
		}
		time.Sleep(time.Millisecond)
	}
	lf.Close() // releases the lock
	var ds []*ledger.Dispatch
	for range 16 {
		r := <-res
		if r.err != nil {
			t.Fatal(r.err)
		}
		ds = append(ds, r.d)
	}
	if n := ledger.Commits(l) - base; n > 2 {
		t.Fatalf("16 queued Begins took %d commits; want at most 2", n)
	}
	if f := readRaw(t, dir); len(f.InFlight) != 17 {
		t.Fatalf("%d markers in the file, want 17", len(f.InFlight))
	}
	base = ledger.Commits(l)
	errs := make(chan error, 16)
	for _, d := range ds {
		go func() { errs <- d.Settle() }()
	}
	for range ds {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("16 concurrent Settles took %d commits", ledger.Commits(l)-base)
	if f := readRaw(t, dir); len(f.InFlight) != 1 || len(f.Entries) != 0 {
		t.Fatalf("file = %+v; want only the warm-up marker", f)
	}
}
