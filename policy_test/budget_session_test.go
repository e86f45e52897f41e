package policy_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/ledger/pgledger/pgtest"
)

// callerSession is fsBudgetCall as caller sends it.
func callerSession(caller, session, path string) decision.Call {
	c := fsBudgetCall(session, path)
	c.Caller = caller
	return c
}

// sessionsApart: caller a spends the budget per session of its session
// s1 (two writes), and caller b, naming the same session, is unaffected:
// its writes pass and are counted apart; a's third is the deny.
func sessionsApart(t *testing.T, eng *mcpxpolicy.Engine) {
	t.Helper()
	for _, p := range []string{"/a1", "/a2"} {
		if err := dispatch(t, eng, callerSession("daemon:a", "s1", p)); err != nil {
			t.Fatalf("a's write %s: %v", p, err)
		}
	}
	if d := decide(t, eng, callerSession("daemon:a", "s1", "/a3")); d.Outcome != decision.Deny || d.First().Code != decision.WriteBudgetExceeded {
		t.Fatalf("a's third write in s1: %+v", d)
	}
	for _, p := range []string{"/b1", "/b2"} {
		if d := decide(t, eng, callerSession("daemon:b", "s1", p)); d.Outcome != decision.Allow {
			t.Fatalf("b's write %s in its own s1, after a spent a's: %+v", p, d)
		}
		if err := dispatch(t, eng, callerSession("daemon:b", "s1", p)); err != nil {
			t.Fatalf("b's dispatch %s: %v", p, err)
		}
	}
	if d := decide(t, eng, callerSession("daemon:b", "s1", "/b3")); d.Outcome != decision.Deny || d.First().Code != decision.WriteBudgetExceeded {
		t.Fatalf("b's third write in s1: %+v", d)
	}
}

// TestBudgetPerSessionIsTheCallers: a budget per session counts a
// caller's session, not a name any caller may send. Through the SDK on the
// file store and on PostgreSQL, and through serve (two HTTP callers, from
// 127.0.0.1 and 127.0.0.2, naming the same session), one caller spending
// its session's budget leaves the other's whole. Records an older build
// wrote under the session's name alone still count, for every caller
// naming it: an upgrade does not reset a budget.
func TestBudgetPerSessionIsTheCallers(t *testing.T) {
	t.Parallel()
	t.Run("SDK file store", func(t *testing.T) {
		t.Parallel()
		eng, _ := newEngine(t, budgetSDKConfig)
		defer eng.Close()
		sessionsApart(t, eng)
	})
	t.Run("SDK PostgreSQL", func(t *testing.T) {
		t.Parallel()
		dsn := pgtest.DSN(t)
		dir := writeFiles(t, map[string]string{"mcpx-policy.yaml": budgetSDKConfig + "ledger:\n  store: postgres\n  dsnEnv: FLEET_DSN\n"})
		eng, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{ConfigPaths: []string{filepath.Join(dir, "mcpx-policy.yaml")},
			Env: []string{"FLEET_DSN=" + dsn}, StateDir: filepath.Join(dir, "state")})
		if err != nil {
			t.Fatal(err)
		}
		defer eng.Close()
		sessionsApart(t, eng)
	})
	t.Run("records of an older build", func(t *testing.T) {
		t.Parallel()
		eng, dir := newEngine(t, budgetSDKConfig)
		defer eng.Close()
		if err := dispatch(t, eng, callerSession("daemon:c", "other", "/c")); err != nil { // makes the ledger
			t.Fatal(err)
		}
		now := time.Now().UTC().Format(time.RFC3339Nano)
		old := func(id string) string {
			return `{"id": "` + id + `", "server": "fs", "tool": "write_file", "destructive": true, "session": "session:s1", "time": "` + now + `"}`
		}
		doc := `{"version": 1, "entries": [], "cleared": [], "in_flight": [], "dispatched": [` + old("o1") + `, ` + old("o2") + `]}`
		if err := os.WriteFile(filepath.Join(dir, "state", "ledger.json"), []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, caller := range []string{"daemon:a", "daemon:b", ""} {
			if d := decide(t, eng, callerSession(caller, "s1", "/x")); d.Outcome != decision.Deny || d.First().Code != decision.WriteBudgetExceeded {
				t.Errorf("caller %q naming s1 with two records of an older build: %+v", caller, d)
			}
		}
		if d := decide(t, eng, callerSession("daemon:a", "s2", "/x")); d.Outcome != decision.Allow {
			t.Errorf("another session: %+v", d)
		}
	})
	t.Run("serve", func(t *testing.T) {
		t.Parallel()
		dir := writeFiles(t, map[string]string{"mcpx-policy.yaml": budgetSDKConfig})
		p := runServe(t, nil, "--config", filepath.Join(dir, "mcpx-policy.yaml"), "--state-dir", filepath.Join(dir, "state"))
		from := func(ip string) *http.Client {
			d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
			return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
		}
		post := func(c *http.Client, path string) string {
			t.Helper()
			body := `{"server": "fs", "session": "s1", "tool": {"name": "write_file", "annotations": {"readOnlyHint": false}}, "args": {"path": "` + path + `"}}`
			resp, err := c.Post(p.base+"/v1/decide", "application/json", strings.NewReader(body))
			var op *net.OpError
			if errors.As(err, &op) {
				t.Skipf("no second loopback address to send from: %v", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			var a struct {
				Outcome string
				Reasons []struct{ Code string }
			}
			if err := json.Unmarshal(b, &a); err != nil || resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			if a.Outcome == "allow" {
				return "allow"
			}
			return a.Reasons[0].Code
		}
		a, b := from("127.0.0.1"), from("127.0.0.2")
		for i, want := range []string{"allow", "allow", "WriteBudgetExceeded"} {
			if got := post(a, "/a"+string(rune('1'+i))); got != want {
				t.Fatalf("127.0.0.1's write %d in s1: %s, want %s", i+1, got, want)
			}
		}
		for i, want := range []string{"allow", "allow", "WriteBudgetExceeded"} {
			if got := post(b, "/b"+string(rune('1'+i))); got != want {
				t.Fatalf("127.0.0.2's write %d in its s1, after 127.0.0.1 spent its own: %s, want %s", i+1, got, want)
			}
		}
	})
}
