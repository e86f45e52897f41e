package server_test

import (
	"strings"
	"testing"
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
