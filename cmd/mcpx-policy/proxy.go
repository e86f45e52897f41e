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
	"slices"
	"strings"
	"syscall"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/metrics"
	"github.com/mcpx/mcpx-policy/internal/netcap"
	"github.com/mcpx/mcpx-policy/internal/proxy"
	"github.com/mcpx/mcpx-policy/internal/server"
	"github.com/mcpx/mcpx-policy/internal/trust"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

const proxyUsage = `usage: mcpx-policy proxy --config F [--config F…] [--set PATH=VALUE…] --server NAME [--pool-only] [--state-dir D]
                         [--listen ADDR] [--idle-timeout 30m] [--max-sessions 16]
                         [--publish-closed-schemas]
                         [--publish-rules]
                         [--call-timeout 10m] [--task-timeout 1h] [--decide-timeout 5s]
                         [--tools-max-age 0]
                         [--approval-ttl 5m]
                         [--approvals-page --token-file F] [--approvals-url URL]
                         [--approval-webhook URL --approval-webhook-secret-file F
                          [--approval-webhook-format slack|json]]
                         [--log-level info] [--decision-log PATH]
                         [--record DIR [--record-redact P…] [--record-max-bytes 64MiB]
                          [--record-max-age 168h]]
                         (-- CMD ARGS… | --url URL [--sse] [--bearer-token-file F | --bearer-token-env VAR |
                          --oauth-token-url URL --oauth-client-id ID
                          (--oauth-client-secret-file F | --oauth-client-secret-env VAR)
                          [--oauth-scope "S …"] | --pass-client-authorization])

Runs the MCP server CMD ARGS… and speaks MCP to it over stdio, and to the
client over stdio (or Streamable HTTP at http://ADDR/mcp with --listen,
which also serves /healthz, /readyz and Prometheus /metrics).
With --url it fronts the MCP server at URL over Streamable HTTP instead
(https, or http to a loopback address; the certificate is verified, and
SSL_CERT_FILE names other roots), judged exactly as a command's: a write
whose HTTP answer is lost, or whose session the server drops, is an
unknown outcome. With --sse, URL is the event stream of a server on the
legacy HTTP+SSE transport (MCP 2024-11-05), whose message endpoint must
be on the same origin. --bearer-token-file F (a file only you may write) or
--bearer-token-env VAR gives it a bearer token, sent to that origin only
and never shown; or --oauth-token-url with a client id and secret gets
one with the OAuth client credentials grant, renewed when it expires;
or, with --listen, --pass-client-authorization sends each session the
bearer token its own client gave (the server checks it, not the proxy).
Every message passes through, except: tools/list drops hidden tools, and
tools whose definition changed since it was pinned (pinTools) until
'mcpx-policy pins accept'; with --publish-rules it adds the argument rules
that apply to each tool to its inputSchema (docs/proxy.md);
tools/call is decided first — a deny or a hidden tool is answered by the
proxy; an ask is put to the person as an input_required result (MCP
2026-07-28 clients) or an elicitation/create form (older ones), held as
an approval request in the state dir that expires after --approval-ttl;
a client that can do neither is sent to the approvals page (URL
elicitation) when it declares that, and is otherwise refused with
ConfirmationUnavailable naming the request and how a person approves it
('mcpx-policy approve …', the --approvals-url page): the same call, sent
again afterwards, runs once (docs/approvals.md);
a warn adds the _ignored_options rider. A write whose answer is lost (the server exits,
the pipe breaks, the call times out or is cancelled) is recorded as an
unknown outcome and blocks further writes to NAME until
'mcpx-policy writes clear NAME'. A write the server runs as an MCP task
stays in flight until the task's terminal status: anything but completed,
or none within the task's ttl or --task-timeout, is an unknown outcome. A decision that takes longer than
--decide-timeout is stopped and the call refused (PolicyError). A call is
judged with the server's tool list as listed after the server's last
notifications/tools/list_changed, and at most --tools-max-age old (0: a
2026-07-28 client's call lists the tools anew). Logs go to
stderr (an unknown-outcome ledger that stops reading, and reads again, is
logged once each time); stdout is the client's. --record DIR writes every tools/call with
the policy's decision to DIR for 'mcpx-policy replay', as serve --record
does (mcpx-policy serve -h).

--decision-log PATH appends one JSON line per decided tools/call to PATH
(made 0600), as serve's decision log (docs/service.md#decision-log):
OPA's decision-log shape, the arguments as a hash only, requested_by
"proxy:NAME". stdout is the client's, so the log is always a file. A
decision that cannot be written to it is refused (PolicyError), the call
unsent, until a line can be written again.

NAME must be a server of the config (servers.NAME): a proxy for a server
the config does not name would apply none of its rules. --pool-only runs
one anyway, with the pool's settings alone.

  mcpx-policy proxy --config ~/.config/mcpx-policy/config.yaml --server fs -- \
      npx -y @modelcontextprotocol/server-filesystem /workspace
  mcpx-policy proxy --config policy.yaml --server fs --listen 127.0.0.1:8282 -- mcp-server-filesystem /workspace
  mcpx-policy proxy --config policy.yaml --server fs --listen 127.0.0.1:8282 --approvals-page --token-file token -- \
      mcp-server-filesystem /workspace
  mcpx-policy proxy --config policy.yaml --server docs --url https://mcp.example.com/mcp \
      --bearer-token-file ~/.config/mcpx-policy/docs.token

See docs/proxy.md for Claude Desktop, Claude Code and Codex configs.

Exit status: 0 when the client ends the session (stdin closes) or after
SIGINT or SIGTERM; 1 error (usage, a config that does not load, a server
command that cannot start or that exits).
`

func runProxy(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpx-policy proxy", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var configs stringList
	fs.Var(&configs, "config", "config file (repeatable, layered in order)")
	name := fs.String("server", "", "the server's name in the config")
	set := addSetFlag(fs)
	poolOnly := fs.Bool("pool-only", false, "accept a --server the config does not configure: only the pool's settings apply")
	idle := fs.Duration("idle-timeout", 30*time.Minute, "with --listen: end a session whose client sent nothing and held no stream open this long")
	maxSessions := fs.Int("max-sessions", proxy.DefaultMaxSessions, "with --listen: the most sessions (server processes) at once; past it, and past a few not yet initialized, a new session is a 503")
	stateDir := fs.String("state-dir", "", "state directory holding ledger.json")
	listen := fs.String("listen", "", "serve Streamable HTTP on this address instead of stdio")
	closed := fs.Bool("publish-closed-schemas", false, "stamp additionalProperties: false into tools/list schemas that take no position")
	publishRules := fs.Bool("publish-rules", false, "add the argument rules that apply to each tool to the inputSchema tools/list returns")
	timeout := fs.Duration("call-timeout", 10*time.Minute, "how long a write waits for its answer before its outcome is unknown (0: forever)")
	taskTimeout := fs.Duration("task-timeout", proxy.DefaultTaskTimeout, "how long a write the server runs as a task may take to end before its outcome is unknown")
	toolsMaxAge := fs.Duration("tools-max-age", 0, "the oldest the server's tool list a call is judged with may be (0: a 2026-07-28 client's call lists the tools anew; an older client's session keeps the list until the server announces a change)")
	level := fs.String("log-level", "info", "stderr log level: debug, info, warn or error")
	decisionLog := fs.String("decision-log", "off", "append one JSON line per decided tools/call to this file, or off")
	decideTimeout := decideTimeoutFlag(fs)
	approvalTTL := approvalTTLFlag(fs)
	record := addRecordFlags(fs)
	tokenFile := fs.String("token-file", "", "with --approvals-page: file holding the operator token a person logs in with")
	oob := addOutOfBandFlags(fs)
	remoteURL := fs.String("url", "", "front the MCP server at this Streamable HTTP URL instead of a command")
	bearerFile := fs.String("bearer-token-file", "", "with --url: a file holding the bearer token to send")
	bearerEnv := fs.String("bearer-token-env", "", "with --url: an environment variable holding the bearer token to send")
	oauthURL := fs.String("oauth-token-url", "", "with --url: the OAuth token endpoint to get the bearer token from (client credentials grant)")
	oauthID := fs.String("oauth-client-id", "", "with --oauth-token-url: the OAuth client id")
	oauthSecretFile := fs.String("oauth-client-secret-file", "", "with --oauth-token-url: a file holding the OAuth client secret")
	oauthSecretEnv := fs.String("oauth-client-secret-env", "", "with --oauth-token-url: an environment variable holding the OAuth client secret")
	oauthScope := fs.String("oauth-scope", "", "with --oauth-token-url: the scopes to ask for, separated by spaces")
	passAuth := fs.Bool("pass-client-authorization", false, "with --url and --listen: send the server each client's own bearer token instead of one of the proxy's")
	sse := fs.Bool("sse", false, "with --url: the URL is the event stream of a server on the legacy HTTP+SSE transport (MCP 2024-11-05)")
	if err := fs.Parse(args); err != nil {
		return usageError(stdout, stderr, proxyUsage, err)
	}
	if err := oob.check(*listen != "", *tokenFile != ""); err != nil {
		return usageError(stdout, stderr, proxyUsage, err)
	}
	switch {
	case len(configs) == 0:
		return usageError(stdout, stderr, proxyUsage, fmt.Errorf("proxy needs --config"))
	case *name == "":
		return usageError(stdout, stderr, proxyUsage, fmt.Errorf("proxy needs --server NAME (the server's name in the config)"))
	case fs.NArg() == 0 && *remoteURL == "":
		return usageError(stdout, stderr, proxyUsage, fmt.Errorf("proxy needs the server command after --, or --url"))
	case fs.NArg() > 0 && *remoteURL != "":
		return usageError(stdout, stderr, proxyUsage, fmt.Errorf("proxy takes a server command or --url, not both"))
	case *sse && *remoteURL == "":
		return usageError(stdout, stderr, proxyUsage, fmt.Errorf("--sse goes with --url"))
	case *remoteURL == "" && (*bearerFile != "" || *bearerEnv != ""):
		return usageError(stdout, stderr, proxyUsage, fmt.Errorf("--bearer-token-file and --bearer-token-env go with --url"))
	case *bearerFile != "" && *bearerEnv != "":
		return usageError(stdout, stderr, proxyUsage, fmt.Errorf("give one of --bearer-token-file and --bearer-token-env"))
	case *remoteURL == "" && (*oauthURL != "" || *oauthID != "" || *oauthSecretFile != "" || *oauthSecretEnv != "" || *oauthScope != ""):
		return usageError(stdout, stderr, proxyUsage, fmt.Errorf("the --oauth-* flags go with --url"))
	case (*bearerFile != "" || *bearerEnv != "") && (*oauthURL != "" || *oauthID != "" || *oauthSecretFile != "" || *oauthSecretEnv != "" || *oauthScope != ""):
		return usageError(stdout, stderr, proxyUsage, fmt.Errorf("give a bearer token or OAuth client credentials, not both"))
	case *oauthURL == "" && (*oauthURL != "" || *oauthID != "" || *oauthSecretFile != "" || *oauthSecretEnv != "" || *oauthScope != ""):
		return usageError(stdout, stderr, proxyUsage, fmt.Errorf("the --oauth-* flags need --oauth-token-url"))
	case *passAuth && (*remoteURL == "" || *listen == ""):
		return usageError(stdout, stderr, proxyUsage, fmt.Errorf("--pass-client-authorization goes with --url and --listen"))
	case *passAuth && (*bearerFile != "" || *bearerEnv != "" || *oauthURL != ""):
		return usageError(stdout, stderr, proxyUsage, fmt.Errorf("pass the client's bearer token (--pass-client-authorization) or give one, not both"))
	case *oauthURL != "" && *oauthID == "":
		return usageError(stdout, stderr, proxyUsage, fmt.Errorf("--oauth-token-url needs --oauth-client-id"))
	case *oauthURL != "" && (*oauthSecretFile == "") == (*oauthSecretEnv == ""):
		return usageError(stdout, stderr, proxyUsage, fmt.Errorf("--oauth-token-url needs one of --oauth-client-secret-file and --oauth-client-secret-env"))
	case *decideTimeout <= 0:
		return usageError(stdout, stderr, proxyUsage, errDecideTimeout)
	case *approvalTTL <= 0:
		return usageError(stdout, stderr, proxyUsage, errApprovalTTL)
	case *taskTimeout <= 0:
		return usageError(stdout, stderr, proxyUsage, fmt.Errorf("--task-timeout must be more than 0"))
	case *toolsMaxAge < 0:
		return usageError(stdout, stderr, proxyUsage, fmt.Errorf("--tools-max-age must not be negative"))
	case *maxSessions <= 0:
		return usageError(stdout, stderr, proxyUsage, fmt.Errorf("--max-sessions must be more than 0"))
	case *idle <= 0:
		return usageError(stdout, stderr, proxyUsage, fmt.Errorf("--idle-timeout must be more than 0"))
	case *decisionLog == "" || *decisionLog == "-":
		return usageError(stdout, stderr, proxyUsage, fmt.Errorf("--decision-log takes a file (or off): stdout is the MCP client's"))
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		return usageError(stdout, stderr, proxyUsage, fmt.Errorf("unknown --log-level %q", *level))
	}
	var remote proxy.RemoteOptions
	upstreamName := ""
	if *remoteURL != "" {
		shown, err := proxy.CheckRemoteURL(*remoteURL)
		if err != nil {
			return usageError(stdout, stderr, proxyUsage, fmt.Errorf("--url: %w", err))
		}
		upstreamName = "the MCP server at " + shown
		remote.PassClientAuthorization = *passAuth
		remote.SSE = *sse
		if remote.Token, err = bearerToken(*bearerFile, *bearerEnv, stderr); err != nil {
			return fail(stderr, err, "")
		}
		if *oauthURL != "" {
			if _, err := proxy.CheckRemoteURL(*oauthURL); err != nil {
				return usageError(stdout, stderr, proxyUsage, fmt.Errorf("--oauth-token-url: %w", err))
			}
			secret, err := readSecret("--oauth-client-secret", "OAuth client secret", *oauthSecretFile, *oauthSecretEnv, stderr)
			if err != nil {
				return fail(stderr, err, "")
			}
			remote.OAuth = &proxy.ClientCredentials{TokenURL: *oauthURL, ClientID: *oauthID, ClientSecret: secret, Scopes: strings.Fields(*oauthScope)}
		}
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lv}))
	token, hint, err := readTokenFile(*tokenFile, stderr)
	if err != nil {
		return fail(stderr, err, hint)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var ln net.Listener
	if *listen != "" {
		// The listener comes first: the approvals page's link names its port.
		var err error
		if ln, err = net.Listen("tcp", *listen); err != nil {
			return fail(stderr, err, "")
		}
		defer ln.Close()
	}
	var eng *mcpxpolicy.Engine
	var met *metrics.Metrics
	var observer mcpxpolicy.Observer
	if *listen != "" {
		met = newMetrics(&eng, false)
		observer = met
	}
	engOpts := mcpxpolicy.Options{ConfigPaths: configs, Env: os.Environ(), Set: set.options(), StateDir: *stateDir, DecideTimeout: *decideTimeout, ApprovalTTL: *approvalTTL, Observer: observer}
	held, err := oob.open(ln, &engOpts, logger, stderr)
	if err != nil {
		return fail(stderr, err, "")
	}
	defer held.close()
	watcher := watchConfig(configs, logger)
	eng, err = mcpxpolicy.New(ctx, engOpts)
	if err != nil {
		watcher.Close()
		return fail(stderr, err, "run '"+checkCommand(configs)+"' to see every config problem")
	}
	if !slices.Contains(eng.Servers(), *name) {
		if !*poolOnly {
			return fail(stderr, fmt.Errorf("--server %q names no server of the config (%s)", *name, configuredList(eng.Servers())),
				"give --server the name of the server's entry under servers:, or --pool-only to run it with the pool's settings alone")
		}
		fmt.Fprintf(stderr, "mcpx-policy: warning: --pool-only: %s\n", mcpxpolicy.UnconfiguredWarning(*name, eng.Servers()))
	}
	defer eng.Close()
	cmds := eng.Commands() // a database's entries are cleared through --config
	for _, w := range eng.Warnings() {
		fmt.Fprintf(stderr, "mcpx-policy: warning: %s\n", w)
	}
	if n, err := eng.Writes().Recover(); err != nil {
		fmt.Fprintf(stderr, "mcpx-policy: warning: unknown-outcome ledger: %v (writes are refused until it reads)\n", err)
	} else if n > 0 {
		fmt.Fprintf(stderr, "mcpx-policy: warning: %d write(s) of a process that died are now unknown outcomes: see '%s'\n", n, cmds.Writes())
	}
	reloadOnChange(ctx, eng, watcher, logger)
	watchLedger(ctx, eng, logger, ledgerCheckEvery)
	onDecision, err := record.open(eng, logger)
	if err != nil {
		return fail(stderr, err, "")
	}
	var logDecision func(decision.Call, mcpxpolicy.Redacted) error
	if *decisionLog != "off" {
		f, err := os.OpenFile(*decisionLog, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return fail(stderr, err, "")
		}
		defer f.Close()
		dl := server.NewDecisionLogger(f, logger)
		requestedBy := "proxy:" + *name
		logDecision = func(call decision.Call, shown mcpxpolicy.Redacted) error {
			return dl.Log(requestedBy, eng.Revision(), call, shown, 0)
		}
	}
	opts := proxy.Options{Engine: eng, Server: *name, PublishClosedSchemas: *closed, PublishRules: *publishRules, CallTimeout: *timeout, TaskTimeout: *taskTimeout, ToolsMaxAge: *toolsMaxAge, Logger: logger, Commands: cmds, DecisionLog: logDecision}
	if onDecision != nil {
		// the proxy's decision is the policy's own (an ask's, however a
		// person answered it): never an approval's allow
		opts.OnDecision = func(call decision.Call, shown mcpxpolicy.Redacted, dispatched bool) {
			onDecision(call, shown, dispatched, false)
		}
	}
	if met != nil {
		opts.OnAskAnswered = met.AskAnswered
	}
	command := fs.Args()
	start := func(ctx context.Context) (proxy.Conn, error) {
		cmd := exec.Command(command[0], command[1:]...)
		cmd.Stderr = stderr
		return proxy.StartCommand(cmd, 2*time.Second)
	}
	if *remoteURL != "" {
		endpoint := *remoteURL
		start = func(ctx context.Context) (proxy.Conn, error) {
			return proxy.ConnectRemote(ctx, endpoint, remote)
		}
	} else {
		upstreamName = command[0]
	}
	if *listen != "" {
		upstream := start
		start = func(ctx context.Context) (proxy.Conn, error) {
			c, err := upstream(ctx)
			if err != nil {
				return nil, err
			}
			return watched{Conn: c, up: met.Upstream(c)}, nil
		}
		page, err := oob.handler(eng, token, logger)
		if err != nil {
			return fail(stderr, err, "")
		}
		hopts := []proxy.HTTPOption{proxy.IdleTimeout(*idle), proxy.MaxSessions(*maxSessions)}
		if *remoteURL != "" {
			// A stateless discovery costs a connection, not a process:
			// the remote server answers it — unless it speaks the legacy
			// SSE transport, which predates stateless requests: the proxy
			// answers discovery and listening itself, as for a command.
			if !*sse {
				hopts = append(hopts, proxy.DiscoverUpstream())
			}
			if *passAuth {
				hopts = append(hopts, proxy.PassAuthorization())
			}
		} else {
			// A process is slow to start: one is kept ready for the
			// next stateless request.
			hopts = append(hopts, proxy.StartAhead())
		}
		return serveProxyHTTP(ctx, ln, opts, start, hopts, server.Probes(eng, met), page, logger, stderr)
	}
	serverConn, err := start(ctx)
	if err != nil {
		return fail(stderr, fmt.Errorf("starting %s: %w", upstreamName, err), "")
	}
	err = proxy.Run(ctx, opts, proxy.Stdio(), serverConn)
	switch {
	case err == nil, errors.Is(err, context.Canceled):
		return 0
	case errors.Is(err, proxy.ErrServerGone):
		if *remoteURL != "" {
			return fail(stderr, fmt.Errorf("%s ended the session: %v", upstreamName, err), "")
		}
		return fail(stderr, fmt.Errorf("%s exited: %v", upstreamName, err), "")
	default:
		return fail(stderr, err, "")
	}
}

// maxTokenFile caps a bearer token file: a token is a few hundred bytes.
const maxTokenFile = 64 << 10

// bearerToken reads the bearer token for --url: from a file the operator
// trusts with a secret (a regular file of theirs that no other user may
// write; a warning when others may read it), or from an environment
// variable; "" when neither is given. Spaces around it are trimmed; an
// empty token, or one with a control character, is an error. The error
// never holds the token.
func bearerToken(file, env string, stderr io.Writer) (string, error) {
	return readSecret("--bearer-token", "bearer token", file, env, stderr)
}

// readSecret reads a secret from the file of flag+"-file" or the
// environment variable of flag+"-env", as bearerToken does; what names it
// in messages. The error never holds the secret.
func readSecret(flag, what, file, env string, stderr io.Writer) (string, error) {
	var token string
	switch {
	case file != "":
		b, exposed, err := trust.ReadTrusted(file, trust.Secret, maxTokenFile)
		if err != nil {
			var te *trust.Error
			if errors.As(err, &te) && te.Hint != "" {
				return "", fmt.Errorf("%s-file: %w (%s)", flag, err, te.Hint)
			}
			return "", fmt.Errorf("%s-file: %w", flag, err)
		}
		if exposed != "" {
			fmt.Fprintf(stderr, "mcpx-policy: warning: %s file %s\n", what, exposed)
		}
		token = strings.TrimSpace(string(b))
		if token == "" {
			return "", fmt.Errorf("%s-file %s is empty", flag, file)
		}
	case env != "":
		token = strings.TrimSpace(os.Getenv(env))
		if token == "" {
			return "", fmt.Errorf("%s-env: $%s is empty or unset", flag, env)
		}
	default:
		return "", nil
	}
	for _, r := range token {
		if r < 0x21 || r == 0x7f {
			return "", fmt.Errorf("the %s holds a space or a control character", what)
		}
	}
	return token, nil
}

// watched is the proxy's connection to the MCP server as the metrics see
// it: reads, writes and close go through them.
type watched struct {
	proxy.Conn
	up *metrics.UpstreamConn
}

func (w watched) Read(ctx context.Context) (jsonrpc.Message, error) { return w.up.Read(ctx) }

func (w watched) Write(ctx context.Context, m jsonrpc.Message) error { return w.up.Write(ctx, m) }

func (w watched) Close() error { return w.up.Close() }

// reloadOnChange reloads the config on a change to any of the files
// watcher watches (made by watchConfig before the config was read) and on
// SIGHUP, keeping the old policy when the new one fails to load, until ctx
// ends. SIGHUP is caught from the moment it returns.
func reloadOnChange(ctx context.Context, eng *mcpxpolicy.Engine, watcher *server.Watcher, logger *slog.Logger) {
	if watcher == nil {
		return // watchConfig logged why
	}
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
		if err := watcher.Run(ctx, eng, hupc, logger, nil); err != nil {
			logger.Error("config watch failed; reload with SIGHUP", "err", err)
		}
	}()
}

// watchConfig starts watching paths before the config is read, so that a
// change made while it loads is reloaded, not missed; nil (logged) when
// the files cannot be watched.
func watchConfig(paths []string, logger *slog.Logger) *server.Watcher {
	w, err := server.NewWatcher(paths)
	if err != nil {
		logger.Error("config watch failed; changes to the config are not reloaded", "err", err)
		return nil
	}
	return w
}

// serveProxyHTTP serves the proxy over Streamable HTTP at /mcp on ln: each
// MCP session gets its own server process and ends after idle without its
// client. page, when not nil, is the approvals page at /approvals; probes
// serves every other path (/healthz, /readyz, /metrics). The connections
// open at once are capped (maxConns).
func serveProxyHTTP(ctx context.Context, ln net.Listener, opts proxy.Options, start proxy.StartFunc, hopts []proxy.HTTPOption, probes, page http.Handler, logger *slog.Logger, stderr io.Writer) int {
	if !loopback(ln.Addr()) {
		fmt.Fprintf(stderr, "mcpx-policy: warning: listening on %s, beyond loopback: anyone who can reach it can use the server\n", ln.Addr())
	}
	h := proxy.NewHTTPHandler(ctx, opts, start, hopts...)
	defer h.Close()
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	if page != nil {
		mux.Handle("/approvals", page)
		mux.Handle("/approvals/", page)
		logger.Info("serving the approvals page", "url", "http://"+ln.Addr().String()+"/approvals")
	}
	mux.Handle("/", probes)
	capped := netcap.New(ln, maxConns)
	// No ReadTimeout or WriteTimeout: a session's event stream (GET) lives
	// long; each POST body has its own read deadline (proxy.HTTPHandler).
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 60 * time.Second,
		MaxHeaderBytes: 64 << 10, ConnState: capped.ConnState}
	logger.Info("proxy listening", "url", "http://"+ln.Addr().String()+"/mcp")
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(capped.Listener()) }()
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

// checkCommand is the `mcpx-policy check` of the config files, absolute,
// so that it runs as printed from any directory.
func checkCommand(configs []string) string {
	s := "mcpx-policy check"
	for _, f := range configs {
		s += " --config " + writesQuote(absPath(f))
	}
	return s
}

func configuredList(servers []string) string {
	if len(servers) == 0 {
		return "it configures none"
	}
	return "it configures " + strings.Join(servers, ", ")
}
