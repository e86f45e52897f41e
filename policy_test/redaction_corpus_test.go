package policy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/secretcorpus"
	"github.com/mcpx/mcpx-policy/internal/sweep"
)

// The secret corpus on every output: every secret of the corpus (cloud
// keys, tokens, private keys, JWTs, passwords, DSNs, basic and bearer
// credentials, in a secret-named key, name/value objects, header lists,
// [K, V] pairs, argument vectors, KEY=VALUE text, YAML/INI/.env blocks,
// JSON text, command lines), and random nestings of it, is sent through
// the built binaries — the proxy (its refusals, its elicitation and
// input_required prompts, its log), serve (/v1/decide on every surface,
// AuthZEN, the approvals listing and approvals.log, the decision log, the
// recorded calls, /metrics), eval (JSON and text, asks and denies) — and
// a stock OPA serving the bundle. No output may show one.

// corpusAsk asks for every write; corpusDeny lets writes through but
// refuses every corpus call twice over — argument rules whose violations
// name the arguments at two depths, and an override quoting them whole.
const (
	corpusAsk  = "version: 1\npolicy:\n  write: ask\n  unknownArgs: off\nservers:\n  notes: {}\n"
	corpusDeny = `version: 1
policy:
  write: allow
  unknownArgs: off
  overrides: [overrides/]
servers:
  notes:
    argumentRules:
      - id: strings-only
        tools: ["*"]
        description: every argument is a string
        schema: {additionalProperties: {type: string}}
      - id: numbers-below
        tools: ["*"]
        description: what is inside an argument is a number
        schema: {additionalProperties: {additionalProperties: {type: number}, items: {type: number}}}
`
	corpusEcho = `package mcpx.overrides

deny contains {
	"code": "Echo",
	"message": sprintf("refusing %s", [json.marshal(input.args)]),
	"args": input.args,
} if input.args
`
)

// addNote is the notes server's add_note as it lists it.
var addNote = decision.Tool{Name: "add_note", Annotations: &decision.Annotations{DestructiveHint: new(bool)},
	InputSchema: object("text")}

// corpusBatch is a few corpus cases as one call's arguments.
type corpusBatch struct {
	args  map[string]any
	leaks []string
}

// corpusBatches groups the corpus, its secrets in structure alone and 100
// random nestings into calls of 8 cases each, small enough to be asked.
// A quick run sends every sweep.Stride-th batch through each surface (a
// full run all 84): every case still meets the redaction in process, in Go
// and in Rego, on every run (the root package's secrets_test.go,
// internal/engine's TestPredicatesImplyRegoOnTheSecretCorpus).
func corpusBatches(t *testing.T) []corpusBatch {
	t.Helper()
	var out []corpusBatch
	for i, b := range allCorpusBatches(t) {
		if sweep.Take(i) {
			out = append(out, b)
		}
	}
	return out
}

// allCorpusBatches is every batch of the corpus.
func allCorpusBatches(t *testing.T) []corpusBatch {
	t.Helper()
	cases := append(secretcorpus.Cases(), secretcorpus.Shapes("hunter2")...)
	rng := rand.New(rand.NewPCG(10, 23))
	for i := 0; i < 100; i++ {
		cases = append(cases, secretcorpus.Nest(rng, cases[rng.IntN(len(cases))], 1+rng.IntN(4)))
	}
	var out []corpusBatch
	for i, c := range cases {
		if i%8 == 0 {
			out = append(out, corpusBatch{args: map[string]any{"text": fmt.Sprintf("batch %d", len(out))}})
		}
		b := &out[len(out)-1]
		b.args[fmt.Sprintf("c%03d", i)] = c.Args
		b.leaks = append(b.leaks, c.Leaks...)
	}
	return out
}

// allLeaks are the leaks of every batch.
func allLeaks(batches []corpusBatch) []string {
	var out []string
	for _, b := range batches {
		out = append(out, b.leaks...)
	}
	return out
}

// TestRedactionCorpusStockOPA: a stock OPA serving the bundle — all a
// fleet gets, with no rendering after it — answers every corpus call with
// its violations and the override's message and details, none showing a
// secret.
func TestRedactionCorpusStockOPA(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a stock OPA server")
	}
	t.Parallel()
	dir := writeFiles(t, map[string]string{"mcpx-policy.yaml": corpusDeny, "overrides/echo.rego": corpusEcho})
	opts := mcpxpolicy.Options{ConfigPaths: []string{filepath.Join(dir, "mcpx-policy.yaml")}, Env: []string{}, StateDir: filepath.Join(dir, "state")}
	eng, err := mcpxpolicy.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	tarball := filepath.Join(dir, "bundle.tar.gz")
	writeBundle(t, opts, tarball, nil)
	base := opaServer(t, tarball)
	for i, b := range corpusBatches(t) {
		input, err := eng.OPAInput(decision.Call{Server: "notes", Tool: addNote, Args: b.args})
		if err != nil {
			t.Fatal(err)
		}
		status, result, raw := postDecision(t, base, input)
		if status != http.StatusOK || !strings.Contains(string(result), "ArgumentRuleViolation") || !strings.Contains(string(result), "OverrideDeny") {
			t.Fatalf("batch %d: stock OPA answered %d %.300s; want both denies", i, status, raw)
		}
		assertHidden(t, fmt.Sprintf("stock OPA's decision (batch %d)", i), string(result), b.leaks)
	}
}

// TestRedactionCorpusServe: serve answers every corpus call — a deny on
// each surface and through AuthZEN, an ask put on hold — and its answers,
// the approvals listing, approvals.log, the decision log, the recorded
// calls and the metrics show no secret.
func TestRedactionCorpusServe(t *testing.T) {
	t.Parallel()
	batches := corpusBatches(t)
	for _, tc := range []struct {
		name, config string
		outcome      string
	}{{"deny", corpusDeny, "deny"}, {"ask", corpusAsk, "ask"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := writeFiles(t, map[string]string{"mcpx-policy.yaml": tc.config, "overrides/echo.rego": corpusEcho, "token": approvalToken + "\n"})
			state, logPath, rec := filepath.Join(dir, "state"), filepath.Join(dir, "decisions.log"), filepath.Join(dir, "record")
			addr := freeLoopbackAddr(t)
			cmd := exec.Command(filepath.Join(binDir, "mcpx-policy"), "serve", "--config", filepath.Join(dir, "mcpx-policy.yaml"),
				"--state-dir", state, "--addr", addr, "--decision-log", logPath, "--record", rec, "--token-file", filepath.Join(dir, "token"))
			cmd.Env = cleanEnv()
			cmd.Stdout = io.Discard
			srv := startServe(t, cmd, addr)
			post := func(path string, body any) string {
				t.Helper()
				raw, err := json.Marshal(body)
				if err != nil {
					t.Fatal(err)
				}
				resp, err := http.Post(srv.base+path, "application/json", bytes.NewReader(raw))
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				out, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("%s: %d %.300s", path, resp.StatusCode, out)
				}
				return string(out)
			}
			get := func(path string) string {
				t.Helper()
				req, _ := http.NewRequest(http.MethodGet, srv.base+path, nil)
				req.Header.Set("Authorization", "Bearer "+approvalToken)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				out, _ := io.ReadAll(resp.Body)
				return string(out)
			}
			surfaces := []string{"daemon", "mcp", "cli"}
			for i, b := range batches {
				// a principal a batch: each is its own caller's first ask
				// (one caller may keep 16 live requests)
				out := post("/v1/decide", map[string]any{"server": "notes", "tool": addNote, "args": b.args, "surface": surfaces[i%3],
					"principal": map[string]any{"id": fmt.Sprintf("corpus-%d", i)}})
				if !strings.Contains(out, `"outcome":"`+tc.outcome+`"`) {
					t.Fatalf("batch %d: /v1/decide answered %.400s; want %s", i, out, tc.outcome)
				}
				if tc.outcome == "ask" && !strings.Contains(out, `"approval":{`) {
					t.Fatalf("batch %d: the ask was not put on hold: %.400s", i, out)
				}
				assertHidden(t, fmt.Sprintf("/v1/decide (batch %d)", i), out, b.leaks)
				az := post("/access/v1/evaluation", map[string]any{"subject": map[string]any{"type": "user", "id": "ana"},
					"action": map[string]any{"name": "tools/call"}, "resource": map[string]any{"type": "mcp_tool", "id": "notes/add_note",
						"properties": map[string]any{"annotations": addNote.Annotations, "inputSchema": addNote.InputSchema}},
					"context": map[string]any{"arguments": b.args}})
				assertHidden(t, fmt.Sprintf("AuthZEN (batch %d)", i), az, b.leaks)
			}
			leaks := allLeaks(batches)
			if tc.outcome == "ask" {
				list := get("/v1/approvals")
				if strings.Count(list, `"shown":`) != len(batches) {
					t.Fatalf("the approvals listing holds %d prompts, want %d", strings.Count(list, `"shown":`), len(batches))
				}
				assertHidden(t, "GET /v1/approvals", list, leaks)
				store, err := os.ReadFile(filepath.Join(state, "approvals.log"))
				if err != nil {
					t.Fatal(err)
				}
				assertHidden(t, "approvals.log", string(store), leaks)
			}
			assertHidden(t, "/metrics", get("/metrics"), leaks)
			log, err := os.ReadFile(logPath)
			if err != nil || bytes.Count(log, []byte("\n")) != 2*len(batches) { // /v1/decide and AuthZEN
				t.Fatalf("the decision log: %d lines, %v", bytes.Count(log, []byte("\n")), err)
			}
			assertHidden(t, "the decision log", string(log), leaks)
			files, err := os.ReadDir(rec)
			if err != nil || len(files) < len(batches) {
				t.Fatalf("recorded %d calls, want %d (%v)", len(files), len(batches), err)
			}
			for _, f := range files {
				b, err := os.ReadFile(filepath.Join(rec, f.Name()))
				if err != nil {
					t.Fatal(err)
				}
				assertHidden(t, "the recorded call "+f.Name(), string(b), leaks)
			}
			assertHidden(t, "serve's stderr", srv.stderr.String(), leaks)
		})
	}
}

// TestRedactionCorpusEval: eval of every corpus call, as JSON and as
// text, on every surface: denies with their violations and the
// override's echo, and asks with their prompts and approval requests. A
// quick run sends each call on one surface (call i on the (i mod 3)th),
// so that every surface and both formats see a third of the corpus each
// and every call is seen in both formats; make test-full sends every
// call on every surface.
func TestRedactionCorpusEval(t *testing.T) {
	t.Parallel()
	batches := corpusBatches(t)
	surfaces := []string{"daemon", "mcp", "cli"}
	// runs[r][i] is the surface batch i is sent on in eval run r.
	var runs [][]string
	if sweep.Full() {
		for _, s := range surfaces {
			runs = append(runs, slices.Repeat([]string{s}, len(batches)))
		}
	} else {
		mixed := make([]string, len(batches))
		for i := range mixed {
			mixed[i] = surfaces[i%len(surfaces)]
		}
		runs = [][]string{mixed}
	}
	for _, tc := range []struct {
		config string
		exit   int
	}{{corpusDeny, 2}, {corpusAsk, 3}} {
		dir := writeFiles(t, map[string]string{"mcpx-policy.yaml": tc.config, "overrides/echo.rego": corpusEcho})
		for r, run := range runs {
			var paths []string
			for i, b := range batches {
				raw, err := json.Marshal(map[string]any{"server": "notes", "tool": addNote, "args": b.args, "surface": run[i],
					"principal": map[string]any{"id": fmt.Sprintf("corpus-%d", i)}}) // one caller may keep 16 live requests
				if err != nil {
					t.Fatal(err)
				}
				p := filepath.Join(dir, fmt.Sprintf("call-%d-%03d.json", r, i))
				if err := os.WriteFile(p, raw, 0o644); err != nil {
					t.Fatal(err)
				}
				paths = append(paths, p)
			}
			for _, format := range []string{"json", "text"} {
				where := fmt.Sprintf("eval run %d (surfaces %s…) --format %s", r, strings.Join(run[:3], ", "), format)
				// A state dir each: every ask is put on hold, under the cap.
				state := filepath.Join(dir, fmt.Sprintf("state-%d-%s", r, format))
				args := append([]string{"eval", "--config", filepath.Join(dir, "mcpx-policy.yaml"), "--state-dir", state,
					"--format", format}, paths...)
				stdout, stderr, code := runSplit(t, args...)
				if code != tc.exit {
					t.Fatalf("%s: exit %d; want %d\n%.2000s", where, code, tc.exit, stderr)
				}
				assertHidden(t, fmt.Sprintf("%s (exit %d)", where, tc.exit), stdout+stderr, allLeaks(batches))
				if tc.exit != 3 {
					continue
				}
				// The asks eval put on hold, as `mcpx-policy approvals`
				// lists them to a person at a terminal.
				for _, list := range []string{"json", "text"} {
					cmd := exec.Command(filepath.Join(binDir, "mcpx-policy"), "approvals", "--state-dir", state, "--format", list)
					cmd.Env = cleanEnv()
					out, err := cmd.CombinedOutput()
					if err != nil || strings.Count(string(out), "Confirm this call") < len(batches) {
						t.Fatalf("approvals --format %s: %v; want %d prompts\n%.2000s", list, err, len(batches), out)
					}
					assertHidden(t, "approvals --format "+list, string(out), allLeaks(batches))
				}
			}
		}
	}
}

// TestRedactionCorpusProxy: the built proxy in front of the notes server,
// with the official Go SDK client: an ask reaches the person as an
// elicitation (2025-11-25) or an input_required result (2026-07-28) whose
// prompt shows no secret, the person declines, and the refusals — of the
// decline, and of the rules and the override that quote the arguments —
// show none either; nor do approvals.log and the proxy's log.
func TestRedactionCorpusProxy(t *testing.T) {
	t.Parallel()
	batches := corpusBatches(t)
	leaks := allLeaks(batches)
	server := goServer(t, "../e2e/notesserver")
	for _, tc := range []struct{ name, config, version string }{
		{"ask by elicitation", corpusAsk, "2025-11-25"},
		{"ask by input_required", corpusAsk, "2026-07-28"},
		{"deny", corpusDeny, "2025-11-25"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			rec := filepath.Join(t.TempDir(), "record")
			g := newGate(t, "notes", tc.config, "--record", rec)
			if err := os.MkdirAll(filepath.Join(filepath.Dir(g.config), "overrides"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(filepath.Dir(g.config), "overrides", "echo.rego"), []byte(corpusEcho), 0o644); err != nil {
				t.Fatal(err)
			}
			notes := filepath.Join(t.TempDir(), "notes.txt")
			person := &answers{approve: false}
			client := mcp.NewClient(&mcp.Implementation{Name: "mcpx-policy-e2e", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: person.handler})
			cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: g.command(t, server, notes)}, &mcp.ClientSessionOptions{ProtocolVersion: tc.version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			for i, b := range batches {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add_note", Arguments: b.args})
				if err != nil {
					t.Fatalf("batch %d: %v", i, err)
				}
				want := "ConfirmationDeclined"
				if tc.config == corpusDeny {
					want = "ArgumentRuleViolation"
				}
				if code := refusal(res); code != want {
					t.Fatalf("batch %d: refusal %q, want %s: %.400s", i, code, want, text(res))
				}
				sc, _ := json.Marshal(res.StructuredContent)
				meta, _ := json.Marshal(res.Meta)
				assertHidden(t, fmt.Sprintf("the refusal (batch %d)", i), text(res)+"\n"+string(sc)+"\n"+string(meta), b.leaks)
			}
			prompts := person.prompts()
			if tc.config == corpusAsk && len(prompts) != len(batches) {
				t.Fatalf("the person was asked %d times, want %d", len(prompts), len(batches))
			}
			assertHidden(t, "the prompts", strings.Join(prompts, "\n"), leaks)
			if store, err := os.ReadFile(filepath.Join(g.state, "approvals.log")); err == nil {
				assertHidden(t, "approvals.log", string(store), leaks)
			} else if tc.config == corpusAsk {
				t.Fatal(err)
			}
			cs.Close()
			assertHidden(t, "the proxy's log", g.stderr.String(), leaks)
			files, err := os.ReadDir(rec)
			if err != nil || len(files) < len(batches) {
				t.Fatalf("the proxy recorded %d calls, want %d (%v)", len(files), len(batches), err)
			}
			for _, f := range files {
				b, err := os.ReadFile(filepath.Join(rec, f.Name()))
				if err != nil {
					t.Fatal(err)
				}
				assertHidden(t, "the proxy's recorded call "+f.Name(), string(b), leaks)
			}
			if b, _ := os.ReadFile(notes); len(b) != 0 {
				t.Errorf("a refused call ran: %q", b)
			}
		})
	}
}
