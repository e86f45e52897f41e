package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/server"
)

// fuzzConfig: writes denied, secret* tools hidden; reads allowed.
const fuzzConfig = `version: 1
policy: {write: deny, unknownArgs: reject}
pool: {hiddenTools: ["secret*"]}
servers:
  fs: {}
`

// fuzzRoutes are what an input's first byte picks: method, path, and
// whether the request carries the operator token.
var fuzzRoutes = []struct {
	method, path string
	token        bool
}{
	{"POST", "/v1/decide", false},
	{"POST", "/v1/writes/clear", false},
	{"POST", server.EvaluationPath, false},
	{"POST", server.EvaluationsPath, false},
	{"POST", "/v1/approvals/x", false},
	{"POST", "/v1/pins/accept", false},
	{"GET", "/v1/writes", false},
	{"GET", "/v1/approvals", false},
}

// FuzzServeBodies sends serve's handler request bodies of every route and
// holds what an HTTP caller may never achieve: a panic, an answer that is
// not JSON, an allow for a write or a hidden tool, or a change to the
// ledger without the operator token (an unknown outcome is recorded
// before, and must still be there after). Seeds run in `make test`; fuzz
// with
//
//	go test ./internal/server/ -run '^$' -fuzz FuzzServeBodies -parallel 1
func FuzzServeBodies(f *testing.F) {
	dir := f.TempDir()
	conf := filepath.Join(dir, "mcpx-policy.yaml")
	if err := os.WriteFile(conf, []byte(fuzzConfig), 0o644); err != nil {
		f.Fatal(err)
	}
	eng, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{ConfigPaths: []string{conf}, StateDir: filepath.Join(dir, "state"), Env: []string{}})
	if err != nil {
		f.Fatal(err)
	}
	lost := decision.Call{Surface: mcpxpolicy.SurfaceDaemon, Server: "fs", Tool: decision.Tool{Name: "write_file"}, Args: map[string]any{"n": 1.0}}
	disp, err := eng.Writes().Begin(lost)
	if err != nil {
		f.Fatal(err)
	}
	disp.Sent()
	disp.Unknown("fuzz: recorded before")
	h := server.New(eng, server.Options{Token: token, MaxBody: 64 << 10})
	for _, seed := range []string{
		"\x00" + `{"server":"fs","tool":{"name":"read_file","annotations":{"readOnlyHint":true},"inputSchema":{"type":"object"}},"args":{}}`,
		"\x00" + `{"server":"fs","tool":{"name":"write_file","annotations":{"readOnlyHint":false}},"args":{"path":"/x"}}`,
		"\x00" + `{"server":"fs","tool":{"name":"secret_read","annotations":{"readOnlyHint":true}},"args":{}}`,
		"\x00" + `{"server":"fs","tool":{"name":"read_file","annotations":{"readOnlyHint":true}},"args":{},"mode":"allow"}`,
		"\x00" + `{"server":"fs","Tool":{"name":"write_file"},"tool":{"name":"read_file","annotations":{"readOnlyHint":true}},"args":{}}`,
		"\x01" + `{"server":"fs"}`,
		"\x01" + `{"server":"fs","SERVER":"fs"}`,
		"\x02" + `{"subject":{"type":"user","id":"a"},"action":{"name":"tools/call"},"resource":{"type":"mcp_tool","id":"fs/read_file","properties":{"annotations":{"readOnlyHint":true}}}}`,
		"\x03" + `{"evaluations":[{"subject":{"type":"user","id":"a"},"action":{"name":"tools/call"},"resource":{"type":"mcp_tool","id":"fs/write_file"}}]}`,
		"\x04" + `{"approve":true}`,
		"\x05" + `{"server":"fs","tool":"write_file"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		route := fuzzRoutes[int(data[0])%len(fuzzRoutes)]
		body := data[1:]
		req := httptest.NewRequest(route.method, route.path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if route.token {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		out := rec.Body.Bytes()
		if !json.Valid(out) {
			t.Fatalf("%s %s answered %d with a body that is not JSON: %q", route.method, route.path, rec.Code, out)
		}
		if route.path == "/v1/decide" && rec.Code == http.StatusOK {
			var d struct {
				Outcome string `json:"outcome"`
				Write   bool   `json:"write"`
				Call    struct {
					Tool string `json:"tool"`
				} `json:"call"`
			}
			if err := json.Unmarshal(out, &d); err != nil {
				t.Fatal(err)
			}
			if d.Outcome == "allow" && (d.Write || strings.HasPrefix(d.Call.Tool, "secret")) {
				t.Fatalf("allowed a write or a hidden tool: %s\nbody: %q", out, body)
			}
		}
		ws, err := unknownWrites(eng)
		if err != nil || len(ws) != 1 {
			t.Fatalf("the ledger changed without the operator's token: %+v, %v\nroute %s, body %q", ws, err, route.path, body)
		}
	})
}
