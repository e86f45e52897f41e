package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestCrossSiteRequestsRefused: a page in a browser can send a POST with
// Content-Type text/plain (or a form) to any origin without a CORS
// preflight. serve refuses such a body (415) and any request carrying an
// Origin that is not the service's own (403), before a decision is made.
func TestCrossSiteRequestsRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t, token)
	u, err := url.Parse(f.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	own := "http://" + u.Host
	// A read the policy allows: whatever is refused here is refused by the
	// service, not by the policy.
	read := `{"server":"fs","tool":{"name":"read_file","annotations":{"readOnlyHint":true}},"args":{}}`
	cases := []struct {
		name, method, path, body string
		header                   map[string]string
		status                   int
		code                     string
	}{
		{"text/plain from a foreign page", "POST", "/v1/decide", read,
			map[string]string{"Content-Type": "text/plain", "Origin": "https://evil.example"}, 403, "Forbidden"},
		{"JSON from a foreign page", "POST", "/v1/decide", read,
			map[string]string{"Content-Type": "application/json", "Origin": "https://evil.example"}, 403, "Forbidden"},
		{"opaque origin (sandboxed frame, file://)", "POST", "/v1/decide", read,
			map[string]string{"Content-Type": "application/json", "Origin": "null"}, 403, "Forbidden"},
		{"same host, other port", "POST", "/v1/decide", read,
			map[string]string{"Content-Type": "application/json", "Origin": "http://127.0.0.1:1"}, 403, "Forbidden"},
		{"Sec-Fetch-Site cross-site without Origin", "POST", "/v1/decide", read,
			map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"}, 403, "Forbidden"},
		{"a foreign page reading the ledger", "GET", "/v1/writes", "",
			map[string]string{"Origin": "https://evil.example"}, 403, "Forbidden"},
		{"a foreign page clearing", "POST", "/v1/writes/clear", `{"server":"fs"}`,
			map[string]string{"Content-Type": "application/json", "Origin": "https://evil.example", "Authorization": "Bearer " + token}, 403, "Forbidden"},
		{"text/plain without Origin", "POST", "/v1/decide", read,
			map[string]string{"Content-Type": "text/plain"}, 415, "UnsupportedMediaType"},
		{"a form", "POST", "/v1/decide", read,
			map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, "UnsupportedMediaType"},
		{"no Content-Type", "POST", "/v1/decide", read, nil, 415, "UnsupportedMediaType"},
		{"JSON-ish but not JSON", "POST", "/v1/decide", read,
			map[string]string{"Content-Type": "application/jsonp"}, 415, "UnsupportedMediaType"},
		{"clear with text/plain", "POST", "/v1/writes/clear", `{"server":"fs"}`,
			map[string]string{"Content-Type": "text/plain", "Authorization": "Bearer " + token}, 415, "UnsupportedMediaType"},
		// What passes.
		{"JSON with a charset", "POST", "/v1/decide", read,
			map[string]string{"Content-Type": "application/json; charset=utf-8"}, 200, ""},
		{"JSON from the service's own origin", "POST", "/v1/decide", read,
			map[string]string{"Content-Type": "Application/JSON", "Origin": own, "Sec-Fetch-Site": "same-origin"}, 200, ""},
		{"GET without Origin", "GET", "/v1/writes", "", nil, 200, ""},
	}
	decisions := 0
	for _, c := range cases {
		req, err := http.NewRequest(c.method, f.srv.URL+c.path, strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range c.header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var body map[string]any
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Errorf("%s: body %q is not JSON: %v", c.name, raw, err)
			continue
		}
		if resp.StatusCode != c.status {
			t.Errorf("%s: status %d (%v); want %d", c.name, resp.StatusCode, body, c.status)
			continue
		}
		if c.code != "" {
			if body["code"] != c.code || body["error"] == "" || body["outcome"] != nil {
				t.Errorf("%s: body %v; want the error body with code %s", c.name, body, c.code)
			}
		} else if c.path == "/v1/decide" {
			decisions++
			if body["outcome"] != "allow" {
				t.Errorf("%s: outcome %v; want allow", c.name, body["outcome"])
			}
		}
	}
	// A refused request is never decided: only the accepted ones are in
	// the decision log.
	if got := strings.Count(f.log.String(), "\n"); got != decisions {
		t.Errorf("decision log has %d lines; want %d (refused requests are not decided)", got, decisions)
	}
}
