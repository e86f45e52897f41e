package policy_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestClearTakesOnlyWhatTheOperatorSaw: an operator lists the unknown
// outcomes of fs and clears the ones listed — through the CLI, with the
// command the listing printed, and through serve, with the token GET
// /v1/writes returned — while another gateway on the same state dir loses
// one more write between the look and the clear. The clear refuses,
// clears nothing and shows what there is now (the newer entry included)
// with the command or token that clears that; run once the operator has
// seen it, it clears all of them. Without a gateway writing in between,
// the listed command clears exactly what it listed.
func TestClearTakesOnlyWhatTheOperatorSaw(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{"mcpx-policy.yaml": "version: 1\npolicy:\n  write: allow\nservers:\n  fs: {}\n"})
	cfg, state := filepath.Join(dir, "mcpx-policy.yaml"), filepath.Join(dir, "state")
	gateway := func() { loseWrite(t, cfg, state) } // another gateway loses a write to fs
	entries := func() int {
		t.Helper()
		code, out, stderr := cli(t, "writes", "--state-dir", state, "--format", "json")
		var st struct {
			Entries []json.RawMessage `json:"entries"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
			t.Fatalf("writes --format json: exit %d %s %s", code, out, stderr)
		}
		return len(st.Entries)
	}

	t.Run("cli", func(t *testing.T) {
		gateway()
		gateway()
		code, out, _ := cli(t, "writes", "--state-dir", state)
		seen := regexp.MustCompile(`\tseen=([0-9a-f]{16})\t`).FindStringSubmatch(out)
		if code != 0 || seen == nil || strings.Count(out, seen[0]) != 2 {
			t.Fatalf("writes: exit %d, no seen token on each line:\n%s", code, out)
		}
		gateway() // recorded after the operator looked
		code, out, stderr := cli(t, "writes", "clear", "fs", "--seen", seen[1], "--state-dir", state, "--reason", "checked the two")
		if code != 1 || !strings.Contains(stderr, "changed since they were listed: nothing was cleared") || strings.Count(out, "write_file") != 3 {
			t.Fatalf("a clear of the listed two with a third recorded since: exit %d\n%s%s", code, out, stderr)
		}
		if n := entries(); n != 3 {
			t.Fatalf("the refused clear left %d entries; want all 3", n)
		}
		again, ok := lineAfter(stderr, "mcpx-policy: hint: check the ones listed above, then: ")
		if !ok {
			t.Fatalf("no command for what there is now:\n%s", stderr)
		}
		// the printed command ends in a --reason placeholder: the operator
		// writes what they checked instead
		again = strings.TrimSuffix(again, " --reason '<what you found on the server>'")
		code, out, stderr = cliIn(t, t.TempDir(), append(strings.Fields(again)[1:], "--reason", "checked the three")...)
		if code != 0 || !strings.Contains(out, "3 write(s) cleared") || entries() != 0 {
			t.Fatalf("the clear of what was shown: exit %d\n%s%s", code, out, stderr)
		}
	})

	t.Run("serve", func(t *testing.T) {
		tok := filepath.Join(dir, "token")
		if err := os.WriteFile(tok, []byte(token32+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		srv := runServe(t, nil, "--config", cfg, "--state-dir", state, "--token-file", tok)
		list := func() (int, string) {
			t.Helper()
			resp, err := http.Get(srv.base + "/v1/writes")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var w struct {
				Entries []json.RawMessage `json:"entries"`
				Seen    map[string]string `json:"seen"`
			}
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || json.Unmarshal(b, &w) != nil {
				t.Fatalf("GET /v1/writes: %d %s", resp.StatusCode, b)
			}
			return len(w.Entries), w.Seen["fs"]
		}
		clear := func(seen string) (int, map[string]any) {
			t.Helper()
			status, _, b := srv.post(t, "/v1/writes/clear", `{"server": "fs", "seen": "`+seen+`", "reason": "checked"}`, "Authorization", "Bearer "+token32)
			var body map[string]any
			if err := json.Unmarshal(b, &body); err != nil {
				t.Fatalf("clear: %d %s", status, b)
			}
			return status, body
		}
		gateway()
		n, seen := list()
		if n != 1 || seen == "" {
			t.Fatalf("GET /v1/writes: %d entries, seen %q", n, seen)
		}
		gateway()
		status, body := clear(seen)
		if es, _ := body["entries"].([]any); status != 409 || body["code"] != "WritesChanged" || len(es) != 2 || body["seen"] == seen {
			t.Fatalf("clear of the listed one with another recorded since = %d %v; want 409 with both entries and their token", status, body)
		}
		if n, _ := list(); n != 2 {
			t.Fatalf("the refused clear left %d entries; want 2", n)
		}
		status, body = clear(body["seen"].(string))
		if cl, _ := body["cleared"].([]any); status != 200 || len(cl) != 2 {
			t.Fatalf("clear of what was shown = %d %v", status, body)
		}
		if n, _ := list(); n != 0 {
			t.Fatalf("%d entries left", n)
		}
	})
}

const token32 = "0123456789abcdef0123456789abcdef"
