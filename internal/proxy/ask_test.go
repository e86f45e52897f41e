package proxy_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/proxy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// recordingServer is a Go SDK server whose tool "write" records every call
// it runs, with the inputResponses and requestState it was sent.
type recordingServer struct {
	*mcp.Server
	mu  sync.Mutex
	ran []string
}

func newRecordingServer() *recordingServer {
	s := &recordingServer{Server: mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)}
	input := map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}
	s.AddTool(&mcp.Tool{Name: "write", InputSchema: input}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		entry := string(req.Params.Arguments)
		if req.Params.RequestState != "" || req.Params.InputResponses != nil {
			entry += " with requestState " + req.Params.RequestState
		}
		s.ran = append(s.ran, entry)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "written"}}}, nil
	})
	return s
}

func (s *recordingServer) calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ran...)
}

const askConfig = "version: 1\npolicy: {write: ask}\nservers: {s: {}}\n"

// person approves (or declines) every confirmation and records the prompts.
type person struct {
	approve bool
	mu      sync.Mutex
	asked   []string
}

func (p *person) handler(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	p.mu.Lock()
	p.asked = append(p.asked, req.Params.Message)
	p.mu.Unlock()
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": p.approve}}, nil
}

func (p *person) prompts() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.asked...)
}

// TestAskThroughInputRequired: a 2026-07-28 client gets the ask as an
// input_required result, its SDK shows the form and retries with the
// answer; approved, the call runs once, and the server sees neither the
// proxy's requestState nor its input response. Declined, it does not run.
func TestAskThroughInputRequired(t *testing.T) {
	t.Parallel()
	for _, approve := range []bool{true, false} {
		srv := newRecordingServer()
		p := &person{approve: approve}
		r := newRigAt(t, "2026-07-28", askConfig, proxy.Options{}, srv.Server, &mcp.ClientOptions{ElicitationHandler: p.handler})
		if v := r.client.InitializeResult().ProtocolVersion; v != "2026-07-28" {
			t.Fatalf("the session speaks %s; want 2026-07-28", v)
		}
		res, err := r.client.CallTool(context.Background(), &mcp.CallToolParams{Name: "write", Arguments: map[string]any{"text": "hi"}})
		if err != nil {
			t.Fatal(err)
		}
		asked := p.prompts()
		if len(asked) != 1 || !strings.Contains(asked[0], "Confirm this call to s.write?") || !strings.Contains(asked[0], `{"text":"hi"}`) {
			t.Errorf("asked %q; want one confirmation of the exact call", asked)
		}
		switch {
		case approve && (res.IsError || resultText(res) != "written"):
			t.Errorf("approved: %s", resultText(res))
		case !approve && (!res.IsError || !strings.Contains(resultText(res), "ConfirmationDeclined")):
			t.Errorf("declined: %s", resultText(res))
		}
		want := []string{}
		if approve {
			want = []string{`{"text":"hi"}`}
		}
		if got := srv.calls(); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("approve=%v: the server ran %q; want %q", approve, got, want)
		}
	}
}

// manualClient is a 2026-07-28 client that handles input_required itself,
// so a test can replay or alter its retries.
func manualClient(t *testing.T, srv *mcp.Server) *rig {
	t.Helper()
	return newRigAt(t, "2026-07-28", askConfig, proxy.Options{}, srv,
		&mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				t.Error("the proxy sent elicitation/create to a 2026-07-28 client")
				return nil, nil
			}})
}

var yes = mcp.InputResponseMap{"mcpx-policy/confirm": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}}

// TestInputRequiredRetryIsSingleUseAndBound: the requestState of the
// proxy's input_required approves exactly that call once. A replayed
// retry, a retry with other arguments and a forged requestState are
// refused, and the server runs only the approved call.
func TestInputRequiredRetryIsSingleUseAndBound(t *testing.T) {
	t.Parallel()
	srv := newRecordingServer()
	r := manualClient(t, srv.Server)
	ctx := context.Background()
	ask := func(text string) *mcp.CallToolResult {
		t.Helper()
		res, err := r.client.CallTool(ctx, &mcp.CallToolParams{Name: "write", Arguments: map[string]any{"text": text}})
		if err != nil || !res.NeedsInput() || !strings.HasPrefix(res.RequestState, "mcpx-policy/") || len(res.RequestState) < len("mcpx-policy/")+26 {
			t.Fatalf("ask: %+v %v; want input_required with the proxy's requestState", res, err)
		}
		form, ok := res.InputRequests["mcpx-policy/confirm"].(*mcp.ElicitParams)
		if !ok || !strings.Contains(form.Message, `"text":"`+text+`"`) {
			t.Fatalf("input request %#v; want the confirmation form of the call", res.InputRequests)
		}
		return res
	}
	retry := func(text, state string) *mcp.CallToolResult {
		t.Helper()
		res, err := r.client.CallTool(ctx, &mcp.CallToolParams{Name: "write", Arguments: map[string]any{"text": text},
			InputResponses: yes, RequestState: state})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	first := ask("one")
	if res := retry("one", first.RequestState); res.IsError || resultText(res) != "written" {
		t.Fatalf("the approved retry: %s", resultText(res))
	}
	if res := retry("one", first.RequestState); !res.IsError || !strings.Contains(resultText(res), "ConfirmationUnavailable") ||
		!strings.Contains(resultText(res), "not an ask pending in this session") {
		t.Errorf("a replayed retry: %s; want it refused", resultText(res))
	}

	second := ask("two")
	if res := retry("three", second.RequestState); !res.IsError || !strings.Contains(resultText(res), "ConfirmationUnavailable") {
		t.Errorf("a retry with other arguments: %s; want it refused", resultText(res))
	}
	if res := retry("two", second.RequestState); !res.IsError {
		t.Errorf("the original call after an altered retry voided its approval: %s; want it refused", resultText(res))
	}
	if res := retry("four", "mcpx-policy/forged0000000000000000000000000"); !res.IsError || !strings.Contains(resultText(res), "not an ask pending") {
		t.Errorf("a forged requestState: %s; want it refused", resultText(res))
	}
	if got := srv.calls(); len(got) != 1 || got[0] != `{"text":"one"}` {
		t.Errorf("the server ran %q; want only the approved call, once, without the proxy's state", got)
	}
}

// TestServersOwnInputRequiredPassesThrough: a server's own input_required
// result reaches the client untouched, and the retry with the server's
// requestState and inputResponses reaches the server as sent.
func TestServersOwnInputRequiredPassesThrough(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	var mu sync.Mutex
	var seen []string
	srv.AddTool(&mcp.Tool{Name: "pick", InputSchema: map[string]any{"type": "object"}, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			b, _ := json.Marshal(req.Params.InputResponses)
			mu.Lock()
			seen = append(seen, req.Params.RequestState+" "+string(b))
			mu.Unlock()
			if req.Params.RequestState == "" {
				return &mcp.CallToolResult{RequestState: "server-state", InputRequests: mcp.InputRequestMap{
					"colour": &mcp.ElicitParams{Message: "Which colour?", RequestedSchema: map[string]any{"type": "object",
						"properties": map[string]any{"c": map[string]any{"type": "string"}}}}}}, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "picked"}}}, nil
		})
	var asked []string
	elicit := func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = append(asked, req.Params.Message)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"c": "red"}}, nil
	}
	r := newRigAt(t, "2026-07-28", askConfig, proxy.Options{}, srv, &mcp.ClientOptions{ElicitationHandler: elicit})
	res, err := r.client.CallTool(context.Background(), &mcp.CallToolParams{Name: "pick", Arguments: map[string]any{}})
	if err != nil || res.IsError || resultText(res) != "picked" {
		t.Fatalf("pick: %v %v", res, err)
	}
	if len(asked) != 1 || asked[0] != "Which colour?" {
		t.Errorf("asked %q; want the server's own question", asked)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[1] != `server-state {"colour":{"action":"accept","content":{"c":"red"}}}` {
		t.Errorf("the server saw %q; want its own state and the answer back", seen)
	}
}

// TestAskWithoutAFormIsUnavailable: a 2026-07-28 client that declares no
// elicitation cannot be asked: ConfirmationUnavailable, never an allow.
func TestAskWithoutAFormIsUnavailable(t *testing.T) {
	t.Parallel()
	srv := newRecordingServer()
	r := newRigAt(t, "2026-07-28", askConfig, proxy.Options{}, srv.Server)
	res, err := r.client.CallTool(context.Background(), &mcp.CallToolParams{Name: "write", Arguments: map[string]any{"text": "hi"}})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "ConfirmationUnavailable") {
		t.Fatalf("%v %v; want ConfirmationUnavailable", res, err)
	}
	if got := srv.calls(); len(got) != 0 {
		t.Errorf("the server ran %q", got)
	}
}
