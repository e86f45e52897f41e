package render_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/redact"
	"github.com/mcpx/mcpx-policy/internal/render"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// golden compares got with testdata/golden/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/render -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run with -update to accept):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := render.JSON(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sampleResult is a successful tools/call result as a server returns it.
const sampleResult = `{"content":[{"type":"text","text":"package main\n\nfunc main() {}\n"}],"isError":false}`

// riderCases are the results the rider is added to in the goldens: one
// with text content only, one with structuredContent whose outputSchema
// admits the rider, one whose outputSchema (additionalProperties: false)
// does not.
var riderCases = []struct{ suffix, result, outputSchema string }{
	{".rider.json", sampleResult, ""},
	{".rider-structured.json", `{"content":[{"type":"text","text":"{\"lines\":12}"}],"structuredContent":{"lines":12}}`,
		`{"type":"object","properties":{"lines":{"type":"integer"}},"required":["lines"]}`},
	{".rider-strict.json", `{"content":[{"type":"text","text":"{\"lines\":12}"}],"structuredContent":{"lines":12},"_meta":{"k":"v"}}`,
		`{"type":"object","properties":{"lines":{"type":"integer"}},"additionalProperties":false}`},
}

// TestGoldenUnknownOutcome renders the answer to a write whose outcome was
// lost, with the clear command spelled for the proxy's state dir.
func TestGoldenUnknownOutcome(t *testing.T) {
	t.Parallel()
	r := render.UnknownOutcome("fs", "write_file", "3f9c2a1b7d4e8f60", "no answer within 10m0s",
		"mcpx-policy writes clear fs --id 3f9c2a1b7d4e8f60 --state-dir '/var/lib/mcpx policy' --reason '<what you found on the server>'")
	golden(t, "UnknownOutcome.mcp.json", mustJSON(t, r))
}

// TestGolden renders every reason code on every surface: daemon, mcp, cli,
// and for the ask codes the prompt as the CLI, the daemon and MCP
// elicitation show it. IgnoredArguments, a warning, is an allow whose
// result gets the rider.
func TestGolden(t *testing.T) {
	t.Parallel()
	for _, c := range goldenCases(t) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			status, body := render.Daemon(redact.Of(c.d, nil))
			golden(t, c.name+".daemon.json", mustJSON(t, render.HTTPAnswer{Status: status, Body: body}))
			golden(t, c.name+".mcp.json", mustJSON(t, render.MCP(redact.Of(c.d, nil))))
			golden(t, c.name+".cli.txt", []byte(render.CLI(redact.Of(c.d, nil))))

			if c.d.Outcome == decision.Ask {
				p, err := render.Prompt(c.call, redact.Of(c.d, c.call.Args))
				if err != nil {
					t.Fatal(err)
				}
				golden(t, c.name+".ask.cli.txt", []byte(p.Text()))
				s, b, err := render.DaemonAsk(c.call, redact.Of(c.d, c.call.Args))
				if err != nil {
					t.Fatal(err)
				}
				golden(t, c.name+".ask.daemon.json", mustJSON(t, render.HTTPAnswer{Status: s, Body: b}))
				golden(t, c.name+".ask.mcp.json", mustJSON(t, render.ElicitRequest{Method: "elicitation/create", Params: p.Elicitation()}))
				golden(t, c.name+".ask.mcp-input-required.json", mustJSON(t, p.InputRequired("mcpx-policy/REQUEST-STATE")))
			}
			if ig := render.Ignored(c.d); len(ig) > 0 {
				for _, r := range riderCases {
					out, err := render.AddRider(json.RawMessage(r.result), ig, json.RawMessage(r.outputSchema))
					if err != nil {
						t.Fatal(err)
					}
					var v any
					if err := json.Unmarshal(out, &v); err != nil {
						t.Fatal(err)
					}
					golden(t, c.name+r.suffix, mustJSON(t, v))
				}
			}
		})
	}
}

// TestGoldenCoversEveryCode fails when a code of the closed set has no
// golden case, so a new code cannot ship without its renderings.
func TestGoldenCoversEveryCode(t *testing.T) {
	t.Parallel()
	have := map[string]bool{}
	for _, c := range goldenCases(t) {
		have[c.name] = true
		if c.name == "Allow" {
			continue
		}
		code := decision.Code(c.name)
		if !code.Known() {
			t.Errorf("case %s is not a reason code", c.name)
		}
		if c.d.Outcome != decision.Allow && c.d.First().Code != code {
			t.Errorf("case %s decides with %s", c.name, c.d.First().Code)
		}
	}
	for _, info := range decision.Codes {
		if !have[string(info.Code)] {
			t.Errorf("no golden case for %s", info.Code)
		}
		for _, surface := range []string{"daemon.json", "mcp.json", "cli.txt"} {
			if _, err := os.Stat(filepath.Join("testdata", "golden", string(info.Code)+"."+surface)); err != nil && !*update {
				t.Errorf("missing golden %s.%s", info.Code, surface)
			}
		}
		if info.Outcome == decision.Ask {
			for _, surface := range []string{"ask.cli.txt", "ask.daemon.json", "ask.mcp.json"} {
				if _, err := os.Stat(filepath.Join("testdata", "golden", string(info.Code)+"."+surface)); err != nil && !*update {
					t.Errorf("missing golden %s.%s", info.Code, surface)
				}
			}
		}
	}
}
