package policy_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeTrustBoundaries runs the built binary's serve with a config
// whose write mode is deny and an environment that loosens it, and checks
// what its HTTP caller and its operator see: the loosening is printed at
// start with both values and both origins; a body's "mode" cannot loosen
// a server's deny; a cross-site request (a foreign Origin) and a POST not
// declared JSON are refused before anything is decided.
func TestServeTrustBoundaries(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{
		"mcpx-policy.yaml": "version: 1\npolicy:\n  write: deny\nservers:\n  fs:\n    writePolicy: deny\n",
	})
	logPath := filepath.Join(dir, "decisions.log")
	addr := freeLoopbackAddr(t)
	cmd := exec.Command(filepath.Join(binDir, "mcpx-policy"), "serve", "--config", filepath.Join(dir, "mcpx-policy.yaml"),
		"--state-dir", filepath.Join(dir, "state"), "--addr", addr, "--decision-log", logPath)
	cmd.Env = append(cleanEnv(), "MCPX_POLICY_POLICY_WRITE=allow")
	srv := startServe(t, cmd, addr)

	if log := srv.stderr.String(); !strings.Contains(log, "policy.write: loosened from deny (") ||
		!strings.Contains(log, "mcpx-policy.yaml:3") || !strings.Contains(log, "MCPX_POLICY_POLICY_WRITE") {
		t.Errorf("serve's start does not name the loosened setting, both values and both origins:\n%s", log)
	}

	post := func(body, contentType, origin string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, srv.base+"/v1/decide", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", contentType)
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	write := `{"server":"fs","tool":{"name":"write_file","annotations":{"readOnlyHint":false}},"args":{"path":"/w/a"},"mode":"allow"}`

	code, body := post(write, "application/json", "")
	var d struct {
		Outcome string `json:"outcome"`
		Reasons []struct {
			Code string `json:"code"`
		} `json:"reasons"`
	}
	if err := json.Unmarshal([]byte(body), &d); err != nil || code != http.StatusOK || d.Outcome != "deny" || len(d.Reasons) == 0 || d.Reasons[0].Code != "WriteDenied" {
		t.Errorf(`"mode":"allow" under writePolicy: deny: %d %s; want a WriteDenied deny`, code, body)
	}

	for _, c := range []struct {
		name, contentType, origin string
		status                    int
	}{
		{"a cross-site form post", "text/plain", "http://evil.example", http.StatusForbidden},
		{"a cross-site JSON post", "application/json", "http://evil.example", http.StatusForbidden},
		{"an opaque origin", "application/json", "null", http.StatusForbidden},
		{"a body not declared JSON", "text/plain", "", http.StatusUnsupportedMediaType},
	} {
		if code, body := post(write, c.contentType, c.origin); code != c.status {
			t.Errorf("%s: %d %s; want %d", c.name, code, body, c.status)
		}
	}
	logged, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(logged), "\n"); n != 1 {
		t.Errorf("the decision log holds %d decisions; want only the one JSON request's:\n%s", n, logged)
	}
}
