package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
)

const replayUsage = `usage: mcpx-policy replay --config F [--config F…] [--against F…] [--catalog F] [--set PATH=VALUE…]
                          [--format text|json] CALL.json|DIR…

Decides recorded calls again and prints the ones whose decision changes
(outcome, step or deciding code). Without --against each call is decided
under --config and compared with the decision it was recorded with (serve
--record, proxy --record): does this config still decide the traffic as it
was decided? With --against the calls are decided under both configs and
compared: what would the change do to real traffic? A DIR stands for the
*.json files in it, in the order they were recorded; any call file eval
reads will do with --against.

The calls are decided in the order they were recorded, each under the
session it was recorded with and at the time it was recorded, so the
labels data-flow rules remember are remembered as they were live, and the
write budgets and loop breakers count the writes the recording says were
dispatched (serve answered them allowed, the proxy sent them on): a replay
of a whole recording reproduces its data-flow and budget decisions (a
replay of part of it starts its sessions clean and its counts at zero).
The counts are the replay's own, in memory: never the ledger's. A write a
changed budget would have refused is not counted. The unknown-outcome
ledger is left out: each config decides as if no write were pending, so a
call recorded while the ledger blocked writes is reported as not
comparable rather than as a change; so is a call that ran with a person's
approval (replay has none), and a budget's decision once a call recorded
without its time or without saying whether it was dispatched (by an older
build) came before it. Arguments redacted when the call was recorded are
decided as the placeholder "[REDACTED]" (a loop breaker counts them so):
such a call says so next to its change.

  mcpx-policy replay --config /etc/mcpx-policy/config.yaml /var/lib/mcpx-policy/record
  mcpx-policy replay --config policy.yaml --against policy-next.yaml record/
  mcpx-policy replay --config policy.yaml --format json record/20260105T101112.000000000Z-1a2b3c4d.json

Exit status: 0 no decision changes, 1 error (usage, config, a call that
cannot be read, a recorded call without a decision and no --against), 2
some decisions change.
`

// replayed is one call's line in --format json.
type replayed struct {
	File     string   `json:"file"`
	Server   string   `json:"server"`
	Tool     string   `json:"tool"`
	Before   verdict  `json:"before"`
	After    verdict  `json:"after"`
	Changed  bool     `json:"changed"`
	Skipped  string   `json:"skipped,omitempty"`
	Redacted []string `json:"redacted,omitempty"`
}

// verdict is what replay compares of a decision.
type verdict struct {
	Outcome decision.Outcome `json:"outcome"`
	Step    decision.Step    `json:"step"`
	Code    decision.Code    `json:"code,omitempty"`
	Message string           `json:"message,omitempty"`
}

func (v verdict) same(o verdict) bool {
	return v.Outcome == o.Outcome && v.Step == o.Step && v.Code == o.Code
}

func (v verdict) String() string {
	if v.Outcome == decision.Allow && v.Code == "" {
		return "allow"
	}
	return fmt.Sprintf("%s (%s %s)", v.Outcome, v.Step, v.Code)
}

func runReplay(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpx-policy replay", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var configs, against stringList
	fs.Var(&configs, "config", "config file (repeatable, layered in order)")
	set := addSetFlag(fs)
	fs.Var(&against, "against", "the config to compare with (repeatable, layered in order)")
	catalog := fs.String("catalog", "", "tool catalog file (for call files that name their tool)")
	format := formatFlag(fs)
	decideTimeout := decideTimeoutFlag(fs)
	paths, err := parseInterleaved(fs, args)
	if err != nil {
		return usageError(stdout, stderr, replayUsage, err)
	}
	switch {
	case len(configs) == 0:
		return usageError(stdout, stderr, replayUsage, fmt.Errorf("replay needs --config"))
	case len(paths) == 0:
		return usageError(stdout, stderr, replayUsage, fmt.Errorf("replay needs recorded calls: files or a record directory"))
	case format.check() != nil:
		return usageError(stdout, stderr, replayUsage, format.check())
	case *decideTimeout <= 0:
		return usageError(stdout, stderr, replayUsage, errDecideTimeout)
	}
	files, err := callFiles(paths)
	if err != nil {
		return fail(stderr, err, "")
	}
	// Each config decides without the ledger and without asks on hold,
	// its budgets counted in memory (Options.Replay): a state dir of its
	// own for the approvals and pins, removed at the end.
	state, err := os.MkdirTemp("", "mcpx-policy-replay-")
	if err != nil {
		return fail(stderr, err, "")
	}
	defer os.RemoveAll(state)
	ctx := context.Background()
	open := func(paths []string, which string) (*mcpxpolicy.Engine, bool) {
		eng, err := mcpxpolicy.New(ctx, mcpxpolicy.Options{ConfigPaths: paths, Env: os.Environ(), Catalog: *catalog, Set: set.options(), StateDir: state, DecideTimeout: *decideTimeout, Replay: true})
		if err != nil {
			fail(stderr, fmt.Errorf("%s: %w", which, err), "run 'mcpx-policy check --config …' to see every config problem")
			return nil, false
		}
		for _, w := range eng.Warnings() {
			fmt.Fprintf(stderr, "mcpx-policy: warning: %s\n", w)
		}
		return eng, true
	}
	eng, ok := open(configs, "--config")
	if !ok {
		return 1
	}
	var other *mcpxpolicy.Engine
	if len(against) > 0 {
		if other, ok = open(against, "--against"); !ok {
			return 1
		}
	}
	failed := false
	var n, changed, skipped int
	var counts uncounted
	for _, path := range files {
		r, err := replayOne(ctx, eng, other, path, &counts)
		if err != nil {
			fail(stderr, fmt.Errorf("%s: %w", path, err), "")
			failed = true
			continue
		}
		n++
		switch {
		case r.Skipped != "":
			skipped++
		case r.Changed:
			changed++
		}
		if format.json() {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(r); err != nil {
				return fail(stderr, err, "")
			}
			stdout.Write(buf.Bytes())
			continue
		}
		if r.Changed || r.Skipped != "" {
			fmt.Fprint(stdout, r.text())
		}
	}
	if !format.json() {
		what := "its recorded decision"
		if other != nil {
			what = "--config and --against"
		}
		fmt.Fprintf(stdout, "replayed %d calls: %d decided differently (%s), %d not comparable\n", n, changed, what, skipped)
	}
	switch {
	case failed:
		return 1
	case changed > 0:
		return exitFound
	}
	return 0
}

// uncounted is why the budgets' counts of a replay cannot be trusted:
// a call before this one was recorded without its time, or without
// saying whether it was dispatched (by an older build, or a call file
// that is no recording), so its write may be missing from the counts.
// "" while every call so far said both.
type uncounted string

// note reads what a recorded call says of its time and dispatch.
func (u *uncounted) note(raw []byte) {
	if *u != "" {
		return
	}
	var rec struct {
		Time     string `json:"time"`
		Decision *struct {
			Dispatched *bool `json:"dispatched"`
		} `json:"decision"`
	}
	switch err := json.Unmarshal(raw, &rec); {
	case err != nil:
		*u = "it or a call before it could not be read"
	case rec.Time == "":
		*u = "it or a call before it was recorded without its time, so the write budgets' counts cannot be rebuilt"
	case rec.Decision == nil || rec.Decision.Dispatched == nil:
		*u = "it or a call before it was recorded without saying whether it was dispatched (by an older build), so the write budgets' counts cannot be rebuilt"
	}
}

// replayOne decides one call file: under eng, and under other when given
// (else the file's recorded decision is the one before). counts says
// whether the budgets' counts can be trusted for it.
func replayOne(ctx context.Context, eng, other *mcpxpolicy.Engine, path string, counts *uncounted) (replayed, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return replayed{}, err
	}
	counts.note(raw)
	decide := func(e *mcpxpolicy.Engine) (mcpxpolicy.Answer, verdict, error) {
		ans := e.Answer(ctx, raw, mcpxpolicy.AnswerOptions{DefaultSurface: mcpxpolicy.SurfaceCLI, Name: "call file"})
		d := ans.Decision.Decision()
		return ans, verdict{Outcome: d.Outcome, Step: d.Step, Code: d.First().Code, Message: d.First().Message}, ans.Unread
	}
	ans, after, err := decide(eng)
	if err != nil {
		return replayed{}, err
	}
	r := replayed{File: path, Server: ans.Call.Server, Tool: ans.Call.Tool.Name, Redacted: ans.RecordedRedacted, After: after}
	switch {
	case other != nil:
		// the config that is in force now decides first: the change is
		// from it to --against
		r.Before = r.After
		if _, r.After, err = decide(other); err != nil {
			return r, err
		}
	case ans.Recorded == nil:
		return r, fmt.Errorf("the call has no recorded decision to compare with (give --against to compare two configs)")
	default:
		rd := ans.Recorded
		r.Before = verdict{Outcome: rd.Outcome, Step: rd.Step, Code: rd.Code, Message: rd.Message}
		switch {
		case rd.Step == decision.StepLedger:
			r.Skipped = "it was decided by the unknown-outcome ledger, which replay leaves out"
			return r, nil
		case rd.Approved:
			r.Skipped = "it ran with a person's approval, which replay does not have (its write is counted)"
			return r, nil
		}
	}
	if *counts != "" && (r.Before.Step == decision.StepBudget || r.After.Step == decision.StepBudget) {
		r.Skipped = string(*counts)
		return r, nil
	}
	r.Changed = !r.Before.same(r.After)
	return r, nil
}

func (r replayed) text() string {
	var b strings.Builder
	if r.Skipped != "" {
		fmt.Fprintf(&b, "%s: %s.%s: not comparable: %s\n", r.File, r.Server, r.Tool, r.Skipped)
		return b.String()
	}
	fmt.Fprintf(&b, "%s: %s.%s: %s -> %s\n", r.File, r.Server, r.Tool, r.Before, r.After)
	if r.Before.Message != "" {
		fmt.Fprintf(&b, "  before: %s\n", r.Before.Message)
	}
	if r.After.Message != "" {
		fmt.Fprintf(&b, "  after:  %s\n", r.After.Message)
	}
	if len(r.Redacted) > 0 {
		fmt.Fprintf(&b, "  note: recorded with %s redacted; the replay judged the placeholders (%q, [REDACTED <what>, <n> chars]) there\n", strings.Join(r.Redacted, ", "), "[REDACTED]")
	}
	return b.String()
}

// callFiles expands the arguments: a file is itself, a directory the
// *.json files directly in it, sorted by name (a recording's names sort
// by time).
func callFiles(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			out = append(out, p)
			continue
		}
		ents, err := os.ReadDir(p)
		if err != nil {
			return nil, err
		}
		var names []string
		for _, e := range ents {
			if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".json") && !strings.HasPrefix(e.Name(), ".") {
				names = append(names, e.Name())
			}
		}
		sort.Strings(names)
		for _, n := range names {
			out = append(out, filepath.Join(p, n))
		}
	}
	return out, nil
}
