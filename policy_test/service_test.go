package policy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runServe runs `mcpx-policy serve --addr <free> --decision-log off args…`
// under the memory cap, with env added to a clean environment, and waits
// until it answers (startServe).
func runServe(t *testing.T, env []string, args ...string) *serveProcess {
	t.Helper()
	addr := freeLoopbackAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	cmd := underLimits(t, exec.CommandContext(ctx, filepath.Join(binDir, "mcpx-policy"), append([]string{"serve", "--addr", addr, "--decision-log", "off"}, args...)...))
	cmd.Env = append(cleanEnv(), env...)
	return startServe(t, cmd, addr)
}

// post sends a JSON body and returns the status, the headers and the body.
func (p *serveProcess) post(t *testing.T, path, body string, header ...string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, p.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// sameJSON compares two JSON texts as values.
func sameJSON(t *testing.T, got []byte, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Errorf("answer %q is not JSON: %v", got, err)
		return false
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want %q is not JSON: %v", want, err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	return bytes.Equal(gb, wb)
}

// The tool definitions of examples/catalog.json, as a gateway sends them
// in resource.properties.
const (
	azWriteFileProps = `{"annotations": {"readOnlyHint": false, "destructiveHint": true},
		"inputSchema": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}, "required": ["path", "content"]}}`
)

// TestAuthZEN sends the AuthZEN 1.0 spec's example requests, adapted to
// MCP tools (subject → principal, action tools/call, resource mcp_tool
// "<server>/<tool>", context.arguments), to a real `serve` with the example
// config and catalog, and checks the documented answers
// (docs/service.md#authzen).
func TestAuthZEN(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	p := runServe(t, nil, "--config", "../examples/mcpx-policy.yaml", "--catalog", "../examples/catalog.json", "--state-dir", state)

	cases := []struct {
		name, path, body string
		status           int
		want             string
	}{{
		// The spec's "Example Request", its subject with a department and
		// groups, the tool from the catalog.
		name: "single evaluation, allowed read",
		path: "/access/v1/evaluation",
		body: `{"subject": {"type": "user", "id": "alice@acmecorp.com", "properties": {"department": "Sales", "groups": ["engineering"]}},
		        "resource": {"type": "mcp_tool", "id": "fs/read_text_file"},
		        "action": {"name": "tools/call", "properties": {"method": "POST"}},
		        "context": {"time": "1985-10-26T01:22-07:00", "arguments": {"path": "/workspace/notes.md", "head": 20}}}`,
		status: 200, want: `{"decision": true}`,
	}, {
		name: "single evaluation, write asks",
		path: "/access/v1/evaluation",
		body: `{"subject": {"type": "user", "id": "alice@acmecorp.com"},
		        "resource": {"type": "mcp_tool", "id": "fs/write_file", "properties": ` + azWriteFileProps + `},
		        "action": {"name": "tools/call"},
		        "context": {"arguments": {"path": "/workspace/a.txt", "content": "x"}}}`,
		status: 200,
		want:   `{"decision": false, "context": {"outcome": "ask", "code": "WriteNeedsConfirmation", "reasons": ["fs.write_file is a write and writes to fs need confirmation (write mode ask)"]}}`,
	}, {
		// The offending value is secret-shaped: the reason names it
		// redacted.
		name: "single evaluation, rule violation, redacted",
		path: "/access/v1/evaluation",
		body: `{"subject": {"type": "user", "id": "alice@acmecorp.com"},
		        "resource": {"type": "mcp_tool", "id": "fs/write_file", "properties": ` + azWriteFileProps + `},
		        "action": {"name": "tools/call"},
		        "context": {"arguments": {"path": "/etc/AKIAIOSFODNN7EXAMPLE", "content": "x"}}}`,
		status: 200,
	}, {
		name: "single evaluation, hidden tool",
		path: "/access/v1/evaluation",
		body: `{"subject": {"type": "user", "id": "alice@acmecorp.com"}, "resource": {"type": "mcp_tool", "id": "fs/move_file"},
		        "action": {"name": "tools/call"}, "context": {"arguments": {"source": "/a", "destination": "/b"}}}`,
		status: 200,
		want:   `{"decision": false, "context": {"outcome": "deny", "code": "HiddenTool", "reasons": ["tool \"move_file\" on \"fs\" is hidden by its hiddenTools configuration"]}}`,
	}, {
		// The spec's boxcarring example with defaults: subject and context
		// at the top, the action a default the third evaluation overrides
		// (can_edit is not an MCP action: a deny, and the others stand).
		name: "evaluations with defaults",
		path: "/access/v1/evaluations",
		body: `{"subject": {"type": "user", "id": "alice@acmecorp.com"},
		        "context": {"time": "2024-05-31T15:22-07:00", "arguments": {"path": "/workspace/boxcarring.md"}},
		        "action": {"name": "tools/call"},
		        "evaluations": [
		          {"resource": {"type": "mcp_tool", "id": "fs/read_text_file"}},
		          {"resource": {"type": "mcp_tool", "id": "fs/list_directory"}},
		          {"action": {"name": "can_edit"}, "resource": {"type": "mcp_tool", "id": "fs/read_text_file"}}]}`,
		status: 200,
		want: `{"evaluations": [{"decision": true}, {"decision": true},
		        {"decision": false, "context": {"outcome": "deny", "code": "InvalidInput", "reasons": ["action \"can_edit\" is not decided here (want \"tools/call\")"]}}]}`,
	}, {
		// The spec's three semantics on three documents: here a read, a
		// hidden tool and a read.
		name: "execute_all",
		path: "/access/v1/evaluations",
		body: `{"subject": {"type": "user", "id": "alice@example.com"}, "action": {"name": "tools/call"},
		        "options": {"evaluations_semantic": "execute_all"},
		        "evaluations": [{"resource": {"type": "mcp_tool", "id": "fs/list_directory"}},
		                        {"resource": {"type": "mcp_tool", "id": "fs/move_file"}},
		                        {"resource": {"type": "mcp_tool", "id": "fs/list_directory"}}]}`,
		status: 200,
		want: `{"evaluations": [{"decision": true},
		        {"decision": false, "context": {"outcome": "deny", "code": "HiddenTool", "reasons": ["tool \"move_file\" on \"fs\" is hidden by its hiddenTools configuration"]}},
		        {"decision": true}]}`,
	}, {
		name: "deny_on_first_deny",
		path: "/access/v1/evaluations",
		body: `{"subject": {"type": "user", "id": "alice@example.com"}, "action": {"name": "tools/call"},
		        "options": {"evaluations_semantic": "deny_on_first_deny"},
		        "evaluations": [{"resource": {"type": "mcp_tool", "id": "fs/list_directory"}},
		                        {"resource": {"type": "mcp_tool", "id": "fs/move_file"}},
		                        {"resource": {"type": "mcp_tool", "id": "fs/list_directory"}}]}`,
		status: 200,
		want: `{"evaluations": [{"decision": true},
		        {"decision": false, "context": {"outcome": "deny", "code": "HiddenTool", "reasons": ["tool \"move_file\" on \"fs\" is hidden by its hiddenTools configuration"]}}]}`,
	}, {
		name: "permit_on_first_permit",
		path: "/access/v1/evaluations",
		body: `{"subject": {"type": "user", "id": "alice@example.com"}, "action": {"name": "tools/call"},
		        "options": {"evaluations_semantic": "permit_on_first_permit"},
		        "evaluations": [{"resource": {"type": "mcp_tool", "id": "fs/list_directory"}},
		                        {"resource": {"type": "mcp_tool", "id": "fs/move_file"}},
		                        {"resource": {"type": "mcp_tool", "id": "fs/list_directory"}}]}`,
		status: 200, want: `{"evaluations": [{"decision": true}]}`,
	}, {
		// Without an evaluations array, the batch endpoint is a single
		// evaluation.
		name: "evaluations without an array",
		path: "/access/v1/evaluations",
		body: `{"subject": {"type": "user", "id": "alice@acmecorp.com"}, "resource": {"type": "mcp_tool", "id": "fs/list_directory"},
		        "action": {"name": "tools/call"}, "context": {"arguments": {"path": "/workspace"}}}`,
		status: 200, want: `{"decision": true}`,
	}, {
		name: "an evaluation of a batch that lacks its resource",
		path: "/access/v1/evaluations",
		body: `{"subject": {"type": "user", "id": "alice@example.com"}, "action": {"name": "tools/call"},
		        "evaluations": [{"resource": {"type": "mcp_tool", "id": "fs/list_directory"}}, {}]}`,
		status: 200,
		want: `{"evaluations": [{"decision": true},
		        {"decision": false, "context": {"outcome": "deny", "code": "InvalidInput",
		         "reasons": ["evaluations[1]: resource missing (subject, action and resource are required)"],
		         "error": {"status": 400, "message": "evaluations[1]: resource missing (subject, action and resource are required)"}}}]}`,
	}, {
		name: "a tool neither in the catalog nor described",
		path: "/access/v1/evaluation",
		body: `{"subject": {"type": "user", "id": "alice@acmecorp.com"}, "resource": {"type": "mcp_tool", "id": "fs/format_disk"},
		        "action": {"name": "tools/call"}}`,
		status: 200,
	}, {
		name: "subject missing", path: "/access/v1/evaluation",
		body:   `{"resource": {"type": "mcp_tool", "id": "fs/list_directory"}, "action": {"name": "tools/call"}}`,
		status: 400,
	}, {
		// Strict decoding: a member the request does not have, or a case
		// variant of one, is refused whole.
		name: "unknown member", path: "/access/v1/evaluation",
		body: `{"subject": {"type": "user", "id": "a"}, "resource": {"type": "mcp_tool", "id": "fs/list_directory"},
		        "action": {"name": "tools/call"}, "evaluations": []}`,
		status: 400,
	}, {
		name: "case variant of a member", path: "/access/v1/evaluation",
		body: `{"Subject": {"type": "user", "id": "a"}, "resource": {"type": "mcp_tool", "id": "fs/list_directory"},
		        "action": {"name": "tools/call"}}`,
		status: 400,
	}, {
		name: "duplicate member", path: "/access/v1/evaluation",
		body: `{"subject": {"type": "user", "id": "a"}, "resource": {"type": "mcp_tool", "id": "fs/list_directory"},
		        "action": {"name": "can_read"}, "action": {"name": "tools/call"}}`,
		status: 400,
	}, {
		name: "unknown semantic", path: "/access/v1/evaluations",
		body:   `{"options": {"evaluations_semantic": "majority"}, "evaluations": []}`,
		status: 400,
	}}
	for _, c := range cases {
		status, hdr, body := p.post(t, c.path, c.body, "X-Request-ID", "bfe9eb29-ab87-4ca3-be83-a1d5d8305716")
		if status != c.status {
			t.Errorf("%s: status %d (%s); want %d", c.name, status, body, c.status)
			continue
		}
		if got := hdr.Get("X-Request-ID"); got != "bfe9eb29-ab87-4ca3-be83-a1d5d8305716" {
			t.Errorf("%s: X-Request-ID %q; want the request's echoed", c.name, got)
		}
		if c.want != "" && !sameJSON(t, body, c.want) {
			t.Errorf("%s:\n got %s\nwant %s", c.name, body, c.want)
		}
		switch c.name {
		case "single evaluation, rule violation, redacted":
			if strings.Contains(string(body), "AKIAIOSFODNN7EXAMPLE") || !strings.Contains(string(body), `"code":"ArgumentRuleViolation"`) ||
				!strings.Contains(string(body), `"decision":false`) {
				t.Errorf("%s: %s; want a false decision with ArgumentRuleViolation and the key redacted", c.name, body)
			}
		case "a tool neither in the catalog nor described":
			if !strings.Contains(string(body), `"code":"InvalidInput"`) || !strings.Contains(string(body), "not in the catalog") {
				t.Errorf("%s: %s; want an InvalidInput deny naming the catalog", c.name, body)
			}
		}
	}
	// The service's rules hold here too: JSON only, no foreign origin.
	status, _, _ := p.post(t, "/access/v1/evaluation", `{}`, "Content-Type", "text/plain")
	if status != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain body: status %d; want 415", status)
	}
	status, _, _ = p.post(t, "/access/v1/evaluation", `{}`, "Origin", "https://evil.example")
	if status != http.StatusForbidden {
		t.Errorf("foreign Origin: status %d; want 403", status)
	}
}
