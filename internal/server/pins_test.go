package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/internal/server"
)

// TestPinRoutes: over HTTP, a changed definition is refused by POST
// /v1/decide; GET /v1/pins lists it with the hash it changed to; POST
// /v1/pins/accept needs the token, accepts only the definition it names,
// and then the call passes.
func TestPinRoutes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	conf := filepath.Join(dir, "mcpx-policy.yaml")
	if err := os.WriteFile(conf, []byte("version: 1\nservers:\n  fs:\n    writePolicy: allow\n    pinTools: deny\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	eng, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{ConfigPaths: []string{conf}, StateDir: filepath.Join(dir, "state"), Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(server.New(eng, server.Options{Token: token}))
	t.Cleanup(srv.Close)
	f := &fixture{srv: srv}
	changed := strings.Replace(writeFile, `"name":"write_file"`, `"name":"write_file","description":"now also uploads the file"`, 1)
	decideCall := func(tool string) map[string]any {
		status, body := f.do(t, "POST", "/v1/decide", "", `{"server":"fs","tool":`+tool+`,"args":{"path":"/a"}}`)
		if status != http.StatusOK {
			t.Fatalf("decide: %d %v", status, body)
		}
		return body
	}
	if d := decideCall(writeFile); d["outcome"] != "allow" {
		t.Fatalf("first sight: %v", d)
	}
	d := decideCall(changed)
	reason := d["reasons"].([]any)[0].(map[string]any)
	if d["outcome"] != "deny" || reason["code"] != "ToolDefinitionChanged" || d["rendered"].(map[string]any)["status"] != float64(409) {
		t.Fatalf("changed: %v", d)
	}
	sum := reason["details"].(map[string]any)["sha256"].(string)

	status, list := f.do(t, "GET", "/v1/pins", "", "")
	pins, _ := list["pins"].([]any)
	if status != http.StatusOK || len(pins) != 1 {
		t.Fatalf("GET /v1/pins: %d %v", status, list)
	}
	if p := pins[0].(map[string]any); p["tool"] != "write_file" || p["pending"].(map[string]any)["sha256"] != sum {
		t.Fatalf("GET /v1/pins: %v", p)
	}

	body := `{"server":"fs","tool":"write_file","sha256":"` + sum + `"}`
	for _, c := range []struct {
		name, auth, body string
		status           int
		code             string
	}{
		{"no token", "", body, http.StatusUnauthorized, "Unauthorized"},
		{"wrong token", "Bearer not-the-token-at-all", body, http.StatusUnauthorized, "Unauthorized"},
		{"another hash", "Bearer " + token, `{"server":"fs","tool":"write_file","sha256":"` + strings.Repeat("0", 64) + `"}`, http.StatusConflict, "Mismatch"},
		{"unknown tool", "Bearer " + token, `{"server":"fs","tool":"read_file"}`, http.StatusNotFound, "NotFound"},
		{"case variant", "Bearer " + token, `{"server":"fs","Tool":"write_file"}`, http.StatusBadRequest, "InvalidInput"},
	} {
		if status, out := f.do(t, "POST", "/v1/pins/accept", c.auth, c.body); status != c.status || out["code"] != c.code {
			t.Errorf("%s: %d %v; want %d %s", c.name, status, out, c.status, c.code)
		}
	}
	if d := decideCall(changed); d["outcome"] != "deny" {
		t.Fatalf("a refused accept accepted: %v", d)
	}
	status, out := f.do(t, "POST", "/v1/pins/accept", "Bearer "+token, body)
	if status != http.StatusOK || out["pin"].(map[string]any)["pinned"].(map[string]any)["sha256"] != sum {
		t.Fatalf("accept: %d %v", status, out)
	}
	if d := decideCall(changed); d["outcome"] != "allow" {
		t.Fatalf("after accept: %v", d)
	}

	// Without --token-file, accepting over HTTP is off.
	off := &fixture{srv: httptest.NewServer(server.New(eng, server.Options{}))}
	t.Cleanup(off.srv.Close)
	if status, out := off.do(t, "POST", "/v1/pins/accept", "Bearer "+token, body); status != http.StatusForbidden || out["code"] != "AcceptDisabled" {
		t.Fatalf("without a token: %d %v", status, out)
	}
}
