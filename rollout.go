package mcpxpolicy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/config"
	"github.com/mcpx/mcpx-policy/internal/engine"
	"github.com/mcpx/mcpx-policy/internal/rollout"
)

// Rolling a config change out (docs/rollout.md): DiffConfigs says what a
// change does to every tool before it ships.

// ConfigDiff is what changes from one config to another (DiffConfigs):
// each change of a tool's facts (or, without a catalog, of a server's
// settings as written) marked loosening, tightening or changed.
type ConfigDiff struct {
	// Loosening, Tightening and Other count the changes each way; all 0
	// when the configs decide alike.
	Loosening, Tightening, Other int
	// Text is the diff as `mcpx-policy diff` prints it: what was compared,
	// each change by server and tool, and the counts.
	Text string
	// JSON is the diff as `mcpx-policy diff --format json` prints it:
	// "catalog", "tools", "changes" (server, tool, field, item, old, new,
	// direction, and for a tool that stops being hidden its facts) and
	// the counts.
	JSON json.RawMessage
}

// factsQuery reads, for each probe (an input document of one catalog
// tool), the facts the policy computes for the tool and whether a call to
// it is a write: the same rules the decision reads.
const factsQuery = `[{"i": i, "facts": f, "write": w, "labels": l} |
	some i, p in input.probes
	f := data.mcpx.lib.tool.facts(p.server, p.tool.name)
	w := data.mcpx.lib.call.write with input as p
	l := data.mcpx.lib.call.labels with input as p
]`

// DiffConfigs loads two configs — old.ConfigPaths and new.ConfigPaths,
// each with conf.d/*.yaml beside its first file, as New layers them; the
// environment and Set layers are not read: the diff compares the files —
// and, with a catalog (new.Catalog, else old.Catalog), asks the policy of
// each what it makes of every catalog tool (hidden, a write, its write and
// unknown-arguments modes, exempt keys, the rules that apply), and
// compares: the decision of a config change through the compiled policy,
// not its YAML text. Without a catalog every server is compared as
// written. Each config is prepared as Check prepares it; an error names
// the config that failed to load.
func DiffConfigs(ctx context.Context, old, new Options) (ConfigDiff, error) {
	if len(old.ConfigPaths) == 0 || len(new.ConfigPaths) == 0 {
		return ConfigDiff{}, fmt.Errorf("mcpxpolicy: a diff needs an old and a new config")
	}
	catalog := new.Catalog
	if catalog == "" {
		catalog = old.Catalog
	}
	oldSnap, err := snapshot(ctx, old.ConfigPaths, catalog)
	if err != nil {
		return ConfigDiff{}, fmt.Errorf("old config: %w", err)
	}
	newSnap, err := snapshot(ctx, new.ConfigPaths, catalog)
	if err != nil {
		return ConfigDiff{}, fmt.Errorf("new config: %w", err)
	}
	d := rollout.Compare(oldSnap, newSnap)
	out := ConfigDiff{Text: d.Text(strings.Join(old.ConfigPaths, "+"), strings.Join(new.ConfigPaths, "+"), catalog)}
	out.Loosening, out.Tightening, out.Other = d.Count()
	b, err := d.JSON()
	if err != nil {
		return ConfigDiff{}, fmt.Errorf("mcpxpolicy: diff: %w", err)
	}
	out.JSON = b
	return out, nil
}

func snapshot(ctx context.Context, paths []string, catalog string) (rollout.Snapshot, error) {
	compiled, err := compileConfig(Options{ConfigPaths: paths, Catalog: catalog, Env: []string{}})
	if err != nil {
		return rollout.Snapshot{}, err
	}
	cfg, _ := compiled.Data["config"].(map[string]any)
	snap := rollout.Snapshot{Config: cfg, Overrides: map[string]string{}}
	for name, src := range compiled.Modules {
		if strings.HasPrefix(name, "overrides/") {
			snap.Overrides[name] = decision.SHA256Hex([]byte(src))[:16]
		}
	}
	if compiled.Catalog == nil {
		// no facts to ask for, but a config that would not prepare (an
		// override that does not compile) is an error here too
		if _, err := engine.Prepare(ctx, policyOf(compiled)); err != nil {
			return rollout.Snapshot{}, fmt.Errorf("mcpxpolicy: %w", err)
		}
		return snap, nil
	}
	snap.Tools, err = toolFacts(ctx, compiled)
	return snap, err
}

type probeRef struct{ server, tool string }

// toolFacts asks the config's policy for the facts of every catalog tool.
func toolFacts(ctx context.Context, compiled *config.Compiled) (map[string]map[string]rollout.ToolFacts, error) {
	var refs []probeRef
	var probes []any
	cat := compiled.Catalog
	for _, server := range cat.Servers() {
		for _, name := range cat.Tools(server) {
			tool, ok := catalogTool(cat, server, name)
			if !ok {
				return nil, fmt.Errorf("catalog: tool %s of server %s is not an MCP Tool the policy can read", name, server)
			}
			raw, err := engine.InputJSON(decision.Call{Server: server, Tool: tool, Args: map[string]any{}}, nil)
			if err != nil {
				return nil, fmt.Errorf("catalog: tool %s of server %s: %w", name, server, err)
			}
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.UseNumber()
			var in any
			if err := dec.Decode(&in); err != nil {
				return nil, err
			}
			refs = append(refs, probeRef{server, name})
			probes = append(probes, in)
		}
	}
	out := map[string]map[string]rollout.ToolFacts{}
	for _, server := range cat.Servers() {
		out[server] = map[string]rollout.ToolFacts{}
	}
	if len(probes) == 0 {
		return out, nil
	}
	eng, err := engine.Prepare(ctx, policyOf(compiled), engine.WithQuery(factsQuery))
	if err != nil {
		return nil, fmt.Errorf("mcpxpolicy: %w", err)
	}
	v, err := eng.Value(ctx, map[string]any{"probes": probes})
	if err != nil {
		return nil, fmt.Errorf("mcpxpolicy: the policy's tool facts: %w", err)
	}
	rows, _ := v.([]any)
	seen := make([]bool, len(refs))
	for _, row := range rows {
		m, _ := row.(map[string]any)
		i, err := m["i"].(json.Number).Int64()
		if err != nil || i < 0 || int(i) >= len(refs) {
			return nil, fmt.Errorf("mcpxpolicy: the policy's tool facts: bad row %v", row)
		}
		f, _ := m["facts"].(map[string]any)
		ref := refs[i]
		seen[i] = true
		w, _ := m["write"].(bool)
		hidden, _ := f["hidden"].(bool)
		wm, _ := f["write_mode"].(string)
		unknownArgs, _ := f["unknown_args_mode"].(string)
		out[ref.server][ref.tool] = rollout.ToolFacts{
			Hidden: hidden, Write: w, WriteMode: wm, UnknownArgs: unknownArgs,
			ExemptArgs: sortedStrings(f["exempt"]), Rules: sortedStrings(f["matched"]),
		}
		if ls := sortedStrings(m["labels"]); len(ls) > 0 {
			facts := out[ref.server][ref.tool]
			facts.Labels = ls
			out[ref.server][ref.tool] = facts
		}
	}
	for i, ok := range seen {
		if !ok {
			return nil, fmt.Errorf("mcpxpolicy: the policy computed no facts for tool %s of server %s", refs[i].tool, refs[i].server)
		}
	}
	return out, nil
}

func sortedStrings(v any) []string {
	out := []string{}
	l, _ := v.([]any)
	for _, x := range l {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// Recording decided calls for replay (docs/rollout.md, "Recording").

// Recorder writes decided calls to a directory, one call document each
// (the file `mcpx-policy eval` reads, plus the decision and its time),
// within a size and an age cap, their arguments redacted where
// RecorderOptions.Redact says: what `mcpx-policy replay` decides again.
// Safe for concurrent use.
type Recorder struct{ r *rollout.Recorder }

// RecorderOptions configure a Recorder.
type RecorderOptions struct {
	// Dir holds the recorded calls, one file each. It is made 0700 if
	// missing; an existing one must belong to this user and be closed to
	// group and others (mode 0700), as the arguments of calls are private.
	Dir string
	// MaxBytes caps the recorded files together; the oldest go first to
	// make room. 0 means DefaultRecordMaxBytes.
	MaxBytes int64
	// MaxAge is how long a recorded call is kept. 0 means
	// DefaultRecordMaxAge.
	MaxAge time.Duration
	// Redact says which arguments are written as "[REDACTED]": JSON
	// Pointers from the arguments' root ("/env/TOKEN", one place), key
	// names ("content": that key at any depth), and RedactSecrets. Nil
	// means [RedactSecrets]; an empty list redacts nothing.
	Redact []string
}

// Defaults and words of a recording.
const (
	// DefaultRecordMaxBytes caps a recording's files, together.
	DefaultRecordMaxBytes = rollout.DefaultRecordMaxBytes
	// DefaultRecordMaxAge is how long a recorded call is kept.
	DefaultRecordMaxAge = rollout.DefaultRecordMaxAge
	// RedactSecrets in RecorderOptions.Redact names every argument whose
	// key is a secret's name (token, password, api_key, …); the default.
	RedactSecrets = rollout.RedactSecrets
)

// OpenRecorder checks or makes the directory (0700, this user's, closed
// to group and others), reads what it holds and applies the caps.
func OpenRecorder(opts RecorderOptions) (*Recorder, error) {
	r, err := rollout.OpenRecorder(rollout.RecorderOptions{Dir: opts.Dir, MaxBytes: opts.MaxBytes, MaxAge: opts.MaxAge, Redact: opts.Redact})
	if err != nil {
		return nil, err
	}
	return &Recorder{r: r}, nil
}

// Record writes one decided call: its arguments redacted as
// RecorderOptions.Redact says, its decision as shown (redacted with the
// call, Redact), revision the config revision that decided it
// (Engine.Revision, Answer.Revision), dispatched whether the gateway let
// the call run (serve answered it allowed to a caller that runs it, the
// proxy sent it on: an ask once a person approved it), approved whether
// it ran with a person's approval that shown already shows used (serve's
// allow of an approved call). `mcpx-policy replay` counts the writes
// recorded dispatched for the write budgets and loop breakers. A call
// larger than the whole cap is not written, and is an error.
func (r *Recorder) Record(call decision.Call, shown Redacted, revision string, dispatched, approved bool) error {
	return r.r.Record(call, shown.r, revision, dispatched, approved)
}
