package rollout_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/redact"
	"github.com/mcpx/mcpx-policy/internal/rollout"
	"github.com/mcpx/mcpx-policy/internal/secretcorpus"
	"github.com/mcpx/mcpx-policy/internal/statedir"
)

// clock is a settable clock.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

func testCall(args map[string]any) decision.Call {
	return decision.Call{Surface: "daemon", Server: "fs", Tool: decision.Tool{Name: "write_file"}, Args: args}
}

func askDecision(msg string) decision.Decision {
	return decision.Decision{Outcome: decision.Ask, Step: decision.StepWriteMode, Write: true,
		Reasons: []decision.Reason{{Code: decision.WriteNeedsConfirmation, Step: decision.StepWriteMode, Message: msg}},
		Call:    decision.CallRef{Server: "fs", Tool: "write_file", SHA256: strings.Repeat("a", 64)}}
}

// records reads the recorded calls of dir, oldest first.
func records(t *testing.T, dir string) ([]string, []rollout.Record) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	var out []rollout.Record
	for _, n := range names {
		if !strings.HasSuffix(n, ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		var r rollout.Record
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		out = append(out, r)
	}
	return names, out
}

// TestRecorderRedacts: by default the values under the secret table's key
// names are redacted, at any depth, and the decision's message never
// echoes them; the operator's list replaces the default: JSON Pointers,
// key names, @secrets, or nothing at all.
func TestRecorderRedacts(t *testing.T) {
	t.Parallel()
	args := func() map[string]any {
		return map[string]any{
			"path":    "/workspace/a",
			"content": "hello there",
			"headers": map[string]any{"Authorization": "Bearer sk-1234567890abcdefghij", "accept": "text/plain"},
			"env":     []any{map[string]any{"API_KEY": "k-42-secret"}},
		}
	}
	cases := []struct {
		name     string
		redact   []string
		redacted []string
	}{
		{"default: the secret table's key names", nil, []string{"/env/0/API_KEY", "/headers/Authorization"}},
		{"a pointer and a key name", []string{"/headers/accept", "content"}, []string{"/content", "/headers/accept"}},
		{"secrets and a pointer", []string{rollout.RedactSecrets, "/path"}, []string{"/env/0/API_KEY", "/headers/Authorization", "/path"}},
		{"nothing", []string{}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "rec")
			r, err := rollout.OpenRecorder(rollout.RecorderOptions{Dir: dir, Redact: tc.redact})
			if err != nil {
				t.Fatal(err)
			}
			in := args()
			d := askDecision("fs.write_file: k-42-secret and hello there are quoted here")
			if err := r.Record(testCall(in), redact.Of(d, in), "rev1", false, false); err != nil {
				t.Fatal(err)
			}
			_, recs := records(t, dir)
			if len(recs) != 1 {
				t.Fatalf("%d records, want 1", len(recs))
			}
			rec := recs[0]
			if strings.Join(rec.Redacted, ",") != strings.Join(tc.redacted, ",") {
				t.Errorf("redacted %v, want %v", rec.Redacted, tc.redacted)
			}
			b, _ := json.Marshal(rec.Args)
			redactedAt := func(p string) bool {
				for _, x := range tc.redacted {
					if x == p {
						return true
					}
				}
				return false
			}
			for ptr, value := range map[string]string{"/env/0/API_KEY": "k-42-secret", "/content": "hello there", "/headers/Authorization": "sk-1234567890", "/path": "/workspace/a", "/headers/accept": "text/plain"} {
				if redactedAt(ptr) == strings.Contains(string(b), value) {
					t.Errorf("%s redacted: %v; but the recorded arguments are %s", ptr, redactedAt(ptr), b)
				}
			}
			if redactedAt("/content") && strings.Contains(rec.Decision.Message, "hello there") {
				t.Errorf("the message echoes a redacted argument: %q", rec.Decision.Message)
			}
			if redactedAt("/env/0/API_KEY") && strings.Contains(rec.Decision.Message, "k-42-secret") {
				t.Errorf("the message echoes a redacted secret: %q", rec.Decision.Message)
			}
			if in["headers"].(map[string]any)["Authorization"] != "Bearer sk-1234567890abcdefghij" {
				t.Errorf("Record changed the caller's arguments")
			}
			if rec.Decision.Outcome != decision.Ask || rec.Decision.Code != decision.WriteNeedsConfirmation || rec.Decision.Revision != "rev1" || rec.Decision.SHA256 != d.Call.SHA256 {
				t.Errorf("recorded decision %+v", rec.Decision)
			}
		})
	}
}

// TestRecorderCaps: files are 0600 in a 0700 directory; past the age cap
// a record is removed, and the oldest go to keep the directory under its
// size cap; files the recorder did not name are never touched.
func TestRecorderCaps(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "rec")
	clk := &clock{now: time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)}
	r, err := rollout.OpenRecorder(rollout.RecorderOptions{Dir: dir, MaxBytes: 2000, MaxAge: time.Hour, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dir)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("dir mode %v, %v; want 0700", st.Mode(), err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	record := func(i int) {
		t.Helper()
		if err := r.Record(testCall(map[string]any{"path": "/workspace/" + strings.Repeat("x", 200), "n": json.Number(string(rune('0' + i)))}), redact.Of(askDecision("m"), nil), "rev", false, false); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 3; i++ {
		record(i)
		clk.now = clk.now.Add(time.Minute)
	}
	names, _ := records(t, dir)
	if len(names) != 4 { // 3 records and notes.txt
		t.Fatalf("files %v, want 3 records and notes.txt", names)
	}
	for _, n := range names {
		st, err := os.Stat(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		if n != "notes.txt" && st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", n, st.Mode().Perm())
		}
	}
	// The size cap: each record is ~600 bytes, 2000 hold three; the
	// fourth pushes the oldest out.
	record(3)
	names, recs := records(t, dir)
	var total int64
	for _, n := range names {
		if n == "notes.txt" {
			continue
		}
		st, _ := os.Stat(filepath.Join(dir, n))
		total += st.Size()
	}
	if len(recs) != 3 || total > 2000 {
		t.Fatalf("after the size cap: files %v (%d bytes of records), want 3 records within 2000 bytes and notes.txt", names, total)
	}
	if fmt.Sprint(recs[0].Args["n"]) != "1" {
		t.Errorf("the oldest left is n=%v, want 1 (n=0 removed first)", recs[0].Args["n"])
	}
	// The age cap: an hour later every record is past it.
	clk.now = clk.now.Add(time.Hour + time.Second)
	record(4)
	names, recs = records(t, dir)
	if len(names) != 2 || fmt.Sprint(recs[0].Args["n"]) != "4" {
		t.Errorf("after the age cap: files %v, want the new record and notes.txt", names)
	}
	// A record larger than the whole cap is refused, nothing removed.
	err = r.Record(testCall(map[string]any{"content": strings.Repeat("y", 3000)}), redact.Of(askDecision("m"), nil), "rev", false, false)
	if !errors.Is(err, rollout.ErrRecordTooLarge) {
		t.Errorf("a record above the cap: %v, want ErrRecordTooLarge", err)
	}
	// A new recorder applies the age cap on open.
	clk.now = clk.now.Add(2 * time.Hour)
	if _, err := rollout.OpenRecorder(rollout.RecorderOptions{Dir: dir, MaxAge: time.Hour, Now: clk.Now}); err != nil {
		t.Fatal(err)
	}
	if names, _ := records(t, dir); len(names) != 1 || names[0] != "notes.txt" {
		t.Errorf("after reopening past the age cap: %v, want notes.txt only", names)
	}
}

// TestRecorderRefusesAnOpenDir: a directory group or others may read is
// refused: recorded calls hold their arguments.
func TestRecorderRefusesAnOpenDir(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "rec")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	_, err := rollout.OpenRecorder(rollout.RecorderOptions{Dir: dir})
	var se *statedir.Error
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "open to group or others (mode 0750)") || se.Hint != "run: chmod 700 "+dir {
		t.Errorf("OpenRecorder on a 0750 dir: %v, want the mode error with the chmod hint", err)
	}
	if _, err := rollout.OpenRecorder(rollout.RecorderOptions{Dir: dir, Redact: []string{"/a~2"}}); err == nil || !strings.Contains(err.Error(), "bad JSON Pointer") {
		t.Errorf("a bad pointer: %v", err)
	}
}

// TestRecorderRedactsTheCorpus records every secret of the corpus (by
// key name, by structure, by shape: render's secretcorpus), and random
// nestings of it, with the default redaction: no recorded file holds one,
// and the record says where values were taken out.
func TestRecorderRedactsTheCorpus(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "rec")
	r, err := rollout.OpenRecorder(rollout.RecorderOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	cases := append(secretcorpus.Cases(), secretcorpus.Shapes("hunter2")...)
	rng := rand.New(rand.NewPCG(3, 3))
	for i := 0; i < 200; i++ {
		cases = append(cases, secretcorpus.Nest(rng, cases[rng.IntN(len(cases))], 1+rng.IntN(4)))
	}
	for _, c := range cases {
		b, _ := json.Marshal(c.Args)
		if err := r.Record(testCall(c.Args), redact.Of(askDecision("fs.write_file: "+string(b)), c.Args), "rev1", false, false); err != nil {
			t.Fatal(err)
		}
	}
	names, recs := records(t, dir)
	if len(recs) != len(cases) {
		t.Fatalf("%d records, want %d", len(recs), len(cases))
	}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			for _, leak := range c.Leaks {
				if strings.Contains(string(b), leak) {
					t.Fatalf("%s holds %q (a secret of %s):\n%s", n, leak, c.Name, b)
				}
			}
		}
	}
	for _, rec := range recs {
		if len(rec.Redacted) == 0 {
			t.Errorf("a record took secrets out and says nothing: %+v", rec)
		}
	}
}

// TestRecorderKeepsWhatAReplayJudges: a random-looking segment of a path
// (a temporary directory) stays in the record — a path rule judges it on
// replay — while a secret a shape names in the same string is replaced.
func TestRecorderKeepsWhatAReplayJudges(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "rec")
	r, err := rollout.OpenRecorder(rollout.RecorderOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	path := "/tmp/TestProxyRecordsCallsForReplay3400554693/001/workspace/a.txt"
	args := map[string]any{"path": path, "note": "key AKIAIOSFODNN7EXAMPLE in " + path}
	if err := r.Record(testCall(args), redact.Of(askDecision("m"), args), "rev", false, false); err != nil {
		t.Fatal(err)
	}
	names, _ := records(t, dir)
	b, err := os.ReadFile(filepath.Join(dir, names[0]))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"path": "`+path+`"`) || strings.Contains(string(b), "AKIAIOSFODNN7EXAMPLE") {
		t.Errorf("the record changed the path a replay judges, or kept a shaped secret:\n%s", b)
	}
}
