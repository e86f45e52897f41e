package mcpxpolicy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/assemble"
	"github.com/mcpx/mcpx-policy/internal/config"
	"github.com/mcpx/mcpx-policy/internal/config/schemarego"
	"github.com/mcpx/mcpx-policy/internal/engine"
	"github.com/mcpx/mcpx-policy/internal/ledger"
)

// Options says where an Engine's config and state come from.
type Options struct {
	// ConfigPaths are the main config files, in layer order; conf.d/*.yaml
	// beside the first one is layered after them. At least one is needed.
	ConfigPaths []string
	// Catalog is an optional tool catalog file; with it, rules and patterns
	// that match no tool become warnings.
	Catalog string
	// Env holds "NAME=value" pairs for the MCPX_POLICY_* layer of the
	// config (docs/configuration.md). Nil, the default, is no such layer:
	// the environment of a daemon that embeds the Engine changes no
	// setting unless the daemon hands it over — os.Environ(), as the CLI
	// does, or the pairs it chooses. The state dir's default reads
	// $MCPX_POLICY_STATE_DIR whatever Env holds (StateDir).
	Env []string
	// Set holds flag-level overrides by config path (for example
	// "policy.write": "deny"), the highest layer.
	Set map[string]string
	// StateDir is where the unknown-outcome ledger, the approval requests
	// and the pinned tool definitions live when the config keeps them in
	// files (the default; with the ledger section's PostgreSQL they all
	// live in the database); "" means $MCPX_POLICY_STATE_DIR, else
	// $XDG_STATE_HOME/mcpx-policy, else ~/.local/state/mcpx-policy.
	StateDir string
	// DecideTimeout bounds one Decide whose context has no deadline of its
	// own; 0 (or less) means DefaultDecideTimeout. A context with a deadline
	// keeps it, longer or shorter. A decision that runs out of time is a
	// PolicyError deny, returned with an error that errors.Is matches to
	// context.DeadlineExceeded.
	DecideTimeout time.Duration
	// Observer, when set, is told of every decision and every reload
	// (metrics); nil observes nothing.
	Observer Observer
	// ApprovalTTL is how long an approval request (RequestApproval) lives,
	// answered or not; 0 (or less) means DefaultApprovalTTL.
	ApprovalTTL time.Duration
	// MaxApprovals caps the live approval requests of the store; a
	// request beyond it fails with ErrApprovalsFull. One surface (the text
	// of Call.Caller before its first ':') may hold at most half of them,
	// rounded up. 0 (or less) means 256.
	MaxApprovals int
	// ApprovalsPage is the link of the approvals page that answers this
	// state dir's requests (serve's or proxy --listen's --approvals-page,
	// or --approvals-url), without a trailing slash; an ask held out of
	// band (DecideApproved with id "") links to ApprovalsPage + "/" + the request's
	// id. "" links to none.
	ApprovalsPage string
	// OnApprovalRequest, when set, is told of each approval request an
	// ask held out of band opens (DecideApproved with id "", Answer with
	// OutOfBand), once it is durable, with the held refusal (its first
	// reason's details "approve" and "page" say how a person approves
	// it), on the goroutine that decided: it must return quickly (serve
	// and the proxy hand it to the webhook's queue). It is not told of a
	// request already waiting for the same call, nor of the requests
	// RequestApproval opens.
	OnApprovalRequest func(req decision.ApprovalRequest, held decision.Decision)
	// MaxApprovalsPerCaller caps the live approval requests of one caller
	// (Call.Caller and the call's principal): one caller flooding asks
	// cannot make another's un-approvable (docs/surfaces.md#fairness-one-caller-cannot-starve-another).
	// 0 (or less) means 16 (and never more than a surface may hold).
	MaxApprovalsPerCaller int
	// Replay makes an Engine that decides recorded calls again
	// (`mcpx-policy replay`, docs/rollout.md#replay): its write budgets'
	// counts are a throwaway store in memory, never the config's ledger
	// (a PostgreSQL ledger section is not opened; the approvals and pins
	// are the files in StateDir, which should be a scratch directory too),
	// no unknown-outcome entry is ever pending, and Answer decides a
	// recorded call document at the time it was recorded and then counts
	// its write when the recording says it was dispatched — so the calls
	// of a recording, answered in the order they were recorded, are
	// decided on the counts their gateway read. Its Answers must come one
	// at a time, in that order. false, the default, is a gateway.
	Replay bool
}

// DefaultDecideTimeout is how long one decision may take when neither the
// caller's context nor Options.DecideTimeout says otherwise. The policy
// decides a call in about a millisecond (docs/performance.md); only a
// runaway operator override comes near it.
const DefaultDecideTimeout = 5 * time.Second

// Engine decides tool calls. It is safe for concurrent use; Reload swaps the
// prepared policy atomically, so a Decide sees either the old or the new
// config, never a mix. It holds the state it decides with behind three
// handles of one shape — Writes (the unknown-outcome ledger), Approvals
// and Pins — and feeds the policy from them (docs/decisions/0013-a-thin-door.md).
type Engine struct {
	opts      Options
	writes    *Writes
	ledgerCfg config.LedgerConfig // the ledger section it opened
	pins      *Pins
	approvals *Approvals
	cmds      Commands
	cur       atomic.Pointer[revision]
	mu        sync.Mutex      // serializes Reload
	oob       sync.Mutex      // serializes finding and opening out-of-band requests
	sessions  flowSessions    // the labels each session touched (flows.go)
	scratch   *ledger.Scratch // the counts of a replay (Options.Replay), else nil
}

type revision struct {
	engine   *engine.Prepared
	compiled *config.Compiled
}

// New loads the config and the ledger and prepares the policy. A bad config
// is an error listing every problem with its file and line (errors.As finds
// each *ConfigError); an unreadable ledger is not an error here: it makes
// every write deny with LedgerUnreadable until it reads again. The ledger
// is the file in Options.StateDir, or the PostgreSQL database the
// config's ledger section names (docs/ledger.md); Close releases it.
func New(ctx context.Context, opts Options) (*Engine, error) {
	if len(opts.ConfigPaths) == 0 {
		return nil, errors.New("mcpxpolicy: no config file given")
	}
	dir, err := stateDir(opts.StateDir)
	if err != nil {
		return nil, err
	}
	e := &Engine{opts: opts}
	rev, err := e.load(ctx)
	if err != nil {
		return nil, err
	}
	lc := rev.compiled.Ledger
	if opts.Replay {
		lc = config.LedgerConfig{Store: config.StoreFile} // never the fleet's database
	}
	st, err := openStores(lc, dir)
	if err != nil {
		return nil, err
	}
	if opts.Replay {
		e.scratch = &ledger.Scratch{}
		st.ledger = e.scratch
	}
	if e.approvals, err = st.approvals(opts); err == nil {
		e.pins, err = st.pins()
	}
	if err != nil {
		st.close()
		return nil, err
	}
	e.approvals.engine, e.pins.engine = true, true
	e.writes, e.ledgerCfg = &Writes{s: st.ledger, engine: true, eng: e}, rev.compiled.Ledger
	e.cmds = commandsFor(opts, e.ledgerCfg)
	e.cur.Store(rev)
	return e, nil
}

// stateDir is dir, else the default state dir.
func stateDir(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	d, err := ledger.DefaultStateDir()
	if err != nil {
		return "", fmt.Errorf("mcpxpolicy: state dir: %w", err)
	}
	return d, nil
}

// Close releases the database connections of the ledger, the approvals
// and the pins (the PostgreSQL store's; the file stores hold nothing to
// release). Writes of this Engine still in flight read as a dead
// process's from then on. No method of the Engine or of its handles may be
// used after it.
func (e *Engine) Close() error { return e.writes.s.Close() }

// compileConfig loads and compiles a config without preparing it: what
// Check and BundleFiles need.
func compileConfig(opts Options) (*config.Compiled, error) {
	env := opts.Env
	if env == nil {
		env = []string{} // config.Load would read os.Environ()
	}
	c, err := config.Load(config.LoadOptions{
		Paths:          opts.ConfigPaths,
		Env:            env,
		Set:            opts.Set,
		Catalog:        opts.Catalog,
		SchemaCompiler: schemarego.Compile,
		RuleEvaluator:  schemarego.Evaluate,
	})
	if err != nil {
		return nil, sdkError(err)
	}
	return c, nil
}

func (e *Engine) load(ctx context.Context) (*revision, error) {
	compiled, err := compileConfig(e.opts)
	if err != nil {
		return nil, err
	}
	eng, err := engine.Prepare(ctx, policyOf(compiled))
	if err != nil {
		return nil, fmt.Errorf("mcpxpolicy: %w", err)
	}
	return &revision{engine: eng, compiled: compiled}, nil
}

// policyOf is what the engine evaluates and a bundle ships for a compiled
// config (assemble.Policy).
func policyOf(c *config.Compiled) engine.Policy { return assemble.Policy(c) }

// Reload loads the config files again and swaps the new policy in. When the
// new config fails to load, the Engine keeps deciding with the old one and
// the error is returned; so it does when the new config names another
// ledger (a store is opened once, by New).
func (e *Engine) Reload(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	rev, err := e.load(ctx)
	if err == nil && !sameLedger(rev.compiled.Ledger, e.ledgerCfg) {
		err = fmt.Errorf("mcpxpolicy: the ledger section changed (now store %s, from %s): restart to use another ledger; still deciding with the old policy", rev.compiled.Ledger.Store, orDefault(rev.compiled.Ledger.Source))
	}
	if err == nil {
		e.cur.Store(rev)
	}
	if e.opts.Observer != nil {
		e.opts.Observer.Reloaded(err)
	}
	return err
}

func orDefault(source string) string {
	if source == "" {
		return "the default"
	}
	return source
}

// Revision identifies the config the Engine decides with: a hex SHA-256 of
// the compiled data and modules.
func (e *Engine) Revision() string { return e.cur.Load().compiled.Revision }

// Warnings are the load-time warnings of the current config, as
// "file:line: path: message": each setting a later layer (another config
// file, conf.d, MCPX_POLICY_* or Options.Set) made less strict, with the
// value and origin it replaced (docs/configuration.md), and with a catalog
// each rule or pattern that matches no tool and each of its servers the
// config does not configure.
func (e *Engine) Warnings() []string {
	c := e.cur.Load().compiled
	out := make([]string, len(c.Warnings))
	for i, w := range c.Warnings {
		out[i] = w.String()
	}
	return append(out, catalogWarnings(c, e.opts.Catalog)...)
}

// Servers returns the names of the servers the current config configures
// (its `servers:` keys), sorted. A call to any other server is decided by
// the pool's settings alone: none of a server's hidden tools, rules or
// write mode apply to it (UnconfiguredWarning). Safe for concurrent use.
func (e *Engine) Servers() []string { return configuredServers(e.cur.Load().compiled) }

// Ready reports whether the Engine can decide writes: a policy is loaded
// and the unknown-outcome ledger reads. The error says what is wrong; a
// ledger that does not read makes every write deny meanwhile
// (LedgerUnreadable). Safe for concurrent use.
func (e *Engine) Ready() error {
	if e.cur.Load() == nil {
		return errors.New("mcpxpolicy: no policy loaded")
	}
	return e.writes.s.Check()
}

// Decide judges one call. Annotations in call.Tool must come from the
// server's own tools/list. The state the policy reads is fed from the
// Engine's handles (state.go): the server's unknown-outcome entries from
// Writes and, when the server pins tool definitions (pinTools), call.Tool
// compared with its pin in Pins — a tool seen first is pinned (durably,
// before Decide returns), and while its definition differs from the
// pinned one, the call is judged with the stricter of the pinned and the
// current annotations (docs/proxy.md#pinned-tool-definitions). The
// commands the decision names (clear a write, accept a pin) are spelled
// for this Engine's process (Commands). Decide always returns a decision;
// when it also returns an error, the decision is a deny.
//
// With data-flow rules in the config (docs/configuration.md#labels-and-flows),
// Decide is the decision a caller acts on: a call it allows or asks for
// touches its tool's labels in the session of call.Caller and
// call.Session, which later decisions of that session read (kept in this
// process: bounded in number, forgotten after an idle hour; flows.go).
//
// Every decision has a deadline: ctx's own, else Options.DecideTimeout
// (DefaultDecideTimeout by default). Out of time, or with ctx cancelled,
// the decision is a PolicyError deny and the error wraps ctx's error.
//
// The decision is the policy's own document, what a stock OPA answers:
// print, log or return it only redacted (Redact).
func (e *Engine) Decide(ctx context.Context, call decision.Call) (decision.Decision, error) {
	if obs := e.opts.Observer; obs != nil {
		start := time.Now()
		d, err := e.decide(ctx, call, true)
		enforced := d.Enforced()
		obs.Decided(enforced.Outcome, decidingCode(&enforced), d.Relaxed(), time.Since(start), err)
		observeFindings(obs, enforced, d.Relaxed())
		return d, err
	}
	return e.decide(ctx, call, true)
}

// decide is Decide without the Observer; touch says the decision is one a
// caller acts on (Decide), so the labels of a call it lets through are
// remembered for its session (flows.go), which a probe (Listable, a
// budget's refusal) does not do.
func (e *Engine) decide(ctx context.Context, call decision.Call, touch bool) (decision.Decision, error) {
	limit := e.decideTimeout()
	if dl, ok := ctx.Deadline(); ok {
		limit = time.Until(dl)
	} else {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	ctx = engine.WithBudget(ctx, limit)
	rev := e.cur.Load()
	pin, call := e.pinView(rev.compiled, call)
	// a tool met hidden before is decided without the ledger, budgets and
	// labels, which its decision does not read (internal/engine/hidden.go)
	d, hidden := rev.engine.DecideHidden(ctx, call, pin)
	led := &engine.Ledger{Pin: pin}
	var err error
	if !hidden {
		led = e.restOfState(rev.compiled, call, pin)
		d, err = rev.engine.Decide(ctx, call, led)
	}
	if touch {
		e.flowTouch(rev.compiled, call, d)
	}
	d = e.cmds.spell(d, led.Seen)
	if err != nil {
		return d, fmt.Errorf("mcpxpolicy: %w", err)
	}
	return d, nil
}

// decideTimeout is Options.DecideTimeout, else DefaultDecideTimeout.
func (e *Engine) decideTimeout() time.Duration {
	if e.opts.DecideTimeout > 0 {
		return e.opts.DecideTimeout
	}
	return DefaultDecideTimeout
}

// Listable reports whether server's tool t may be shown to a client in a
// tool list: not when it is hidden (step 1), nor when its definition is not
// the one pinned (ToolDefinitionChanged, whether the pin denies or asks);
// why is the pin's reason then. It judges the tool, not a call: observers
// (Options.Observer) are not told. Like Decide, it pins a tool seen first
// when the server pins tool definitions. Safe for concurrent use.
func (e *Engine) Listable(ctx context.Context, server string, t decision.Tool) (ok bool, why string) {
	d, _ := e.decide(ctx, decision.Call{Surface: SurfaceMCP, Server: server, Tool: t, Args: map[string]any{}}, false)
	if d.Outcome == decision.Deny && d.First().Code == decision.HiddenTool {
		return false, ""
	}
	for _, r := range d.Reasons {
		if r.Code == decision.ToolDefinitionChanged {
			return false, r.Message
		}
	}
	return true, ""
}

// Writes is the Engine's unknown-outcome ledger (Options.StateDir's file,
// or the database its config names). Engine.Close closes it.
func (e *Engine) Writes() *Writes { return e.writes }

// Approvals is the Engine's approval store (in Options.StateDir, or the
// database of the config's ledger section; with Options.ApprovalTTL,
// MaxApprovals and MaxApprovalsPerCaller). Engine.Close closes it.
func (e *Engine) Approvals() *Approvals { return e.approvals }

// Pins is the pin store the Engine decides with (Options.StateDir's, or
// the database of the config's ledger section). Engine.Close closes it.
func (e *Engine) Pins() *Pins { return e.pins }

// Commands spells the commands this Engine's operator runs — clear its
// writes, accept its pins, list them, check its config — as its decisions
// name them: with --state-dir when Options.StateDir or
// $MCPX_POLICY_STATE_DIR chose the state dir (printedStateDir), and the
// --config files when the ledger is the config's database. Fixed for the
// Engine's life.
func (e *Engine) Commands() Commands { return e.cmds }

// configuredServers is the `servers:` keys of c, sorted.
func configuredServers(c *config.Compiled) []string {
	cfg, _ := c.Data["config"].(map[string]any)
	servers, _ := cfg["servers"].(map[string]any)
	names := make([]string, 0, len(servers))
	for n := range servers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// UnconfiguredWarning is the warning for a call, a catalog or a proxy
// that names a server the config does not configure: that only the pool's
// settings apply to it, and which servers the config has.
func UnconfiguredWarning(server string, configured []string) string {
	known := "none"
	if len(configured) > 0 {
		known = strings.Join(configured, ", ")
	}
	return fmt.Sprintf("server %q is not configured (no servers.%s in the config): none of a server's hidden tools, rules or write mode apply to it, only the pool's; configured servers: %s",
		server, server, known)
}
