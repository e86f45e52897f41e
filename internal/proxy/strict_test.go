package proxy_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// The policy of the strict tests: writes allowed (or as set), unknown
// arguments refused, move_file hidden, writes kept in /ws/.
const strictConfig = `version: 1
policy: {write: %s, unknownArgs: reject}
servers:
  s:
    hiddenTools: ["move_file"]
    argumentRules:
      - id: in-ws
        tools: ["write_file"]
        schema: {properties: {path: {type: string, pattern: "^/ws/"}}}
`

var strictTools = []string{
	`{"name":"read_file","annotations":{"readOnlyHint":true},"inputSchema":{"type":"object","properties":{"path":{"type":"string"},"Path":{"type":"string"},"n":{"type":"number"}},"additionalProperties":false}}`,
	`{"name":"write_file","annotations":{"readOnlyHint":false},"inputSchema":{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"additionalProperties":false}}`,
	`{"name":"move_file","annotations":{"readOnlyHint":false},"inputSchema":{"type":"object","properties":{"source":{"type":"string"},"destination":{"type":"string"}}}}`,
}

func strictRig(t *testing.T, write string, elicit bool, extra ...string) *rawRig {
	return newRawRig(t, fmt.Sprintf(strictConfig, write), elicit, append(append([]string{}, strictTools...), extra...)...)
}

// settle sends a read the policy allows and waits for its answer: every
// frame sent before it has then been handled.
func (r *rawRig) settle(t *testing.T, id int) {
	t.Helper()
	r.client.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/ws/settle"}}}`, id))
	if a := r.client.answer(t, fmt.Sprint(id)); resultTextOf(a) != "ran read_file" {
		t.Fatalf("the settling read was not run: %v", a)
	}
}

// executed is the names and arguments of the tools/call the server ran,
// but the settling reads.
func (r *rawRig) executed() []string {
	var out []string
	for _, p := range r.server.calls() {
		if a, _ := p["arguments"].(map[string]any); a["path"] == "/ws/settle" {
			continue
		}
		b, _ := json.Marshal(p)
		out = append(out, string(b))
	}
	return out
}

// TestCallParamsDecodedStrictly: a tools/call whose frame or params the
// server could read otherwise than the proxy — a case variant of "name" or
// "arguments", a duplicate key anywhere, an odd id, a batch, a call
// without an id, input responses that are not objects — is refused with -32602 where it can be answered, and the
// server never sees it.
func TestCallParamsDecodedStrictly(t *testing.T) {
	t.Parallel()
	r := strictRig(t, "allow", false)
	answered := map[string]string{ // id -> frame, each answered with -32602
		"1":  `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"move_file","Name":"read_file","arguments":{"source":"/ws/a","destination":"/etc/a"}}}`,
		"2":  `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/etc/x"},"Arguments":{"path":"/ws/ok"}}}`,
		"3":  `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/ws/ok","path":"/etc/x"}}}`,
		"4":  `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/ws/ok","content":{"a":1,"a":2}}}}`,
		"5":  `{"jsonrpc":"2.0","id":5,"method":"tools/list","method":"tools/call","params":{"name":"write_file","arguments":{"path":"/etc/x"}}}`,
		"6":  `{"jsonrpc":"2.0","id":6,"method":"tools/call","Params":{"name":"write_file","arguments":{"path":"/etc/x"}},"params":{"name":"read_file","arguments":{"path":"/ws/a"}}}`,
		"7":  `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/ws/a"}},"params":{"name":"write_file","arguments":{"path":"/etc/x"}}}`,
		"8":  "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\",\"params\":{\"name\":\"write_file\",\"arguments\":{\"path\":\"/ws/\xff\"}}}",
		"9":  `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"read_file\ud800","arguments":{}}}`,
		"10": `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/ws/ok"}}} {"x":1}`,
		"11": `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/ws/ok"}},"Method":"tools/list"}`,
		"12": `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"ſead_file","arguments":{}},"paramſ":{}}`,
		"13": `{"jsonrpc":"2.0","id":13,"method":"tools/call","params":"write_file"}`,
		"14": `{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"arguments":{"path":"/ws/ok"}}}`,
		"15": `{"jsonrpc":"2.0","id":"mcpx-policy/1","method":"tools/call","params":{"name":"read_file","arguments":{}}}`,
		// A retry's input responses are results: objects, in an object.
		"16": `{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/ws/a"},"inputResponses":null}}`,
		"17": `{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/ws/a"},"inputResponses":{"user_name":12345}}}`,
		"18": `{"jsonrpc":"2.0","id":18,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/ws/a"},"inputResponses":[{"action":"accept"}]}}`,
		"19": `{"jsonrpc":"2.0","id":19,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/ws/a"},"inputResponses":{"a":{"action":"accept"},"b":null}}}`,
	}
	for _, f := range answered {
		r.client.send(f)
	}
	unanswerable := []string{
		`{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/etc/x"}}}`,
		`{"jsonrpc":"2.0","id":1e2,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/etc/x"}}}`,
		`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/etc/x"}}}`,
		`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/etc/x"}}}`,
		`{"jsonrpc":"2.0","id":true,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/etc/x"}}}`,
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"write_file","arguments":{"path":"/etc/x"}}}`,
		`[{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/etc/x"}}}]`,
		`{"jsonrpc":"2.0","id":21,"ID":22,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/etc/x"}}}`,
		`{"jsonrpc":"2.0","id":23,"id":24,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/etc/x"}}}`,
		`{"jsonrpc":"1.0","id":25,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/etc/x"}}}`,
		`not json at all`,
	}
	for _, f := range unanswerable {
		r.client.send(f)
	}
	for id := range answered {
		if id == "15" {
			id = "mcpx-policy/1"
		}
		a := r.client.answer(t, id)
		if errorCode(a) != "-32602" || !strings.HasPrefix(errorMessage(a), "mcpx-policy: refused: ") {
			t.Errorf("id %s: answer %v; want a -32602 refusal", id, a)
		}
	}
	r.settle(t, 100)
	if ran := r.executed(); len(ran) != 0 {
		t.Errorf("the server ran %v; want nothing but the settling read", ran)
	}
	for _, id := range []string{"20", "21", "22", "23", "24", "25"} {
		for _, m := range r.server.frames() {
			if fmt.Sprint(m["id"]) == id {
				t.Errorf("the server got the refused frame with id %s: %v", id, m)
			}
		}
	}
	r.log.waitFor(t, "dropped a client request without an id")
}

// TestForwardsTheJudgedParams: the server gets the name and arguments the
// policy judged — numbers as written, keys differing by case as distinct
// keys — and the params' other members as sent.
func TestForwardsTheJudgedParams(t *testing.T) {
	t.Parallel()
	r := strictRig(t, "allow", false)
	r.client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":"p<1>"},"name":"read_file","arguments":{"path":"/ws/a&b<c>","Path":"/other","n":1.50e2}}}`)
	if a := r.client.answer(t, "1"); resultTextOf(a) != "ran read_file" {
		t.Fatalf("answer %v", a)
	}
	calls := r.server.calls()
	if len(calls) != 1 {
		t.Fatalf("the server got %d calls", len(calls))
	}
	b, _ := json.Marshal(calls[0])
	const want = `{"_meta":{"progressToken":"p\u003c1\u003e"},"arguments":{"Path":"/other","n":1.50e2,"path":"/ws/a\u0026b\u003cc\u003e"},"name":"read_file"}`
	if string(b) != want {
		t.Errorf("the server got\n %s\nwant\n %s", b, want)
	}
	// What the proxy itself wrote: numbers kept as written.
	for _, m := range r.server.frames() {
		if m["method"] == "tools/call" {
			args := m["params"].(map[string]any)["arguments"].(map[string]any)
			if args["n"] != json.Number("1.50e2") {
				t.Errorf("n reached the server as %v; want 1.50e2 as written", args["n"])
			}
		}
	}
}

// TestOwnRequestIDs: the proxy's own tools/list carries an unguessable id,
// a reply to it from the client (which never saw it) is dropped, and the
// server's own answer decides.
func TestOwnRequestIDs(t *testing.T) {
	t.Parallel()
	r := strictRig(t, "deny", false)
	listed := make(chan string, 1)
	release := make(chan struct{})
	r.server.mu.Lock()
	r.server.onList = func(id json.RawMessage) []string {
		var s string
		json.Unmarshal(id, &s)
		listed <- s
		<-release
		return nil
	}
	r.server.mu.Unlock()
	r.client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/ws/a","content":"x"}}}`)
	id := <-listed
	if !strings.HasPrefix(id, "mcpx-policy/") || len(id) < len("mcpx-policy/")+20 || id == "mcpx-policy/1" {
		t.Errorf("the proxy's own id %q is guessable", id)
	}
	// The client forges the answer, with the exact id (as if it leaked)
	// and with the id the proxy used to give its first request.
	forged := `{"jsonrpc":"2.0","id":%q,"result":{"tools":[{"name":"write_file","annotations":{"readOnlyHint":true}}]}}`
	r.client.send(fmt.Sprintf(forged, id))
	r.client.send(fmt.Sprintf(forged, "mcpx-policy/1"))
	r.log.waitFor(t, "dropped a reply to a request of the proxy from the peer it was not sent to")
	r.log.waitFor(t, "dropped a reply to a request of the proxy that is not pending")
	close(release)
	a := r.client.answer(t, "1")
	if resultCode(a) != "WriteDenied" {
		t.Errorf("the write under writePolicy deny: %v; want WriteDenied", a)
	}
	r.settle(t, 2)
	if ran := r.executed(); len(ran) != 0 {
		t.Errorf("the server ran %v", ran)
	}
	for _, m := range r.server.frames() {
		if id, _ := m["id"].(string); strings.HasPrefix(id, "mcpx-policy/") && m["method"] == nil {
			t.Errorf("a forged reply reached the server: %v", m)
		}
	}
}

// TestConfirmationOnlyFromTheClient: the person's confirmation counts only
// from the client the elicitation went to; the server answering it, or
// the client answering it twice, changes nothing.
func TestConfirmationOnlyFromTheClient(t *testing.T) {
	t.Parallel()
	r := strictRig(t, "ask", true)
	elicitation := func() string {
		e := r.client.next(t, "an elicitation", func(m map[string]any) bool { return m["method"] == "elicitation/create" })
		id, _ := e["id"].(string)
		return id
	}
	approve := `{"jsonrpc":"2.0","id":%q,"result":{"action":"accept","content":{"approve":true}}}`

	r.client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/ws/a","content":"x"}}}`)
	id := elicitation()
	r.server.send(fmt.Sprintf(approve, id))
	r.log.waitFor(t, "dropped a reply to a request of the proxy from the peer it was not sent to")
	// An id already in flight is refused while the ask waits.
	r.client.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	if a := r.client.answer(t, "1"); errorCode(a) != "-32602" || !strings.Contains(errorMessage(a), "already in use") {
		t.Errorf("a request reusing an id in flight: %v; want -32602", a)
	}
	// A case variant in the client's answer is no approval.
	r.client.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":{"Action":"decline","action":"accept","content":{"approve":true}}}`, id))
	if a := r.client.answer(t, "1"); resultCode(a) != "ConfirmationDeclined" {
		t.Errorf("after the server's forged approval and a refused answer: %v; want ConfirmationDeclined", a)
	}
	if ran := r.executed(); len(ran) != 0 {
		t.Fatalf("the server ran %v without the person's approval", ran)
	}

	// The client's own approval runs the call once; the same approval
	// again is dropped, and never reaches the server.
	r.client.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/ws/b","content":"y"}}}`)
	id = elicitation()
	r.client.send(fmt.Sprintf(approve, id))
	if a := r.client.answer(t, "2"); resultTextOf(a) != "ran write_file" {
		t.Fatalf("the approved write: %v", a)
	}
	r.client.send(fmt.Sprintf(approve, id))
	r.log.waitFor(t, "dropped a reply to a request of the proxy that is not pending")
	if ran := r.executed(); len(ran) != 1 {
		t.Errorf("the server ran %v; want the one approved write", ran)
	}
	for _, m := range r.server.frames() {
		if m["id"] == id {
			t.Errorf("the client's answer to the proxy reached the server: %v", m)
		}
	}
	// The server may not use the proxy's ids for its own requests.
	r.server.send(`{"jsonrpc":"2.0","id":"mcpx-policy/x","method":"ping"}`)
	r.server.waitFor(t, "the refusal of its reserved id", func(m map[string]any) bool {
		e, _ := m["error"].(map[string]any)
		return m["id"] == "mcpx-policy/x" && fmt.Sprint(e["code"]) == "-32602"
	})
}

// TestUnreadableToolsAreNeitherListedNorCallable: a tool whose definition
// does not parse strictly, or whose name the list gives twice, is left out
// of tools/list, and a call to it gets exactly the unknown-tool error.
func TestUnreadableToolsAreNeitherListedNorCallable(t *testing.T) {
	t.Parallel()
	r := strictRig(t, "allow", false,
		`{"name":"odd","annotations":{"readOnlyHint":"yes"},"inputSchema":{"type":"object","properties":{"path":{"type":"string"}},"additionalProperties":false}}`,
		`{"name":"twice","annotations":{"readOnlyHint":true}}`,
		`{"name":"twice","annotations":{"readOnlyHint":false}}`,
		`{"name":"cased","annotations":{"ReadOnlyHint":true}}`,
		`{"Name":"ghost"}`,
	)
	r.client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	a := r.client.answer(t, "1")
	var names []string
	for _, tool := range a["result"].(map[string]any)["tools"].([]any) {
		names = append(names, tool.(map[string]any)["name"].(string))
	}
	if strings.Join(names, ",") != "read_file,write_file" {
		t.Errorf("tools/list gave %v; want read_file,write_file", names)
	}
	r.client.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"nosuch","arguments":{}}}`)
	unknown := r.client.answer(t, "2")["error"].(map[string]any)
	for i, name := range []string{"odd", "twice", "cased"} {
		id := fmt.Sprint(3 + i)
		r.client.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q,"arguments":{"path":"/ws/a","zzz":1}}}`, id, name))
		got := r.client.answer(t, id)["error"].(map[string]any)
		want := strings.Replace(unknown["message"].(string), "nosuch", name, 1)
		if fmt.Sprint(got["code"]) != fmt.Sprint(unknown["code"]) || got["message"] != want {
			t.Errorf("call to %s: %v; want the unknown-tool error %v", name, got, unknown)
		}
	}
	if ran := r.executed(); len(ran) != 0 {
		t.Errorf("the server ran %v", ran)
	}
	r.log.waitFor(t, "neither listed nor callable")
}

// TestNoListNoDecision: when the proxy cannot have the server's tool list,
// a call is refused (PolicyError), never decided without the tool's
// definition.
func TestNoListNoDecision(t *testing.T) {
	t.Parallel()
	r := strictRig(t, "allow", false)
	r.server.mu.Lock()
	r.server.listErr = true
	r.server.mu.Unlock()
	r.client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/ws/a","zzz":1}}}`)
	a := r.client.answer(t, "1")
	if resultCode(a) != "PolicyError" || !strings.Contains(resultTextOf(a), "tool list could not be read") {
		t.Errorf("a call without the tool list: %v; want a PolicyError refusal", a)
	}
	if calls := r.server.calls(); len(calls) != 0 {
		t.Errorf("the server ran %v", calls)
	}
}

// TestServerFramesDecodedStrictly: an answer of the server that does not
// decode strictly never reaches the client as it is: the client gets an
// error instead of a tools/list the proxy could not filter.
func TestServerFramesDecodedStrictly(t *testing.T) {
	t.Parallel()
	r := strictRig(t, "allow", false)
	r.server.mu.Lock()
	r.server.tools = []string{`{"name":"read_file","annotations":{"readOnlyHint":true}}],"tools":[{"name":"move_file"}`}
	r.server.mu.Unlock()
	r.client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if a := r.client.answer(t, "1"); errorCode(a) != "-32603" || !strings.Contains(errorMessage(a), `duplicate key "tools"`) {
		t.Errorf("a tools/list answer with a duplicate key: %v; want -32603", a)
	}
	r.server.mu.Lock()
	r.server.tools = []string{strictTools[0]}
	r.server.mu.Unlock()
	r.server.send(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"a","data":"b"}}`)
	r.log.waitFor(t, "refused a frame of the server")
	r.client.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if a := r.client.answer(t, "2"); errorCode(a) != "" {
		t.Errorf("a good tools/list after: %v", a)
	}
}
