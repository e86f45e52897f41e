package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpx/mcpx-policy/internal/proxy"
)

// statelessMeta is the _meta of an MCP 2026-07-28 request whose client
// shows forms.
const statelessMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}`

type rpcAnswer struct {
	status int
	ID     json.RawMessage `json:"id"`
	Result map[string]json.RawMessage
	Error  *struct {
		Code    int64
		Message string
		Data    json.RawMessage
	}
}

// postStateless sends one request without a session, with header the
// MCP-Protocol-Version ("" for none), and reads its answer: a JSON body,
// or the last event of a stream.
func (r *httpRig) postStateless(t *testing.T, header, body string) rpcAnswer {
	t.Helper()
	req, _ := http.NewRequest("POST", r.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if header != "" {
		req.Header.Set("MCP-Protocol-Version", header)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.Header.Get("Mcp-Session-Id") != "" {
		t.Errorf("a stateless request got a session: %s", resp.Header.Get("Mcp-Session-Id"))
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		events := strings.Split(strings.TrimSpace(string(b)), "\n\n")
		last := events[len(events)-1]
		b = []byte(last[strings.Index(last, "data: ")+len("data: "):])
	}
	a := rpcAnswer{status: resp.StatusCode}
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatalf("POST %s: %s, body %q: %v", body, resp.Status, b, err)
	}
	return a
}

// TestHTTPStatelessRequests: an MCP 2026-07-28 request without a session
// (its protocol in _meta and in the MCP-Protocol-Version header) is served
// on its POST alone — listed, decided, run — and one whose metadata is
// missing, contradicts its header or names a revision the proxy does not
// serve is refused with a 400 whose body is the JSON-RPC error with the
// request's id.
func TestHTTPStatelessRequests(t *testing.T) {
	t.Parallel()
	r := newHTTPRig(t, time.Minute)

	a := r.postStateless(t, "2026-07-28", `{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{`+statelessMeta+`}}`)
	if a.status != 200 || a.Error != nil || !strings.Contains(string(a.Result["tools"]), `"echo"`) {
		t.Fatalf("stateless tools/list: %d %+v %s", a.status, a.Error, a.Result["tools"])
	}
	a = r.postStateless(t, "2026-07-28", `{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"echo","arguments":{},`+statelessMeta+`}}`)
	if a.status != 200 || a.Error != nil || !strings.Contains(string(a.Result["content"]), `"echo"`) || string(a.ID) != `"c"` {
		t.Fatalf("stateless tools/call: %d %s %+v %v", a.status, a.ID, a.Error, a.Result)
	}
	// The proxy's refusal of an unknown tool is the JSON-RPC error, as for
	// every client.
	a = r.postStateless(t, "2026-07-28", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"nope","arguments":{},`+statelessMeta+`}}`)
	if a.Error == nil || a.Error.Code != -32602 {
		t.Fatalf("stateless call of an unknown tool: %d %+v", a.status, a.Error)
	}

	// A discovery is declined (the server is a process each stateless
	// request would start): the client initializes.
	a = r.postStateless(t, "2026-07-28", `{"jsonrpc":"2.0","id":7,"method":"server/discover","params":{`+statelessMeta+`}}`)
	if a.status != 200 || a.Error == nil || a.Error.Code != -32601 {
		t.Fatalf("stateless server/discover: %d %+v; want method not found", a.status, a.Error)
	}
	// With DiscoverUpstream (a remote server) the server answers it.
	up := newHTTPRigConfig(t, time.Minute, "version: 1\npolicy: {write: allow}\nservers: {s: {}}\n", proxy.DiscoverUpstream())
	a = up.postStateless(t, "2026-07-28", `{"jsonrpc":"2.0","id":8,"method":"server/discover","params":{`+statelessMeta+`}}`)
	if a.status != 200 || a.Error != nil || !strings.Contains(string(a.Result["supportedVersions"]), "2026-07-28") {
		t.Fatalf("stateless server/discover, DiscoverUpstream: %d %+v %v; want the server's answer", a.status, a.Error, a.Result)
	}

	for _, tc := range []struct {
		name, header, params string
		code                 int64
	}{
		{"no _meta", "2026-07-28", `{}`, -32602},
		{"no protocolVersion", "2026-07-28", `{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}`, -32602},
		{"no clientCapabilities", "2026-07-28", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`, -32602},
		{"no header", "", `{` + statelessMeta + `}`, -32020},
		{"header differs", "2026-07-28", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"v999","io.modelcontextprotocol/clientCapabilities":{}}}`, -32020},
		{"unsupported", "v999", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"v999","io.modelcontextprotocol/clientCapabilities":{}}}`, -32022},
	} {
		a := r.postStateless(t, tc.header, `{"jsonrpc":"2.0","id":301,"method":"server/discover","params":`+tc.params+`}`)
		if a.status != 400 || a.Error == nil || a.Error.Code != tc.code || string(a.ID) != "301" {
			t.Errorf("%s: %d id %s %+v; want 400 with error %d and id 301", tc.name, a.status, a.ID, a.Error, tc.code)
		}
		if tc.code == -32022 && !strings.Contains(string(a.Error.Data), `"supported":["2026-07-28"]`) {
			t.Errorf("%s: error data %s; want the supported versions", tc.name, a.Error.Data)
		}
	}
}

// TestHTTPStatelessAsk: the proxy's own ask to a stateless client is an
// input_required result whose retry — a request of its own, served by
// another session of one request — is decided with the client's answer
// and runs once; the same retry again finds no held ask and is refused.
func TestHTTPStatelessAsk(t *testing.T) {
	t.Parallel()
	r := newHTTPRigConfig(t, time.Minute, "version: 1\npolicy: {write: ask}\nservers: {s: {}}\n")
	var state string
	ask := func() {
		t.Helper()
		a := r.postStateless(t, "2026-07-28", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write","arguments":{},`+statelessMeta+`}}`)
		if string(a.Result["resultType"]) != `"input_required"` || json.Unmarshal(a.Result["requestState"], &state) != nil || !strings.HasPrefix(state, "mcpx-policy/") {
			t.Fatalf("a write asked of a stateless client: %d %+v %v; want input_required with the proxy's requestState", a.status, a.Error, a.Result)
		}
	}
	retry := func(id, action string) rpcAnswer {
		return r.postStateless(t, "2026-07-28", `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"write","arguments":{},"requestState":"`+state+`",`+
			`"inputResponses":{"mcpx-policy/confirm":{"action":"`+action+`","content":{"approve":`+map[string]string{"accept": "true", "decline": "false"}[action]+`}}},`+statelessMeta+`}}`)
	}
	ask()
	a := retry("2", "accept")
	if a.Error != nil || !strings.Contains(string(a.Result["content"]), "written") {
		t.Fatalf("an approved retry: %d %+v %v; want the write run", a.status, a.Error, a.Result)
	}
	// A declined retry is refused, and the ask is used up.
	ask()
	a = retry("2", "decline")
	if !strings.Contains(string(a.Result["_meta"]), "ConfirmationDeclined") || string(a.Result["resultType"]) != `"complete"` {
		t.Fatalf("a declined retry: %d %+v %v; want the ConfirmationDeclined refusal, resultType complete", a.status, a.Error, a.Result)
	}
	a = retry("3", "accept")
	if !strings.Contains(string(a.Result["_meta"]), "ConfirmationUnavailable") {
		t.Fatalf("the retry of a used ask: %d %+v %v; want ConfirmationUnavailable", a.status, a.Error, a.Result)
	}
	// A forged requestState finds nothing either.
	state = "mcpx-policy/forged"
	a = retry("4", "accept")
	if !strings.Contains(string(a.Result["_meta"]), "ConfirmationUnavailable") {
		t.Fatalf("a forged requestState: %d %+v %v; want ConfirmationUnavailable", a.status, a.Error, a.Result)
	}
}

// TestHTTPStatelessBounded: stateless requests count against the session
// cap with the sessions: at the cap one is answered 503 and starts no
// server; once a session ends, it is served.
func TestHTTPStatelessBounded(t *testing.T) {
	t.Parallel()
	r := newHTTPRigConfig(t, time.Minute, "version: 1\npolicy: {write: allow}\nservers: {s: {}}\n", proxy.MaxSessions(1))
	id := r.initialize(t)
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + statelessMeta + `}}`
	if a := r.tryStateless(t, list); a.status != http.StatusServiceUnavailable {
		t.Fatalf("a stateless request at the cap: %d; want 503", a.status)
	}
	select {
	case <-r.ended:
		t.Fatal("a server was started and stopped for the refused request")
	default:
	}
	req, _ := http.NewRequest("DELETE", r.url, nil)
	req.Header.Set("Mcp-Session-Id", id)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	r.waitEnded(t, 10*time.Second, "a deleted session")
	if a := r.tryStateless(t, list); a.status != http.StatusOK {
		t.Fatalf("a stateless request below the cap: %d; want it served", a.status)
	}
}

// tryStateless posts a stateless request and returns its status (and the
// answer, when it is JSON-RPC).
func (r *httpRig) tryStateless(t *testing.T, body string) rpcAnswer {
	t.Helper()
	req, _ := http.NewRequest("POST", r.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := rpcAnswer{status: resp.StatusCode}
	json.Unmarshal(b, &a)
	return a
}

// TestHTTPStatelessCallersAreFair: the asks of stateless requests count
// against the approval store's quota of their own client — the holder of
// an Authorization credential, else an address —, so a client that fills
// its quota (16 pending asks) is refused its next ask while another
// client's is still asked; the same credential from another address is
// the same client.
func TestHTTPStatelessCallersAreFair(t *testing.T) {
	t.Parallel()
	r := newHTTPRigConfig(t, time.Minute, "version: 1\npolicy: {write: ask}\nservers: {s: {}}\n")
	ask := func(n int, addr, auth string) string {
		t.Helper()
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"write","arguments":{"n":%d},%s}}`, n, n, statelessMeta)
		req := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
		req.RemoteAddr = addr
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		w := httptest.NewRecorder()
		r.h.ServeHTTP(w, req)
		var a rpcAnswer
		if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil || a.Error != nil {
			t.Fatalf("ask %d from %s: %d %q", n, addr, w.Code, w.Body)
		}
		if string(a.Result["resultType"]) == `"input_required"` {
			return "asked"
		}
		if strings.Contains(string(a.Result["_meta"]), "ConfirmationUnavailable") {
			return "refused"
		}
		t.Fatalf("ask %d from %s: %v; want input_required or ConfirmationUnavailable", n, addr, a.Result)
		return ""
	}
	const quota = 16
	for i := range quota {
		if got := ask(i, "192.0.2.1:4000", "Bearer client-a"); got != "asked" {
			t.Fatalf("client A's ask %d: %s; want asked", i, got)
		}
	}
	// (Each asks another call: an ask identical to a pending one is that
	// request again, whoever asks.)
	for i, tc := range []struct{ who, addr, auth, want string }{
		{"client A again", "192.0.2.1:4001", "Bearer client-a", "refused"},
		{"client A's credential from another address", "198.51.100.7:5000", "Bearer client-a", "refused"},
		{"client B (another credential, A's address)", "192.0.2.1:4002", "Bearer client-b", "asked"},
		{"client C (no credential, another address)", "198.51.100.8:5000", "", "asked"},
	} {
		if got := ask(100+i, tc.addr, tc.auth); got != tc.want {
			t.Errorf("%s: %s; want %s", tc.who, got, tc.want)
		}
	}
	// Without a credential, an address is one client: C fills its quota,
	// and D at another address is still asked.
	for i := range quota - 1 {
		ask(200+i, "198.51.100.8:5001", "")
	}
	if got := ask(300, "198.51.100.8:5002", ""); got != "refused" {
		t.Errorf("client C past its quota: %s; want refused", got)
	}
	if got := ask(300, "203.0.113.9:6000", ""); got != "asked" {
		t.Errorf("client D while C is full: %s; want asked", got)
	}
}

// TestHTTPStatelessStartsAhead: with StartAhead, once a stateless request
// was served a server is started for the next one, which it serves — and
// only it: each request still has a server of its own. The server
// started ahead holds a place among MaxSessions, and gives it up to a
// session that needs it.
func TestHTTPStatelessStartsAhead(t *testing.T) {
	t.Parallel()
	r := newHTTPRigConfig(t, time.Minute, "version: 1\npolicy: {write: allow}\nservers: {s: {}}\n", proxy.StartAhead(), proxy.MaxSessions(2))
	whoami := func(id int) string {
		t.Helper()
		a := r.postStateless(t, "2026-07-28", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"whoami","arguments":{},%s}}`, id, statelessMeta))
		if a.Error != nil {
			t.Fatalf("whoami: %+v", a.Error)
		}
		var res struct{ Content []struct{ Text string } }
		json.Unmarshal(append([]byte(`{"content":`), append(a.Result["content"], '}')...), &res)
		if len(res.Content) != 1 {
			t.Fatalf("whoami: %v", a.Result)
		}
		return res.Content[0].Text
	}
	// waitStarts waits until n servers were started.
	waitStarts := func(n int32) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); r.starts.Load() < n; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d servers started; want %d", r.starts.Load(), n)
			}
		}
	}
	if got := whoami(1); got != "server-1" {
		t.Fatalf("the first stateless request was served by %s; want server-1, started for it", got)
	}
	waitStarts(2) // the one ahead
	if got := whoami(2); got != "server-2" {
		t.Fatalf("the second stateless request was served by %s; want server-2, started ahead", got)
	}
	waitStarts(3)
	// The server ahead and one session fill MaxSessions(2); a second
	// session still starts, the server ahead stopped for it.
	r.initialize(t)
	r.initialize(t)
	list := `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{` + statelessMeta + `}}`
	if a := r.tryStateless(t, list); a.status != http.StatusServiceUnavailable {
		t.Fatalf("a stateless request with two sessions open: %d; want 503 (no server ahead left to take)", a.status)
	}
}

// TestHTTPStatelessListen: a stateless subscriptions/listen in front of a
// command — each stateless request to which is served by a server of its
// own, so no change one server sees is one the client's later requests
// meet — is answered by the proxy without starting a server: the
// acknowledgement first, agreeing to no notification whatever was asked,
// then the listen's result, both naming the subscription by the request's
// id. Malformed params are refused. With a remote server
// (DiscoverUpstream) the listen goes to the server.
func TestHTTPStatelessListen(t *testing.T) {
	t.Parallel()
	r := newHTTPRig(t, time.Minute)
	listen := func(r *httpRig, accept, notifications string) (contentType string, frames frames) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		body := `{"jsonrpc":"2.0","id":9,"method":"subscriptions/listen","params":{` + statelessMeta + notifications + `}}`
		req, _ := http.NewRequestWithContext(ctx, "POST", r.url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", accept)
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("subscriptions/listen: %v", err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		contentType = resp.Header.Get("Content-Type")
		for _, line := range strings.Split(string(b), "\n") {
			line = strings.TrimSpace(line)
			if strings.HasPrefix(contentType, "text/event-stream") {
				if !strings.HasPrefix(line, "data: ") {
					continue
				}
				line = strings.TrimPrefix(line, "data: ")
			}
			if line == "" {
				continue
			}
			var f map[string]json.RawMessage
			if err := json.Unmarshal([]byte(line), &f); err != nil {
				t.Fatalf("subscriptions/listen: %s %q: %v", resp.Status, b, err)
			}
			frames = append(frames, f)
		}
		return contentType, frames
	}

	ct, frames := listen(r, "application/json, text/event-stream",
		`,"notifications":{"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true,"resourceSubscriptions":["file:///a"]}`)
	if len(frames) != 2 || !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("subscriptions/listen: %s %v; want a stream of the acknowledgement and the result", ct, frames)
	}
	ack, res := frames[0], frames[1]
	if string(ack["method"]) != `"notifications/subscriptions/acknowledged"` || string(ack["id"]) != "" ||
		compactJSON(t, ack["params"]) != `{"_meta":{"io.modelcontextprotocol/subscriptionId":9},"notifications":{}}` {
		t.Errorf("the first frame: %v; want the acknowledgement of subscription 9 agreeing to nothing", frames[:1])
	}
	if string(res["id"]) != "9" || res["error"] != nil ||
		compactJSON(t, res["result"]) != `{"_meta":{"io.modelcontextprotocol/subscriptionId":9},"resultType":"complete"}` {
		t.Errorf("the second frame: %v; want the result of listen 9", frames[1:])
	}
	// A client that takes no stream gets the result alone.
	if ct, frames = listen(r, "application/json", `,"notifications":{"toolsListChanged":true}`); len(frames) != 1 || string(frames[0]["id"]) != "9" || frames[0]["result"] == nil {
		t.Errorf("subscriptions/listen as JSON: %s %v; want the result alone", ct, frames)
	}
	for _, bad := range []string{``, `,"notifications":[]`, `,"notifications":null`} {
		if _, frames = listen(r, "application/json, text/event-stream", bad); len(frames) != 1 || !strings.Contains(string(frames[0]["error"]), "-32602") {
			t.Errorf("subscriptions/listen with params {_meta%s}: %v; want invalid params", bad, frames)
		}
	}
	if n := r.starts.Load(); n != 0 {
		t.Errorf("%d servers were started for the listens; want none", n)
	}

	up := newHTTPRigConfig(t, time.Minute, "version: 1\npolicy: {write: allow}\nservers: {s: {}}\n", proxy.DiscoverUpstream())
	if _, frames = listen(up, "application/json, text/event-stream", `,"notifications":{}`); len(frames) == 0 || up.starts.Load() != 1 {
		t.Errorf("subscriptions/listen with DiscoverUpstream: %v, %d servers started; want the server's answer", frames, up.starts.Load())
	}
}

// frames are JSON-RPC messages, shown as their JSON.
type frames []map[string]json.RawMessage

func (fs frames) String() string {
	var b strings.Builder
	for _, f := range fs {
		j, _ := json.Marshal(f)
		b.Write(j)
		b.WriteByte(' ')
	}
	return b.String()
}

// compactJSON is raw without insignificant space, its keys sorted.
func compactJSON(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
