package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
)

// askDoc is a write to a server the fixture's config asks for.
const askDoc = `{"server":"notes","tool":` + writeFile + `,"args":{"path":"/n.md","content":"x"}}`

// TestAnsweringNeedsTheToken: without --token-file answering is disabled
// (403), with it a missing or wrong token is a 401; listing needs none.
func TestAnsweringNeedsTheToken(t *testing.T) {
	t.Parallel()
	for _, tok := range []string{"", token} {
		f := newFixture(t, tok)
		status, body := f.do(t, "POST", "/v1/decide", "", askDoc)
		approval, _ := body["approval"].(map[string]any)
		if status != 200 || body["outcome"] != "ask" || approval == nil {
			t.Fatalf("an ask = %d %v; want 200 with an approval request", status, body)
		}
		id, sum := approval["id"].(string), approval["sha256"].(string)
		if status, body := f.do(t, "GET", "/v1/approvals/"+id, "", ""); status != 200 || body["state"] != "pending" {
			t.Fatalf("GET one = %d %v", status, body)
		}
		answer := `{"sha256":"` + sum + `"}`
		if tok == "" {
			if status, body := f.do(t, "POST", "/v1/approvals/"+id, "Bearer ", answer); status != 403 || body["code"] != "ApproveDisabled" {
				t.Fatalf("answer without a configured token = %d %v; want 403 ApproveDisabled", status, body)
			}
			continue
		}
		for _, auth := range []string{"", "Bearer nope-nope-nope-nope", "Basic " + token, token} {
			if status, body := f.do(t, "POST", "/v1/approvals/"+id, auth, answer); status != 401 || body["code"] != "Unauthorized" {
				t.Errorf("answer with %q = %d %v; want 401", auth, status, body)
			}
		}
		if status, body := f.do(t, "POST", "/v1/approvals/"+id, "Bearer "+token, answer); status != 200 || body["state"] != "approved" {
			t.Fatalf("approve = %d %v", status, body)
		}
	}
}

// TestApprovalRouteErrors: each refusal of the approval routes has its
// status and code.
func TestApprovalRouteErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t, token)
	auth := "Bearer " + token
	_, body := f.do(t, "POST", "/v1/decide", "", askDoc)
	approval, ok := body["approval"].(map[string]any)
	if !ok {
		t.Fatalf("an ask without an approval request: %v", body)
	}
	id, sum := approval["id"].(string), approval["sha256"].(string)
	for _, tc := range []struct {
		method, path, body string
		status             int
		code               string
	}{
		{"POST", "/v1/approvals/" + id, `{}`, 400, "InvalidInput"},
		{"POST", "/v1/approvals/" + id, `{"sha256":"` + sum + `","extra":1}`, 400, "InvalidInput"},
		{"POST", "/v1/approvals/" + id, `{"sha256":"` + sum + `"} {}`, 400, "InvalidInput"},
		// Read as strictly as every operator route: a case variant or a
		// duplicate key would answer one thing here and another elsewhere.
		{"POST", "/v1/approvals/" + id, `{"sha256":"` + sum + `","SHA256":"` + strings.Repeat("0", 64) + `"}`, 400, "InvalidInput"},
		{"POST", "/v1/approvals/" + id, `{"decline":false,"decline":true}`, 400, "InvalidInput"},
		{"POST", "/v1/approvals/" + id, `{"sha256":"` + strings.Repeat("0", 64) + `"}`, 409, "ApprovalMismatch"},
		{"POST", "/v1/approvals/0123456789abcdef0123456789abcdef", `{"sha256":"` + sum + `"}`, 404, "NotFound"},
		{"GET", "/v1/approvals/0123456789abcdef0123456789abcdef", ``, 404, "NotFound"},
		{"DELETE", "/v1/approvals/" + id, ``, 405, "MethodNotAllowed"},
		{"POST", "/v1/approvals", `{}`, 405, "MethodNotAllowed"},
		{"POST", "/v1/approvals/" + id, `{"decline":true}`, 200, ""},
		{"POST", "/v1/approvals/" + id, `{"sha256":"` + sum + `"}`, 409, "ApprovalDeclined"},
	} {
		status, body := f.do(t, tc.method, tc.path, auth, tc.body)
		if status != tc.status || (tc.code != "" && body["code"] != tc.code) {
			t.Errorf("%s %s %s = %d %v; want %d %s", tc.method, tc.path, tc.body, status, body, tc.status, tc.code)
		}
	}
	// A decide body with an unknown field next to "approval" is still refused.
	if status, body := f.do(t, "POST", "/v1/decide", "", `{"server":"notes","tool":`+writeFile+`,"args":{},"approval":"`+id+`","aproval":"x"}`); status != 400 || body["outcome"] != "deny" {
		t.Errorf("decide with a typo = %d %v", status, body)
	}
}

// askAs is a write to notes (an ask) of path, for principal (none when "").
func askAs(path, principal string) string {
	doc := `{"server":"notes","tool":` + writeFile + `,"args":{"path":"` + path + `","content":"x"}`
	if principal != "" {
		doc += `,"principal":{"id":"` + principal + `"}`
	}
	return doc + "}"
}

// TestFloodFromOneCallerStarvesNoOne: one HTTP caller opening hundreds of
// asks holds at most its own quota of approval requests — each ask past
// it is a deny that says why, never an allow — and rotating the principal
// it names gets it at most the daemon surface's half of the store; then
// an ask of another surface sharing the state dir (a proxy session) is
// opened, approved and used, and another principal's ask over HTTP is
// opened too. GET /v1/approvals shows a caller without the token only its
// own requests, for the principal it names; the token shows all.
func TestFloodFromOneCallerStarvesNoOne(t *testing.T) {
	t.Parallel()
	f := newFixture(t, token)
	asks, denies := 0, 0
	for i := range 40 {
		status, body := f.do(t, "POST", "/v1/decide", "", askAs(fmt.Sprintf("/flood/%d.md", i), "mallory"))
		switch {
		case status == 200 && body["outcome"] == "ask" && body["approval"] != nil:
			asks++
		case status == 200 && body["outcome"] == "deny" && body["approval"] == nil && firstCode(body) == "ConfirmationUnavailable" &&
			strings.Contains(firstMessage(body), `no approval request could be made: too many approval requests are waiting: 16 from this caller (daemon:127.0.0.1, principal "mallory")`):
			denies++
		default:
			t.Fatalf("flood ask %d = %d %v", i, status, body)
		}
	}
	if asks != 16 || denies != 24 {
		t.Fatalf("one caller's flood: %d asks held, %d denied; want 16 and 24", asks, denies)
	}
	// The same ask again is the request it has, not a refusal.
	if status, body := f.do(t, "POST", "/v1/decide", "", askAs("/flood/0.md", "mallory")); status != 200 || body["approval"] == nil {
		t.Fatalf("an ask identical to a held one = %d %v", status, body)
	}
	// Rotating principals: at most the surface's 128 in all.
	for i := range 130 {
		f.do(t, "POST", "/v1/decide", "", askAs(fmt.Sprintf("/rotate/%d.md", i), fmt.Sprint("p", i)))
	}
	all := f.approvals(t, "/v1/approvals", "Bearer "+token)
	if len(all) != 128 {
		t.Fatalf("%d requests live after the floods, want the daemon surface's 128", len(all))
	}

	// Another surface on the same state dir: a proxy session's ask.
	proxy, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{ConfigPaths: []string{f.conf}, StateDir: filepath.Join(f.dir, "state"), Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	var tool decision.Tool
	if err := json.Unmarshal([]byte(writeFile), &tool); err != nil {
		t.Fatal(err)
	}
	call := decision.Call{Surface: mcpxpolicy.SurfaceMCP, Caller: "mcp:session-1", Server: "notes", Tool: tool, Args: map[string]any{"path": "/n.md", "content": "x"}}
	d, _ := proxy.Decide(context.Background(), call)
	req, err := proxy.RequestApproval(call, d)
	if err != nil {
		t.Fatalf("the proxy's ask after the flood: %v", err)
	}
	if _, err := f.eng.Approvals().Approve(req.ID, req.SHA256); err != nil {
		t.Fatal(err)
	}
	if d, err := proxy.DecideApproved(context.Background(), call, req.ID); err != nil || d.Outcome != decision.Allow {
		t.Fatalf("the proxy's approved call = %s, %v; want an allow", d.Outcome, err)
	}

	// The listing: a caller sees its own.
	if got := f.approvals(t, "/v1/approvals", ""); len(got) != 0 {
		t.Errorf("GET /v1/approvals without a principal lists %d of others' requests", len(got))
	}
	mine := f.approvals(t, "/v1/approvals?principal=mallory", "")
	if len(mine) != 16 {
		t.Errorf("mallory lists %d requests, want her 16", len(mine))
	}
	for _, r := range mine {
		if r["caller"] != "daemon:127.0.0.1" || r["principal"] != "mallory" {
			t.Errorf("mallory lists %v", r)
		}
	}
	if got := f.approvals(t, "/v1/approvals?principal=mallory", "Bearer wrong"); len(got) != 16 {
		t.Errorf("a wrong token lists %d, want the caller's own 16", len(got))
	}
}

// approvals is GET path's list.
func (f *fixture) approvals(t *testing.T, path, auth string) []map[string]any {
	t.Helper()
	status, body := f.do(t, "GET", path, auth, "")
	list, ok := body["approvals"].([]any)
	if status != 200 || !ok {
		t.Fatalf("GET %s = %d %v", path, status, body)
	}
	out := make([]map[string]any, len(list))
	for i, r := range list {
		out[i] = r.(map[string]any)
	}
	return out
}

func firstCode(body map[string]any) string {
	rs, _ := body["reasons"].([]any)
	if len(rs) == 0 {
		return ""
	}
	code, _ := rs[0].(map[string]any)["code"].(string)
	return code
}

func firstMessage(body map[string]any) string {
	rs, _ := body["reasons"].([]any)
	if len(rs) == 0 {
		return ""
	}
	msg, _ := rs[0].(map[string]any)["message"].(string)
	return msg
}
