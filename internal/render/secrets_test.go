package render_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/redact"
	"github.com/mcpx/mcpx-policy/internal/render"
)

// secret is one realistic secret: key is the argument it is passed under,
// value what is passed, and leak the part that must never be rendered.
type secret struct {
	name  string
	key   string
	value any
	leak  string
}

// secrets are fake but shaped like the real thing. The first group is
// found by key name (values with no telling shape); the second by value
// shape, under keys that say nothing.
var secrets = []secret{
	// By key name.
	{"password", "password", "hunter2-Correct-Horse", "hunter2-Correct-Horse"},
	{"api_key", "api_key", "live-8f3kQ2-acme", "live-8f3kQ2-acme"},
	{"client secret", "clientSecret", "s3cr3t-value-abc", "s3cr3t-value-abc"},
	{"cookie", "Cookie", "sessionid=abc123def456", "abc123def456"},
	{"aws secret access key", "aws_secret_access_key", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
	{"env password", "env", map[string]any{"PGPASSWORD": "pg-pass-9981", "PGHOST": "db.internal"}, "pg-pass-9981"},
	{"otp number", "otp", 482913, "482913"},
	{"private key by name", "private_key", "base64:Qk1hY2tTdGF0aWNLZXk=", "Qk1hY2tTdGF0aWNLZXk"},
	{"token list", "api_tokens", []any{"plain-token-one", "plain-token-two"}, "plain-token-two"},
	{"session id", "session_id", "s%3AJ8x2kq.Lm9", "J8x2kq.Lm9"},
	// By value shape.
	{"bearer token", "command", "curl -H 'Authorization: Bearer 8xKq0ZtYwV3nR7uLp2sD5fGh' https://api.example.com", "8xKq0ZtYwV3nR7uLp2sD5fGh"},
	{"jwt", "text", "the token is eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c ok", "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"},
	{"pem private key", "content", "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi6Z5zX0sKq\nbVbS1nZr3Xq9w2Xk7Fh0PqR8sT5uV6wY7zA1bC2dE3fG4hI5\n-----END RSA PRIVATE KEY-----\n", "MIIEowIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi6Z5zX0sKq"},
	{"aws access key id", "command", "aws configure set aws_access_key_id AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"},
	{"gcp api key", "url", "https://maps.googleapis.com/maps/api/geocode/json?address=Berlin&key=AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY", "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"},
	{"gcp oauth token", "note", "use ya29.a0AfH6SMBx3kLq9Zr7Tn4Lp9Vw3Hs6Jd1Fb5 for now", "ya29.a0AfH6SMBx3kLq9Zr7Tn4Lp9Vw3Hs6Jd1Fb5"},
	{"github token", "remote", "https://ghp_16C7e42F292c6912E7710c838347Ae178B4a@github.com/acme/billing.git", "ghp_16C7e42F292c6912E7710c838347Ae178B4a"},
	{"github fine-grained pat", "note", "github_pat_11ABCDEFG0abcdefghijklm_nopqrstuvwxyz0123456789ABCDEFGHIJ", "github_pat_11ABCDEFG0abcdefghijklm"},
	{"slack bot token", "text", "xoxb-2048-4096-aBcDeFgHiJkLmNoPqRsTuVwX", "aBcDeFgHiJkLmNoPqRsTuVwX"},
	{"slack webhook", "target", "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX", "XXXXXXXXXXXXXXXXXXXXXXXX"},
	{"openai key", "notes", "OPENAI sk-proj-Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzXcVbNm", "Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzXcVbNm"},
	{"anthropic key", "notes", "sk-ant-api03-Qm2Xr7Tn4Lp9Vw3Hs6Jd1Fb5Gc0YaZk8Q", "Qm2Xr7Tn4Lp9Vw3Hs6Jd1Fb5Gc0YaZk8Q"},
	{"stripe key", "cmd", "stripe --api-key=sk_live_4eC39HqLyjWDarjtT1zdp7dc customers list", "4eC39HqLyjWDarjtT1zdp7dc"},
	{"url password", "database_url", "postgres://app:Pg-S3cret-99@db.internal:5432/prod", "Pg-S3cret-99"},
	{"query token", "url", "https://api.example.com/v1/items?limit=5&access_token=qwerty123secret", "qwerty123secret"},
	{"cli flag", "command", "mysql -h db.internal --password hunter22pass -e 'select 1'", "hunter22pass"},
	{"env assignment", "script", "export GITHUB_TOKEN=abc123notashape && make release", "abc123notashape"},
	{"high entropy", "blob", "Zk8Qm2Xr7Tn4Lp9Vw3Hs6Jd1Fb5Gc0Ya", "Zk8Qm2Xr7Tn4Lp9Vw3Hs6Jd1Fb5Gc0Ya"},
	{"npm token", "npmrc", "//registry.npmjs.org/:_authToken=npm_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789", "npm_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"},
	{"json text in a string", "body", `{"user": "app", "password": "Hunter3-Json-String"}`, "Hunter3-Json-String"},
	{"escaped json text in a string", "body", `{\"user\": \"app\", \"password\": \"Hunter3-Json-String\"}`, "Hunter3-Json-String"},
	{"mysql glued -p", "command", "mysql -h db -u root -pHunter4GluedFlag shop", "Hunter4GluedFlag"},
	{"sshpass", "command", "sshpass -p 'Ssh-Pass-55' ssh deploy@web1", "Ssh-Pass-55"},
	{"curl -u", "command", "curl -u admin:Curl-Pass-8 https://api.example.com", "Curl-Pass-8"},
	{"pgp private key", "content", "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBGR1c2VyAQgAq3k9Zp2WmXr7\n=Ab12\n-----END PGP PRIVATE KEY BLOCK-----\n", "lQOYBGR1c2VyAQgAq3k9Zp2WmXr7"},
	{"openssh private key", "content", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ"},
	{"gcp service account", "credentials_json", map[string]any{"type": "service_account", "private_key_id": "1a2b3c4d5e6f7a8b9c0d", "private_key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"}, "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"},
	{"gcp service account as text", "content", `{"type": "service_account", "private_key_id": "1a2b3c4d5e6f7a8b9c0d", "client_email": "ci@acme.iam.gserviceaccount.com"}`, "1a2b3c4d5e6f7a8b9c0d"},
	{"azure connection string", "conn", "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=Zk8Qm2Xr7Tn4Lp9Vw3Hs6Jd1Fb5Gc0Ya+Q==;EndpointSuffix=core.windows.net", "Zk8Qm2Xr7Tn4Lp9Vw3Hs6Jd1Fb5Gc0Ya"},
	{"mongodb url", "uri", "mongodb+srv://admin:Mongo-Pass-1@cluster0.mongodb.net/db", "Mongo-Pass-1"},
	{"ado.net connection string", "conn", "Server=tcp:db,1433;Database=shop;User ID=app;Password=Ad0-Pass-77;Encrypt=true", "Ad0-Pass-77"},
	{".env file", "content", "DB_HOST=db.internal\nDB_PASSWORD=s3cr3t-env-pw\n", "s3cr3t-env-pw"},
}

// renderings returns every rendering of d and call on every surface, as
// text: daemon, MCP, CLI, ask prompt (text, daemon body, elicitation),
// Render for each surface, and the decision after Redact.
func renderings(t *testing.T, call decision.Call, d decision.Decision) map[string]string {
	t.Helper()
	out := map[string]string{}
	js := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	s, b := render.Daemon(redact.Of(d, nil))
	out["daemon"] = fmt.Sprint(s) + js(b)
	out["mcp"] = js(render.MCP(redact.Of(d, nil)))
	out["cli"] = render.CLI(redact.Of(d, nil))
	out["redact"] = js(redact.Redact(d, nil))
	for _, surface := range []string{render.SurfaceDaemon, render.SurfaceMCP, render.SurfaceCLI} {
		v, err := render.Render(surface, call, redact.Of(d, call.Args))
		if err != nil {
			t.Fatal(err)
		}
		out["render "+surface] = js(v)
	}
	if d.Outcome == decision.Ask {
		p, err := render.Prompt(call, redact.Of(d, call.Args))
		if err != nil {
			t.Fatal(err)
		}
		out["prompt text"] = p.Text()
		out["prompt json"] = js(p)
		out["elicitation"] = js(p.Elicitation())
		s, b, err := render.DaemonAsk(call, redact.Of(d, call.Args))
		if err != nil {
			t.Fatal(err)
		}
		out["daemon ask"] = fmt.Sprint(s) + js(b)
	}
	return out
}

// assertNoLeak fails for every rendering that contains leak, raw or
// JSON-escaped.
func assertNoLeak(t *testing.T, leak string, outs map[string]string) {
	t.Helper()
	q, _ := json.Marshal(leak)
	esc := strings.Trim(string(q), `"`)
	for name, s := range outs {
		if strings.Contains(s, leak) || strings.Contains(s, esc) {
			t.Errorf("%s leaks %q:\n%s", name, leak, s)
		}
	}
}

// TestSecretsNeverRendered puts each secret in a call's arguments, in a
// violation's value, in the messages that echo it and in details, and
// checks no rendering on any surface shows it: refusals, asks, prompts,
// elicitations.
func TestSecretsNeverRendered(t *testing.T) {
	t.Parallel()
	if len(secrets) < 15 {
		t.Fatalf("the secret table has %d rows; it needs at least 15", len(secrets))
	}
	for _, s := range secrets {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			args := map[string]any{"path": "/workspace/deploy.sh", s.key: s.value}
			call := decision.Call{Server: "ops", Tool: decision.Tool{Name: "run"}, Args: args}
			cref := ref(t, call)
			echo := fmt.Sprintf("%v", s.value)
			ptr := "/" + s.key

			rule := reason(decision.ArgumentRuleViolation,
				fmt.Sprintf("ops.run: %s %q does not match ^safe$ (rule ops-safe, ops.yaml:3)", ptr, echo))
			rule.Violations = []decision.Violation{{
				Path: ptr, Value: s.value, Constraint: "pattern", Expected: "^safe$",
				Detail: "got " + echo,
				Rule:   decision.RuleRef{ID: "ops-safe", Origin: "ops.yaml:3"},
			}}
			rule.Details = map[string]any{"offending": map[string]any{s.key: s.value}}
			denyRule := decision.Decision{Outcome: decision.Deny, Step: decision.StepArgumentRules,
				Reasons: []decision.Reason{rule}, Warnings: []decision.Reason{}, Write: true, Call: cref}
			assertNoLeak(t, s.leak, renderings(t, call, denyRule))

			// An operator's own message that echoes the value, with no
			// violation naming it: Render holds the call, so it is caught.
			od := reason(decision.OverrideDeny, fmt.Sprintf("refusing %s=%s", s.key, echo))
			od.Details = map[string]any{"code": "echo", "seen": echo}
			denyOverride := decision.Decision{Outcome: decision.Deny, Step: decision.StepOverrides,
				Reasons: []decision.Reason{od}, Warnings: []decision.Reason{}, Write: true, Call: cref}
			outs := map[string]string{}
			for _, surface := range []string{render.SurfaceDaemon, render.SurfaceMCP, render.SurfaceCLI} {
				v, err := render.Render(surface, call, redact.Of(denyOverride, call.Args))
				if err != nil {
					t.Fatal(err)
				}
				b, _ := json.Marshal(v)
				outs["render "+surface] = string(b)
			}
			assertNoLeak(t, s.leak, outs)

			oa := reason(decision.OverrideAsk, fmt.Sprintf("confirm %s=%s", s.key, echo))
			askD := decision.Decision{Outcome: decision.Ask, Step: decision.StepOverrides,
				Reasons: []decision.Reason{oa, rule}, Warnings: []decision.Reason{}, Write: true, Call: cref}
			all := renderings(t, call, askD)
			for name, v := range renderings(t, call, render.Unavailable(askD)) {
				all["unavailable "+name] = v
			}
			for name, v := range renderings(t, call, render.Declined(askD)) {
				all["declined "+name] = v
			}
			assertNoLeak(t, s.leak, all)

			shown, _ := redact.RedactArgs(args)
			b, _ := json.Marshal(shown)
			assertNoLeak(t, s.leak, map[string]string{"RedactArgs": string(b)})
		})
	}
}

// TestSecretShapedIgnoredKeysNeverRendered checks the rider: an unknown
// argument whose name is a secret is redacted in content, _meta and
// structuredContent.
func TestSecretShapedIgnoredKeysNeverRendered(t *testing.T) {
	t.Parallel()
	for _, s := range secrets {
		str, ok := s.value.(string)
		if !ok || redact.SecretKey(s.key) {
			continue // only shapes are recognisable in a key
		}
		out, err := render.AddRider(json.RawMessage(`{"content":[],"structuredContent":{}}`), []string{str}, nil)
		if err != nil {
			t.Fatal(err)
		}
		assertNoLeak(t, s.leak, map[string]string{s.name: string(out)})
	}
}

// TestSecretKeysInPathsNeverRendered: a token pasted as an argument key
// turns up in a violation's path and in the message that names the path;
// no rendering shows it, and the path keeps its shape.
func TestSecretKeysInPathsNeverRendered(t *testing.T) {
	t.Parallel()
	const tok = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
	args := map[string]any{"headers": map[string]any{tok: "x"}}
	call := decision.Call{Server: "api", Tool: decision.Tool{Name: "get"}, Args: args}
	r := reason(decision.ArgumentRuleViolation, "api.get: /headers/"+tok+" is not allowed (rule closed-headers, api.yaml:3)")
	r.Violations = []decision.Violation{{Path: "/headers/" + tok, Value: "x", Constraint: "additionalProperties", Expected: false,
		Rule: decision.RuleRef{ID: "closed-headers", Origin: "api.yaml:3"}}}
	d := decision.Decision{Outcome: decision.Deny, Step: decision.StepArgumentRules, Reasons: []decision.Reason{r},
		Warnings: []decision.Reason{}, Write: true, Call: ref(t, call)}
	assertNoLeak(t, tok, renderings(t, call, d))
	if got := redact.Redact(d, nil).Reasons[0].Violations[0].Path; got != "/headers/[REDACTED github-token, 40 chars]" {
		t.Errorf("path = %q", got)
	}
}

// TestOverrideQuotingArgsIsScrubbedByMCP is what the proxy renders: MCP of
// the decision redacted with the call's arguments hides a password an
// operator's message quotes, raw or JSON-escaped.
func TestOverrideQuotingArgsIsScrubbedByMCP(t *testing.T) {
	t.Parallel()
	const pw = `Hunter2-"Correct"-Horse`
	args := map[string]any{"user": "app", "password": pw}
	call := decision.Call{Server: "db", Tool: decision.Tool{Name: "login"}, Args: args}
	q, _ := json.Marshal(pw)
	od := reason(decision.OverrideDeny, fmt.Sprintf("login refused: password %s is banned (%s)", pw, q))
	d := decision.Decision{Outcome: decision.Deny, Step: decision.StepOverrides, Reasons: []decision.Reason{od},
		Warnings: []decision.Reason{}, Write: true, Call: ref(t, call)}
	b, _ := json.Marshal(render.MCP(redact.Of(d, call.Args)))
	assertNoLeak(t, "Correct", map[string]string{"MCP": string(b)})
}

// TestLongValuesAreRedactedBeforeTheyAreCut: a key across the cut is
// recognised in the whole value, so not even its first characters show.
func TestLongValuesAreRedactedBeforeTheyAreCut(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", redact.MaxValueChars-10) + " AKIAIOSFODNN7EXAMPLE " + strings.Repeat("y", 100)
	shown, changed := redact.RedactArgs(map[string]any{"content": long})
	b, _ := json.Marshal(shown)
	assertNoLeak(t, "AKIAIOSF", map[string]string{"RedactArgs": string(b)})
	if len(changed) != 1 || changed[0] != "/content" {
		t.Errorf("changed = %v", changed)
	}
}
