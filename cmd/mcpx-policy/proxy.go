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
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/internal/proxy"
	"github.com/mcpx/mcpx-policy/internal/server"
)

const proxyUsage = `usage: mcpx-policy proxy --config F [--config F…] --server NAME [--state-dir D]
                         [--listen ADDR] [--publish-closed-schemas] [--call-timeout 10m]
                         [--decide-timeout 5s] [--log-level info]
                         [--record DIR [--record-redact P…] [--record-max-bytes 64MiB]
                          [--record-max-age 168h]] -- CMD ARGS…

Runs the MCP server CMD ARGS… and speaks MCP to it over stdio, and to the
client over stdio (or Streamable HTTP at http://ADDR/mcp with --listen).
Every message passes through, except: tools/list drops hidden tools;
tools/call is decided first — a deny or a hidden tool is answered by the
proxy, an ask is put to the person through elicitation (or refused with
ConfirmationUnavailable when the client cannot ask), a warn adds the
_ignored_options rider. A write whose answer is lost (the server exits,
the pipe breaks, the call times out or is cancelled) is recorded as an
unknown outcome and blocks further writes to NAME until
'mcpx-policy writes clear NAME'. A decision that takes longer than
--decide-timeout is stopped and the call refused (PolicyError). Logs go to
stderr; stdout is the client's. --record DIR writes every tools/call with
the policy's decision to DIR for 'mcpx-policy replay', as serve --record
does (mcpx-policy serve -h).

  mcpx-policy proxy --config ~/.config/mcpx-policy/config.yaml --server fs -- \
      npx -y @modelcontextprotocol/server-filesystem /workspace
  mcpx-policy proxy --config policy.yaml --server fs --listen 127.0.0.1:8282 -- mcp-server-filesystem /workspace

See docs/proxy.md for Claude Desktop, Claude Code and Codex configs.
`

func runProxy(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpx-policy proxy", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var configs stringList
	fs.Var(&configs, "config", "config file (repeatable, layered in order)")
	name := fs.String("server", "", "the server's name in the config")
	stateDir := fs.String("state-dir", "", "state directory holding ledger.json")
	listen := fs.String("listen", "", "serve Streamable HTTP on this address instead of stdio")
	closed := fs.Bool("publish-closed-schemas", false, "stamp additionalProperties: false into tools/list schemas that take no position")
	timeout := fs.Duration("call-timeout", 10*time.Minute, "how long a write waits for its answer before its outcome is unknown (0: forever)")
	level := fs.String("log-level", "info", "stderr log level: debug, info, warn or error")
	decideTimeout := decideTimeoutFlag(fs)
	record := addRecordFlags(fs)
	if err := fs.Parse(args); err != nil {
		return usageError(stdout, stderr, proxyUsage, err)
	}
	switch {
	case len(configs) == 0:
		return usageError(stdout, stderr, proxyUsage, fmt.Errorf("proxy needs --config"))
	case *name == "":
		return usageError(stdout, stderr, proxyUsage, fmt.Errorf("proxy needs --server NAME (the server's name in the config)"))
	case fs.NArg() == 0:
		return usageError(stdout, stderr, proxyUsage, fmt.Errorf("proxy needs the server command after --"))
	case *decideTimeout <= 0:
		return usageError(stdout, stderr, proxyUsage, errDecideTimeout)
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		return usageError(stdout, stderr, proxyUsage, fmt.Errorf("unknown --log-level %q", *level))
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lv}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	eng, err := mcpxpolicy.New(ctx, mcpxpolicy.Options{ConfigPaths: configs, StateDir: *stateDir, DecideTimeout: *decideTimeout})
	if err != nil {
		return fail(stderr, err, "run 'mcpx-policy check --config …' to see every config problem")
	}
	for _, w := range eng.Warnings() {
		fmt.Fprintf(stderr, "mcpx-policy: warning: %s\n", w)
	}
	if n, err := eng.RecoverWrites(); err != nil {
		fmt.Fprintf(stderr, "mcpx-policy: warning: unknown-outcome ledger: %v (writes are refused until it reads)\n", err)
	} else if n > 0 {
		fmt.Fprintf(stderr, "mcpx-policy: warning: %d write(s) of a process that died are now unknown outcomes: see 'mcpx-policy writes'\n", n)
	}
	reloadOnChange(ctx, eng, configs, logger)
	onDecision, err := record.open(eng, logger)
	if err != nil {
		return fail(stderr, err, "")
	}
	opts := proxy.Options{Engine: eng, Server: *name, PublishClosedSchemas: *closed, CallTimeout: *timeout, Logger: logger, OnDecision: onDecision}
	command := fs.Args()
	start := func(ctx context.Context) (proxy.Conn, error) {
		cmd := exec.Command(command[0], command[1:]...)
		cmd.Stderr = stderr
		return proxy.StartCommand(cmd, 2*time.Second)
	}
	if *listen != "" {
		return serveProxyHTTP(ctx, *listen, opts, start, logger, stderr)
	}
	serverConn, err := start(ctx)
	if err != nil {
		return fail(stderr, fmt.Errorf("starting %s: %w", command[0], err), "")
	}
	err = proxy.Run(ctx, opts, proxy.Stdio(), serverConn)
	switch {
	case err == nil, errors.Is(err, context.Canceled):
		return 0
	case errors.Is(err, proxy.ErrServerGone):
		return fail(stderr, fmt.Errorf("%s exited: %v", command[0], err), "")
	default:
		return fail(stderr, err, "")
	}
}

// reloadOnChange reloads the config on a change to any of paths and on
// SIGHUP, keeping the old policy when the new one fails to load, until ctx
// ends. SIGHUP is caught from the moment it returns.
func reloadOnChange(ctx context.Context, eng *mcpxpolicy.Engine, paths []string, logger *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	hupc := make(chan struct{}, 1)
	go func() {
		for range hup {
			select {
			case hupc <- struct{}{}:
			default:
			}
		}
	}()
	go func() {
		defer signal.Stop(hup)
		if err := server.Watch(ctx, eng, paths, hupc, logger, nil); err != nil {
			logger.Error("config watch failed; reload with SIGHUP", "err", err)
		}
	}()
}

// serveProxyHTTP serves the proxy over Streamable HTTP at /mcp: each MCP
// session gets its own server process.
func serveProxyHTTP(ctx context.Context, addr string, opts proxy.Options, start proxy.StartFunc, logger *slog.Logger, stderr io.Writer) int {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fail(stderr, err, "")
	}
	if !loopback(ln.Addr()) {
		fmt.Fprintf(stderr, "mcpx-policy: warning: listening on %s, beyond loopback: anyone who can reach it can use the server\n", ln.Addr())
	}
	h := proxy.NewHTTPHandler(ctx, opts, start)
	defer h.Close()
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10}
	logger.Info("proxy listening", "url", "http://"+ln.Addr().String()+"/mcp")
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fail(stderr, err, "")
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	return 0
}
