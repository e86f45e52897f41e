package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/metrics"
	"github.com/mcpx/mcpx-policy/internal/netcap"
	"github.com/mcpx/mcpx-policy/internal/server"
)

const serveUsage = `usage: mcpx-policy serve --config F [--config F…] [--catalog F] [--set PATH=VALUE…] [--state-dir D]
                         [--addr 127.0.0.1:8181] [--token-file F] [--decision-log -|PATH|off]
                         [--max-body 1048576] [--decide-timeout 5s] [--approval-ttl 5m]
                         [--approvals-page] [--approvals-url URL]
                         [--approval-webhook URL --approval-webhook-secret-file F
                          [--approval-webhook-format slack|json]]
                         [--record DIR [--record-redact P…] [--record-max-bytes 64MiB]
                          [--record-max-age 168h]]

Serves decisions over HTTP (docs/service.md):
  POST /v1/decide          a call document in, the decision document out; an ask
                           comes with an approval request ("approval")
  GET  /v1/writes          the unknown-outcome writes
  POST /v1/writes/clear    clear them (Authorization: Bearer <token from --token-file>)
  GET  /v1/approvals       the approval requests waiting for an answer
  POST /v1/approvals/ID    answer one: {"sha256": "<as shown>"} or {"decline": true}
                           (Authorization: Bearer <token>); then POST /v1/decide
                           of the same call runs it once
  GET  /approvals          with --approvals-page: the approvals page, where a person
                           logs in with the token and approves or declines
  POST /access/v1/evaluation   the OpenID AuthZEN access evaluation API
  POST /access/v1/evaluations  (its batch form)
  GET  /healthz            liveness and the config revision
  GET  /readyz             readiness: a policy is loaded and the ledger reads
  GET  /metrics            Prometheus metrics

A decision that takes longer than --decide-timeout is stopped and answered
with a PolicyError deny. It binds to loopback unless --addr says otherwise.
Config files (and conf.d/*.yaml) are watched and reloaded on change and on
SIGHUP; a config that fails to load is logged and the old policy stays.
An unknown-outcome ledger that stops reading (a PostgreSQL database down)
is logged on stderr once, and again once when it reads again.
SIGINT or SIGTERM drains in-flight requests and exits. POST bodies need
Content-Type: application/json; a browser request from another origin is
refused.

An ask is held for a person (docs/approvals.md): /v1/decide answers it with
its approval request (the same one while it waits), a person approves it
(POST /v1/approvals/ID, the page, or 'mcpx-policy approve'), and the same
call sent again runs once. --approvals-url names the page the 428 body links
to (by default, with --approvals-page, this listener's); --approval-webhook
POSTs each new request to a URL, signed with the secret in
--approval-webhook-secret-file (header X-Mcpx-Policy-Signature:
sha256=<HMAC-SHA256 of the body>).

--record DIR writes every decided call to DIR (made 0700; files 0600), one
call document each with its decision and time, for 'mcpx-policy replay'.
Arguments named by --record-redact — a JSON Pointer (/env/TOKEN), a key
name at any depth (content), @secrets for every key the secret table names
(token, password, api_key, …; the default) or @none — are written as
"[REDACTED]". Past --record-max-age, or to stay under --record-max-bytes,
the oldest records are removed (docs/rollout.md).

  mcpx-policy serve --config /etc/mcpx-policy/config.yaml
  mcpx-policy serve --config mcpx-policy.yaml --addr 127.0.0.1:9000 --token-file /run/secrets/mcpx-token
  mcpx-policy serve --config mcpx-policy.yaml --token-file token --approvals-page \
      --approval-webhook https://hooks.slack.com/services/… --approval-webhook-secret-file webhook.secret
  curl -s -H 'Content-Type: application/json' localhost:8181/v1/decide -d @examples/calls/3-write-outside-workspace.json
  mcpx-policy serve --config mcpx-policy.yaml --record /var/lib/mcpx-policy/record --record-redact @secrets --record-redact /content

Exit status: 0 after SIGINT or SIGTERM, once in-flight requests are done;
1 error (usage, a config that does not load, an address that cannot be
listened on).
`

func runServe(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpx-policy serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var configs stringList
	fs.Var(&configs, "config", "config file (repeatable, layered in order)")
	catalog := fs.String("catalog", "", "tool catalog file (lets calls name a tool instead of sending it)")
	set := addSetFlag(fs)
	stateDir := fs.String("state-dir", "", "state directory holding ledger.json")
	addr := fs.String("addr", "127.0.0.1:8181", "listen address")
	tokenFile := fs.String("token-file", "", "file holding the bearer token for POST /v1/writes/clear and /v1/approvals/ID")
	decisionLog := fs.String("decision-log", "-", "decision log: - (stdout), a file to append to, or off")
	maxBody := fs.Int64("max-body", server.DefaultMaxBody, "largest request body in bytes")
	decideTimeout := decideTimeoutFlag(fs)
	approvalTTL := approvalTTLFlag(fs)
	record := addRecordFlags(fs)
	oob := addOutOfBandFlags(fs)
	if err := fs.Parse(args); err != nil {
		return usageError(stdout, stderr, serveUsage, err)
	}
	if err := oob.check(true, *tokenFile != ""); err != nil {
		return usageError(stdout, stderr, serveUsage, err)
	}
	if len(configs) == 0 || fs.NArg() > 0 {
		return usageError(stdout, stderr, serveUsage, fmt.Errorf("serve takes --config files and no arguments"))
	}
	if *decideTimeout <= 0 {
		return usageError(stdout, stderr, serveUsage, errDecideTimeout)
	}
	if *approvalTTL <= 0 {
		return usageError(stdout, stderr, serveUsage, errApprovalTTL)
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	token, hint, err := readTokenFile(*tokenFile, stderr)
	if err != nil {
		return fail(stderr, err, hint)
	}
	var logw io.Writer
	switch *decisionLog {
	case "off":
	case "-":
		logw = stdout
	default:
		f, err := os.OpenFile(*decisionLog, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return fail(stderr, err, "")
		}
		defer f.Close()
		logw = f
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The listener comes first: the approvals page's link names its port.
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fail(stderr, err, "")
	}
	defer ln.Close()
	var eng *mcpxpolicy.Engine
	met := newMetrics(&eng, true)
	opts := mcpxpolicy.Options{ConfigPaths: configs, Env: os.Environ(), Catalog: *catalog, Set: set.options(), StateDir: *stateDir, DecideTimeout: *decideTimeout, ApprovalTTL: *approvalTTL, Observer: met}
	held, err := oob.open(ln, &opts, logger, stderr)
	if err != nil {
		return fail(stderr, err, "")
	}
	defer held.close()
	watchPaths := append([]string(nil), configs...)
	if *catalog != "" {
		watchPaths = append(watchPaths, *catalog)
	}
	watcher := watchConfig(watchPaths, logger)
	eng, err = mcpxpolicy.New(ctx, opts)
	if err != nil {
		watcher.Close()
		return fail(stderr, err, "run 'mcpx-policy check --config …' to see every config problem")
	}
	defer eng.Close()
	page, err := oob.handler(eng, token, logger)
	if err != nil {
		return fail(stderr, err, "")
	}
	for _, w := range eng.Warnings() {
		fmt.Fprintf(stderr, "mcpx-policy: warning: %s\n", w)
	}
	onDecision, err := record.open(eng, logger)
	if err != nil {
		return fail(stderr, err, "")
	}
	if !loopback(ln.Addr()) {
		fmt.Fprintf(stderr, "mcpx-policy: warning: listening on %s, beyond loopback: anyone who can reach it can ask for decisions\n", ln.Addr())
	}
	capped := netcap.New(ln, maxConns)
	srv := &http.Server{
		Handler: server.New(eng, server.Options{Token: token, DecisionLog: logw, Logger: logger, MaxBody: *maxBody,
			Metrics: met, OnDecision: onDecision, ApprovalsPage: page}),
		ConnState:         capped.ConnState,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      max(30*time.Second, *decideTimeout+10*time.Second), // a slow decision still gets its answer out
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	reloadOnChange(ctx, eng, watcher, logger)
	watchLedger(ctx, eng, logger, ledgerCheckEvery)
	logger.Info("serving decisions", "addr", ln.Addr().String(), "revision", eng.Revision(), "clear", token != "")
	if page != nil {
		logger.Info("serving the approvals page", "url", "http://"+ln.Addr().String()+"/approvals")
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(capped.Listener()) }()
	select {
	case err := <-errc:
		return fail(stderr, err, "")
	case <-ctx.Done():
	}
	logger.Info("shutting down: draining in-flight requests")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fail(stderr, err, "")
	}
	return 0
}

// newMetrics returns the process's metrics, reading the revision, the
// ledger and (with approvals, for serve, which keeps them) the pending
// approval requests through *eng once it is set (scrapes come after it is).
func newMetrics(eng **mcpxpolicy.Engine, approvals bool) *metrics.Metrics {
	opts := metrics.Options{
		Revision: func() string { return (*eng).Revision() },
		Pending:  func() (map[string]int, error) { return (*eng).Writes().Counts() },
		Process:  true,
	}
	if approvals {
		opts.Approvals = func() (int, error) { return pendingApprovals(*eng) }
	}
	return metrics.New(opts)
}

// maxConns caps the connections serve and proxy --listen hold open at
// once (internal/netcap): past it the longest-idle one is closed, else the
// new one is answered 503.
const maxConns = 128

// loopback reports whether a listener's address is a loopback one.
func loopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// pendingApprovals counts the approval requests of eng's state dir that
// wait for an answer (the metrics' approvals_pending).
func pendingApprovals(eng *mcpxpolicy.Engine) (int, error) {
	rs, err := eng.Approvals().List()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range rs {
		if r.State == decision.ApprovalPending {
			n++
		}
	}
	return n, nil
}
