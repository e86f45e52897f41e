package render_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/redact"
	"github.com/mcpx/mcpx-policy/internal/render"
)

func TestStatusTableCoversEveryCode(t *testing.T) {
	t.Parallel()
	want := map[decision.Code]int{
		decision.HiddenTool: 400, decision.UnknownArguments: 400, decision.ArgumentRuleViolation: 400,
		decision.InvalidInput: 400, decision.WriteDenied: 403, decision.OverrideDeny: 403,
		decision.ConfirmationDeclined: 403, decision.UnknownOutcomePending: 409, decision.ToolDefinitionChanged: 409,
		decision.ConfirmationUnavailable: 428, decision.WriteNeedsConfirmation: 428,
		decision.DestructiveNeedsConfirmation: 428, decision.OverrideAsk: 428,
		decision.LedgerUnreadable: 503, decision.PolicyError: 500, decision.IgnoredArguments: 200,
		decision.ConfigLoosened: 200, decision.WriteBudgetExceeded: 429, decision.RepeatedCall: 429,
		decision.FlowDenied: 403, decision.FlowNeedsConfirmation: 428,
	}
	for _, info := range decision.Codes {
		got := render.Status(info.Code)
		if got != want[info.Code] {
			t.Errorf("Status(%s) = %d, want %d", info.Code, got, want[info.Code])
		}
		// A code that denies or asks never reads as a success.
		if info.Outcome != "" && got < 400 {
			t.Errorf("Status(%s) = %d for a %s", info.Code, got, info.Outcome)
		}
	}
	if got := render.Status("NoSuchCode"); got != http.StatusInternalServerError {
		t.Errorf("unknown code: %d, want 500", got)
	}
}

func TestStatusOfFailsClosed(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		d    decision.Decision
		want int
	}{
		{"allow", decision.Decision{Outcome: decision.Allow}, 200},
		{"deny without reasons", decision.Decision{Outcome: decision.Deny}, 500},
		{"unknown outcome", decision.Decision{Outcome: "maybe"}, 500},
		{"deny decided by a warning code", decision.Decision{Outcome: decision.Deny,
			Reasons: []decision.Reason{{Code: decision.IgnoredArguments}}}, 500},
		{"ledger", decision.Denied(decision.CallRef{}, decision.LedgerUnreadable, "x"), 503},
		{"pin deny", decision.Denied(decision.CallRef{}, decision.ToolDefinitionChanged, "x"), 409},
		{"pin ask", decision.Decision{Outcome: decision.Ask, Reasons: []decision.Reason{{Code: decision.ToolDefinitionChanged}}}, 428},
		{"ask without reasons", decision.Decision{Outcome: decision.Ask}, 500},
	}
	for _, c := range cases {
		if got := render.StatusOf(c.d); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
		if c.d.Outcome != decision.Allow {
			if s, _ := render.Daemon(redact.Of(c.d, nil)); s < 400 {
				t.Errorf("%s: Daemon status %d", c.name, s)
			}
			if a := render.MCP(redact.Of(c.d, nil)); a.Result == nil && a.Error == nil {
				t.Errorf("%s: MCP renders a refusal as a pass-through", c.name)
			}
		}
	}
}

func TestUnavailableAndDeclinedNeverAllow(t *testing.T) {
	t.Parallel()
	for _, c := range goldenCases(t) {
		for name, f := range map[string]func(decision.Decision) decision.Decision{
			"Unavailable": render.Unavailable, "Declined": render.Declined} {
			got := f(c.d)
			switch c.d.Outcome {
			case decision.Ask:
				if got.Outcome != decision.Deny || got.Step != decision.StepConfirmation {
					t.Errorf("%s(%s) = %s/%s, want deny/confirmation", name, c.name, got.Outcome, got.Step)
				}
				code := decision.ConfirmationUnavailable
				if name == "Declined" {
					code = decision.ConfirmationDeclined
				}
				if got.First().Code != code {
					t.Errorf("%s(%s) decides with %s", name, c.name, got.First().Code)
				}
				if len(got.Reasons) != len(c.d.Reasons)+1 {
					t.Errorf("%s(%s) dropped the ask reasons", name, c.name)
				}
			default:
				if got.Outcome != c.d.Outcome || got.First().Code != c.d.First().Code {
					t.Errorf("%s(%s) changed a %s", name, c.name, c.d.Outcome)
				}
			}
		}
	}
}

// TestUnknownToolMatchesTheSDK reads the MCP Go SDK v1.8.0 source in the
// module cache and checks that UnknownTool still says what its server says.
func TestUnknownToolMatchesTheSDK(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Skip("go env:", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "github.com", "modelcontextprotocol", "go-sdk@v1.8.0")
	server, err := os.ReadFile(filepath.Join(dir, "mcp", "server.go"))
	if err != nil {
		t.Skip("the SDK is not in the module cache:", err)
	}
	rpc, err := os.ReadFile(filepath.Join(dir, "jsonrpc", "jsonrpc.go"))
	if err != nil {
		t.Skip(err)
	}
	for _, want := range []string{
		"Code:    jsonrpc.CodeInvalidParams,",
		`Message: fmt.Sprintf("unknown tool %q", req.Params.Name),`,
	} {
		if !strings.Contains(string(server), want) {
			t.Errorf("SDK mcp/server.go no longer contains %q", want)
		}
	}
	if !strings.Contains(string(rpc), "CodeInvalidParams = -32602") {
		t.Error("SDK jsonrpc.CodeInvalidParams is no longer -32602")
	}
	e := render.UnknownTool(`delete "all"`)
	if e.Code != -32602 || e.Message != `unknown tool "delete \"all\""` || e.Error() != e.Message {
		t.Errorf("UnknownTool = %+v", e)
	}
	b, _ := json.Marshal(render.MCPAnswer{Error: e})
	if string(b) != `{"code":-32602,"message":"unknown tool \"delete \\\"all\\\"\""}` {
		t.Errorf("JSON form %s", b)
	}
}

func TestHiddenToolLeaksNothing(t *testing.T) {
	t.Parallel()
	call := decision.Call{Server: "fs", Tool: decision.Tool{Name: "delete_file"}, Args: map[string]any{"path": "/x"}}
	r := reason(decision.HiddenTool, `fs.delete_file is hidden by the pattern "delete_*"`)
	r.Details = map[string]any{"pattern": "delete_*"}
	d := deny(t, call, true, r)
	s, body := render.Daemon(redact.Of(d, nil))
	b, _ := json.Marshal(body)
	m, _ := json.Marshal(render.MCP(redact.Of(d, nil)))
	for _, out := range []string{string(b), string(m), render.CLI(redact.Of(d, nil))} {
		if strings.Contains(out, "delete_*") || strings.Contains(out, d.Call.SHA256) {
			t.Errorf("hidden tool rendering leaks its pattern or hash: %s", out)
		}
	}
	if s != 400 || !strings.Contains(string(b), `tool \"delete_file\" on \"fs\" is hidden by its hiddenTools configuration`) {
		t.Errorf("daemon: %d %s", s, b)
	}
}

func TestAddRider(t *testing.T) {
	t.Parallel()
	ignored := []string{"colour", "line"}
	strict := `{"type":"object","properties":{"lines":{"type":"integer"}},"additionalProperties":false}`
	open := `{"type":"object","properties":{"lines":{"type":"integer"}}}`
	cases := []struct {
		name, in, schema string
		mirrored         bool // _ignored_options set in structuredContent
		check            func(t *testing.T, out map[string]any)
		same             bool
	}{
		{name: "error result untouched", in: `{"content":[{"type":"text","text":"boom"}],"isError":true}`, same: true},
		{name: "input_required result untouched", in: `{"resultType":"input_required","inputRequests":{"a":{"method":"elicitation/create","params":{}}},"requestState":"s"}`, same: true},
		{name: "no structuredContent: none is made", in: `{"content":[{"type":"text","text":"ok"}]}`,
			check: func(t *testing.T, out map[string]any) {
				if _, ok := out["structuredContent"]; ok {
					t.Errorf("structuredContent made: %v", out)
				}
			}},
		{name: "object structuredContent kept, no outputSchema", in: `{"content":[],"structuredContent":{"lines":12,"_meta":{"a":1}},"_meta":{"k":"v"}}`,
			mirrored: true,
			check: func(t *testing.T, out map[string]any) {
				sc := out["structuredContent"].(map[string]any)
				if sc["lines"].(float64) != 12 || sc["_meta"] == nil || out["_meta"].(map[string]any)["k"] != "v" {
					t.Errorf("fields lost: %v", out)
				}
			}},
		{name: "outputSchema admits the rider", in: `{"content":[],"structuredContent":{"lines":12}}`, schema: open, mirrored: true},
		{name: "outputSchema closed: structuredContent untouched", in: `{"content":[],"structuredContent":{"lines":12}}`, schema: strict,
			check: func(t *testing.T, out map[string]any) {
				if sc := out["structuredContent"].(map[string]any); len(sc) != 1 {
					t.Errorf("structuredContent changed: %v", sc)
				}
			}},
		{name: "outputSchema that does not compile: untouched", in: `{"content":[],"structuredContent":{"lines":12}}`, schema: `{"type":"nope"}`},
		{name: "outputSchema with a remote ref: untouched", in: `{"content":[],"structuredContent":{"lines":12}}`, schema: `{"$ref":"https://example.com/s.json"}`},
		{name: "image content kept", in: `{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"}],"isError":false}`,
			check: func(t *testing.T, out map[string]any) {
				c := out["content"].([]any)
				if c[0].(map[string]any)["type"] != "image" || len(c) != 2 {
					t.Errorf("content %v", c)
				}
			}},
		{name: "_meta not an object: left alone", in: `{"content":[],"_meta":[1]}`,
			check: func(t *testing.T, out map[string]any) {
				if jsonOf(t, out["_meta"]) != `[1]` {
					t.Errorf("_meta %v", out["_meta"])
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out, err := render.AddRider(json.RawMessage(c.in), ignored, json.RawMessage(c.schema))
			if err != nil {
				t.Fatal(err)
			}
			if c.same {
				if string(out) != c.in {
					t.Errorf("changed an error result: %s", out)
				}
				return
			}
			var m map[string]any
			if err := json.Unmarshal(out, &m); err != nil {
				t.Fatal(err)
			}
			content := m["content"].([]any)
			last := content[len(content)-1].(map[string]any)
			var rider map[string]any
			if err := json.Unmarshal([]byte(last["text"].(string)), &rider); err != nil || last["type"] != "text" {
				t.Fatalf("rider item %v: %v", last, err)
			}
			if a := jsonOf(t, rider[render.RiderKey]); a != `["colour","line"]` {
				t.Errorf("rider content %s", a)
			}
			if meta, ok := m["_meta"].(map[string]any); ok {
				if a := jsonOf(t, meta[render.MetaIgnored]); a != `["colour","line"]` {
					t.Errorf("_meta %s", a)
				}
			}
			sc, _ := m["structuredContent"].(map[string]any)
			if _, got := sc[render.RiderKey]; got != c.mirrored {
				t.Errorf("structuredContent %v: rider mirrored %v, want %v", sc, got, c.mirrored)
			}
			if c.check != nil {
				c.check(t, m)
			}
		})
	}
	if _, err := render.AddRider(json.RawMessage(`[1]`), ignored, nil); err == nil {
		t.Error("a non-object result was accepted")
	}
	if out, _ := render.AddRider(json.RawMessage(`{"content":[]}`), nil, nil); string(out) != `{"content":[]}` {
		t.Error("an empty ignored list changed the result")
	}
	many := make([]string, 30)
	for i := range many {
		many[i] = strings.Repeat("k", 100) + string(rune('a'+i%26))
	}
	keys := render.Rider(many)[render.RiderKey].([]string)
	if len(keys) != 21 || keys[20] != "…+10 more" || len([]rune(keys[0])) > 120 {
		t.Errorf("long rider not bounded: %d keys, first %q", len(keys), keys[0])
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPromptBindsTheUnredactedCall(t *testing.T) {
	t.Parallel()
	call := httpPost()
	d := ask(t, call, false, reason(decision.WriteNeedsConfirmation, "needs confirmation"))
	p, err := render.Prompt(call, redact.Of(d, call.Args))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := decision.CallSHA256(call.Server, call.Tool.Name, call.Args)
	if p.SHA256 != want {
		t.Errorf("sha256 %s, want the unredacted call's %s", p.SHA256, want)
	}
	if string(p.Arguments) == "" || strings.Contains(string(p.Arguments), "8xKq0ZtYwV3nR7uLp2sD5fGh") {
		t.Errorf("arguments %s", p.Arguments)
	}
	canon, err := decision.Canonical(json.RawMessage(p.Arguments))
	if err != nil || string(canon) != string(p.Arguments) {
		t.Errorf("arguments are not RFC 8785 canonical: %s", p.Arguments)
	}
	other := httpPost()
	other.Args["url"] = "https://api.example.com/v1/deploys"
	if _, err := render.Prompt(other, redact.Of(d, other.Args)); !errors.Is(err, render.ErrCallMismatch) {
		t.Errorf("prompt for another call: %v, want ErrCallMismatch", err)
	}
	allow := decision.Decision{Outcome: decision.Allow}
	if _, err := render.Prompt(call, redact.Of(allow, call.Args)); !errors.Is(err, render.ErrNotAsk) {
		t.Errorf("prompt for an allow: %v", err)
	}
	el := p.Elicitation()
	if el.Message != p.Text() || el.RequestedSchema["required"].([]string)[0] != "approve" {
		t.Errorf("elicitation %+v", el)
	}
}

func TestApproved(t *testing.T) {
	t.Parallel()
	cases := []struct {
		action  string
		content map[string]any
		want    bool
	}{
		{"accept", map[string]any{"approve": true}, true},
		{"accept", map[string]any{"approve": false}, false},
		{"accept", map[string]any{"approve": "true"}, false},
		{"accept", nil, false},
		{"decline", map[string]any{"approve": true}, false},
		{"cancel", nil, false},
	}
	for _, c := range cases {
		if got := render.Approved(c.action, c.content); got != c.want {
			t.Errorf("Approved(%q, %v) = %v", c.action, c.content, got)
		}
	}
}

func TestRenderSurfaces(t *testing.T) {
	t.Parallel()
	for _, c := range goldenCases(t) {
		for _, surface := range []string{"daemon", "mcp", "cli"} {
			v, err := render.Render(surface, c.call, redact.Of(c.d, c.call.Args))
			if err != nil {
				t.Fatalf("%s/%s: %v", c.name, surface, err)
			}
			got := jsonOf(t, v)
			var want any
			switch {
			case surface == "daemon" && c.d.Outcome == decision.Ask:
				s, b, _ := render.DaemonAsk(c.call, redact.Of(c.d, c.call.Args))
				want = render.HTTPAnswer{Status: s, Body: b}
			case surface == "daemon":
				s, b := render.Daemon(redact.Of(c.d, nil))
				want = render.HTTPAnswer{Status: s, Body: b}
			case c.d.Outcome == decision.Ask:
				p, _ := render.Prompt(c.call, redact.Of(c.d, c.call.Args))
				if surface == "mcp" {
					want = render.ElicitRequest{Method: "elicitation/create", Params: p.Elicitation()}
				} else {
					want = p.Text()
				}
			case surface == "mcp":
				want = render.MCP(redact.Of(c.d, nil))
			default:
				want = render.CLI(redact.Of(c.d, nil))
			}
			if got != jsonOf(t, want) {
				t.Errorf("Render(%s) for %s differs from the surface function", surface, c.name)
			}
		}
	}
	if _, err := render.Render("http", decision.Call{}, redact.Of(decision.Decision{}, nil)); err == nil {
		t.Error("unknown surface accepted")
	}
}

// TestRedactKeepsOrdinaryValues guards against redacting what operators and
// models need to read: paths, digests, ids, counts, prose.
func TestRedactKeepsOrdinaryValues(t *testing.T) {
	t.Parallel()
	args := map[string]any{
		"path":       "/Users/Alice/Documents/Q3Report2024Final/Budget2025Draft.xlsx",
		"commit":     "9fceb02d0ae598e95dc970b74767f19372d61af8",
		"digest":     "sha256:5c7bec01208aaff5140b593ab9af038090ec2e852dccb94f63df1eb856ab2582",
		"request_id": "3f2504e0-4f89-11d3-9a0c-0305e82c3301",
		"max_tokens": 4096,
		"tokenizer":  "cl100k_base",
		"query":      "SELECT name FROM users WHERE id = 42",
		"url":        "https://example.com/search?q=policy&page=2",
		"text":       "Please summarise the meeting notes in three bullet points.",
		"ulid":       "01JDX3K8Q2W7RZ5M0N4B6C9V1T",
		"key":        "reports/2026/q3.csv",
	}
	shown, changed := redact.RedactArgs(args)
	if len(changed) != 0 {
		t.Errorf("redacted ordinary values at %v: %v", changed, shown)
	}
	if jsonOf(t, shown) != jsonOf(t, args) {
		t.Errorf("changed ordinary values: %v", shown)
	}
}

func TestRedactStringKeepsTheSchemeWord(t *testing.T) {
	t.Parallel()
	got := redact.RedactString("curl -H 'Authorization: Bearer 8xKq0ZtYwV3nR7uLp2sD5fGh' https://api.example.com")
	want := "curl -H 'Authorization: Bearer [REDACTED bearer-token, 24 chars]' https://api.example.com"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestRedactIsIdempotentAndDoesNotModify(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 500)
	args := map[string]any{"password": "hunter2-Correct-Horse", "body": long,
		"items": make([]any, 80), "note": "Bearer 8xKq0ZtYwV3nR7uLp2sD5fGh"}
	once, changed := redact.RedactArgs(args)
	twice, again := redact.RedactArgs(once)
	if jsonOf(t, once) != jsonOf(t, twice) {
		t.Errorf("redacting twice changed the result:\n%v\n%v", once, twice)
	}
	if jsonOf(t, changed) != `["/body","/items","/note","/password"]` || len(again) != 0 {
		t.Errorf("changed %v, again %v", changed, again)
	}
	if args["password"] != "hunter2-Correct-Horse" || args["body"] != long {
		t.Error("RedactArgs modified its input")
	}
	body := once["body"].(string)
	if !strings.HasSuffix(body, "…[cut, 500 chars in full]") || len([]rune(body)) > redact.MaxValueChars+30 {
		t.Errorf("long value cut wrong: %q", body)
	}
	d := decision.Decision{Outcome: decision.Deny, Reasons: []decision.Reason{{Code: decision.ArgumentRuleViolation,
		Message: "x", Violations: []decision.Violation{{Path: "/password", Value: "hunter2-Correct-Horse"}}}}}
	r1 := redact.Redact(d, nil)
	if jsonOf(t, r1) != jsonOf(t, redact.Redact(r1, nil)) {
		t.Error("Redact is not idempotent")
	}
	if d.Reasons[0].Violations[0].Value != "hunter2-Correct-Horse" {
		t.Error("Redact modified its input")
	}
}

// TestRedactKeepsTheClearCommand: the clear command of an
// UnknownOutcomePending reason comes out of Redact whole, in details.clear
// and in its message, even when its state dir looks like a random
// credential; a secret anywhere else in the message, and a look-alike in
// another code's details, are still redacted.
func TestRedactKeepsTheClearCommand(t *testing.T) {
	t.Parallel()
	const state = "/tmp/TestPrintedClearCommandRunseval_text266577991/001"
	const clear = "mcpx-policy writes clear fs --state-dir " + state + " --reason '<what you found on the server>'"
	const secret = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
	call := decision.Call{Server: "fs", Tool: decision.Tool{Name: "write_file"}, Args: map[string]any{"path": "/w/a"}}
	r := reason(decision.UnknownOutcomePending, "fs.write_file: "+secret+"; no further writes to fs until an operator checks what happened and clears them with: "+clear)
	r.Details = map[string]any{"clear": clear}
	other := reason(decision.OverrideDeny, "see "+clear)
	other.Details = map[string]any{"clear": clear}
	d := redact.Redact(deny(t, call, true, r, other), nil)
	got := d.Reasons[0]
	if got.Details["clear"] != clear || !strings.HasSuffix(got.Message, "clears them with: "+clear) {
		t.Errorf("the clear command did not come out whole: %q / %v", got.Message, got.Details)
	}
	if strings.Contains(got.Message, secret) {
		t.Errorf("a secret beside the clear command was kept: %q", got.Message)
	}
	if strings.Contains(jsonOf(t, d.Reasons[1]), state) {
		t.Errorf("another code's look-alike command was kept: %s", jsonOf(t, d.Reasons[1]))
	}
}

// TestRedactKeepsTheAcceptCommand: the accept command of a
// ToolDefinitionChanged reason comes out of Redact whole, in
// details.accept and in its message, even when its state dir looks like a
// random credential; a secret elsewhere in the message, a command of
// another kind in details.accept, and the same command under another
// code, are still redacted.
func TestRedactKeepsTheAcceptCommand(t *testing.T) {
	t.Parallel()
	const state = "/tmp/TestPrintedAcceptCommandRunseval2711938455/001"
	sum := strings.Repeat("ab", 32)
	accept := "mcpx-policy pins accept fs write_file --sha256 " + sum + " --state-dir " + state
	const secret = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
	call := decision.Call{Server: "fs", Tool: decision.Tool{Name: "write_file"}, Args: map[string]any{"path": "/w/a"}}
	r := reason(decision.ToolDefinitionChanged, "fs.write_file: "+secret+" changed; refused until an operator reviews the change and accepts it with: "+accept)
	r.Details = map[string]any{"accept": accept, "sha256": sum}
	notAccept := reason(decision.ToolDefinitionChanged, "fs.write_file: accept it with: rm -rf "+state)
	notAccept.Details = map[string]any{"accept": "rm -rf " + state}
	other := reason(decision.OverrideDeny, "see "+accept)
	other.Details = map[string]any{"accept": accept}
	d := redact.Redact(deny(t, call, true, r, notAccept, other), nil)
	got := d.Reasons[0]
	if got.Details["accept"] != accept || !strings.HasSuffix(got.Message, "accepts it with: "+accept) {
		t.Errorf("the accept command did not come out whole: %q / %v", got.Message, got.Details)
	}
	if strings.Contains(got.Message, secret) {
		t.Errorf("a secret beside the accept command was kept: %q", got.Message)
	}
	for _, r := range d.Reasons[1:] {
		if strings.Contains(jsonOf(t, r), state) {
			t.Errorf("a look-alike was kept: %s", jsonOf(t, r))
		}
	}
}

// TestLedgerUnreadableWritesCommand: the writes command in a
// LedgerUnreadable reason's details comes out of Redact whole even when
// its state dir looks like a random credential, and the CLI text names
// it; the message — an agent's, path-free — stays as it is.
func TestLedgerUnreadableWritesCommand(t *testing.T) {
	t.Parallel()
	const state = "/tmp/TestPrintedWritesCommandRuns3329174406/001"
	const msg = "fs.write_file: the unknown-outcome ledger cannot be read (corrupt or unreadable; an operator runs 'mcpx-policy writes' to see why), so no write is allowed until it is repaired"
	call := decision.Call{Server: "fs", Tool: decision.Tool{Name: "write_file"}, Args: map[string]any{"path": "/w/a"}}
	withWrites := func(cmd string) decision.Decision {
		r := reason(decision.LedgerUnreadable, msg)
		r.Details = map[string]any{"writes": cmd}
		return deny(t, call, true, r)
	}
	engine := "mcpx-policy writes --state-dir " + state
	if got := redact.Redact(withWrites(engine), nil).Reasons[0]; got.Details["writes"] != engine || got.Message != msg {
		t.Errorf("Redact: %q / %v", got.Message, got.Details)
	}
	if got := redact.Redact(withWrites("rm -rf "+state), nil).Reasons[0]; strings.Contains(jsonOf(t, got), state) {
		t.Errorf("a look-alike was kept: %s", jsonOf(t, got))
	}
	if got := render.CLI(redact.Of(withWrites(engine), nil)); !strings.Contains(got, "\n    see why with: "+engine+"\n") {
		t.Errorf("CLI text does not name %q:\n%s", engine, got)
	}
}
