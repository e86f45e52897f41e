package engine_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/engine"
)

// The argument-rule refusals built in Go show a violation's value as
// text.show_at does: judged where it stands in the arguments, so that a
// name beside it (a name field, the element before it) or above it hides
// it, and its secret-shaped parts redacted as text.redact does. Each test
// decides generated calls on the engine and on the same policy as a stock
// OPA evaluates it, and compares the decisions byte for byte
// (refusal_equiv_test.go's decider).

// secretsConfig has rules that refuse values beside names, under secret
// names, in command lines, and secret-shaped strings.
const secretsConfig = `version: 1
policy:
  unknownArgs: off
pool:
  argumentRules:
    - id: content
      tools: ["*"]
      argument: content
      schema: {"type": "string", "maxLength": 8, "not": {"pattern": "BEGIN [A-Z]* ?PRIVATE KEY"}}
    - id: value
      tools: ["*"]
      argument: value
      schema: {"type": "integer"}
    - id: deep
      tools: ["*"]
      argument: /env/0/value
      schema: {"maxLength": 2}
    - id: inner
      tools: ["*"]
      argument: /auth/password/x
      schema: {"maxLength": 2}
    - id: argv
      tools: ["*"]
      argument: argv
      schema: {"type": "array", "maxItems": 1}
    - id: one
      tools: ["*"]
      argument: /argv/1
      schema: {"maxLength": 2}
    - id: pw
      tools: ["*"]
      argument: password
      schema: {"maxLength": 2}
    - id: content2
      tools: ["*"]
      argument: content
      schema: {"maxLength": 9}
`

// TestRefusalsInGoHideByStructure: a refused value that a name beside it,
// or a key above it, hides is hidden in the engine's decision as in the
// Rego's; the engine's refusal builder leaves such calls to the Rego. Without
// it the builder showed {"name": "DB_PASSWORD", "content": …}'s content
// raw where the Rego hides it by its name.
func TestRefusalsInGoHideByStructure(t *testing.T) {
	c := newDecider(t, policyOfYAML(t, secretsConfig))
	calls := []map[string]any{
		{"name": "DB_PASSWORD", "content": "hunter2hunter"},
		{"key": "api_key", "value": "not-a-number"},
		{"Name": "x", "content": "hunter2hunter"}, // no secret named: shown
		{"env": []any{map[string]any{"name": "TOKEN", "value": "abcdef"}}},
		{"env": []any{map[string]any{"name": "HOME", "value": "abcdef"}}},
		{"auth": map[string]any{"password": map[string]any{"x": "abcdef"}}},
		{"argv": []any{"--password", "hunter2"}},
		{"argv": []any{"mysql", "-phunter2"}, "content": "hunter2hunter"},
		{"argv": []any{"ls", "-l"}, "content": "hunter2hunter"},
		{"command": "mysql", "argv": []any{"-phunter2", "x"}},
		{"header": "Authorization", "content": "Bearer abcdefghijklmnop"},
		{"content": "hunter2hunter", "meta": map[string]any{"k": "secret", "v": "1"}},
	}
	for i, args := range calls {
		for _, server := range []string{"s", "t"} { // the second meets the planned answer kept
			c.check(t, fmt.Sprintf("call %d on %s", i, server), decision.Call{Server: server, Tool: decision.Tool{Name: "tool"}, Args: args}, &engine.Ledger{})
		}
	}
	c.report(t)
}

// secretShaped are strings the secret table finds something in, in the
// shapes an agent may send: keys, tokens, flags, assignments, runs.
var secretShaped = []string{
	"-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA alpha beta gamma",
	"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY----- tail",
	"token ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa and ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	"Authorization: Bearer abcdefgh12345678",
	"password=hunter2 user=bob",
	"export API_KEY='s3cr3t value'",
	"mysql -u root -phunter2 db",
	"curl -u bob:hunter2 https://x",
	"postgres://bob:hunter2@db.example.com/x",
	"https://x.example.com/?token=abc123&q=1",
	"aZ3kLm9QpR2sT7uVwX1yZ0bC4dE5fG6h and /aZ3kLm9QpR2sT7uVwX1yZ0bC4dE5fG6h/x",
	"AKIAABCDEFGHIJKLMNOP",
	"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abc",
	"password:\n  hunter2",
	"--password hunter2 --user bob",
	"sk-proj-abcdefghijklmnopqrstuvwxyz",
	"key: |\n  line one\n  line two",
	"x" + strings.Repeat("ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa ", 5),
	"héllo wörld password=ünïcödé " + strings.Repeat("é", 130),
	strings.Repeat("password=a ", 30),
	strings.Repeat("a", 200) + " token=" + strings.Repeat("b", 10),
	"-----BEGIN EC PRIVATE KEY-----" + strings.Repeat(" alpha beta", 60),
	"Bearer abcdefgh12345678 Bearer abcdefgh12345678x",
	"secret=\"quoted value\" secret='x'",
	"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA1234567890",
	"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcd",
	"abcdefghijklmnopqrstuvwxyz0123456789ABCD/EFGHIJKLMNOPQRSTUVWXYZ012345678",
	"  {\"a\": 1}",
}

// TestRefusalsInGoRedactSecretShapedValues: a refused string with
// secret-shaped parts is shown redacted and cut as text.show does, in the
// engine's decision as in the Rego's, alone and among other arguments,
// under its own key and in an array.
func TestRefusalsInGoRedactSecretShapedValues(t *testing.T) {
	c := newDecider(t, policyOfYAML(t, secretsConfig))
	for i, s := range secretShaped {
		for j, args := range []map[string]any{
			{"content": s},
			{"content": s, "path": "/workspace/x", "argv": []any{"ls"}},
			{"argv": []any{"a", s}},
			{"content": "ok", "value": s},
			{"content": s, "password": s, "value": s}, // one string under three keys, one a secret's name
		} {
			c.check(t, fmt.Sprintf("value %d, call %d", i, j), decision.Call{Server: "s", Tool: decision.Tool{Name: "tool"}, Args: args}, &engine.Ledger{})
		}
	}
	c.report(t)
}

// secretFragments are the pieces generated strings are made of: parts of
// every kind of shape, runs that are and are not random-looking, words,
// separators, paths, line breaks and characters of other scripts.
var secretFragments = []string{
	"-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", "-----BEGIN PRIVATE KEY-----\n", "MIIEpAIBAAKCAQEA",
	"ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "AKIAABCDEFGHIJKLMNOP", "xoxb-1234567890-abc", "sk-abcdefghijklmnopqrstuvwx",
	"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.sig", "Bearer ", "bearer abcdefgh1234", "Basic dXNlcjpwYXNz", "Token ",
	"password", "password=", "passwd: ", "api_key=", "token=", "secret:", "auth=", "pwd=", "max_tokens=", "name=",
	"hunter2", "bob", "'quoted value'", "\"dq value\"", "{braced}", "[REDACTED x]",
	"mysql -u root -p", "-phunter2", "sshpass -p ", "curl -u bob:", "redis-cli -a ", "--password ", "--token ", "-p ",
	"postgres://bob:", "@db.example.com/x", "https://", "?token=", "&key=", "user:pw@tcp(", "scott/tiger@//",
	"aZ3kLm9QpR2sT7uVwX1yZ0bC4dE5fG6h", "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", "0123456789abcdef0123456789abcdef",
	"123e4567-e89b-12d3-a456-426614174000", "/aZ3kLm9QpR2sT7uVwX1/yZ0bC4dE5fG6hJ8kL", "~aZ3kLm9QpR2sT7uVwX1yZ0b",
	"AB12cd34EF56gh78IJ90", "AAAAAAAAAAAA1111111111AAAAAAAAAAAA", "a1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6",
	"alpha ", "beta ", " ", "  ", "\n", "\n  ", "\t", ": ", "=", ";", "&", ",", "/", "|\n  ", "é", "日本語", "✓ ",
	"machine example.com login bob password ", "authorization: Token ", "x-api-key", "secretvalue123",
}

// TestRefusalsInGoRedactGeneratedValues: 600 strings made of secret
// fragments, refused as an argument's value, are shown in the engine's
// decision as in the Rego's, most of them built in Go.
func TestRefusalsInGoRedactGeneratedValues(t *testing.T) {
	c := newDecider(t, policyOfYAML(t, secretsConfig))
	seed := uint64(28)
	next := func(n int) int {
		seed = seed*6364136223846793005 + 1442695040888963407
		return int((seed >> 33) % uint64(n))
	}
	for i := 0; i < 600; i++ {
		var b strings.Builder
		for j, n := 0, 1+next(12); j < n; j++ {
			b.WriteString(secretFragments[next(len(secretFragments))])
		}
		if i%50 == 7 {
			b.WriteString(strings.Repeat(secretFragments[next(len(secretFragments))], 1+next(40)))
		}
		args := map[string]any{"content": b.String()}
		if i%3 == 1 {
			args["path"] = "/workspace/x"
		}
		c.check(t, fmt.Sprintf("value %d", i), decision.Call{Server: "s", Tool: decision.Tool{Name: "tool"}, Args: args}, &engine.Ledger{})
		if t.Failed() {
			return
		}
	}
	c.report(t)
	if c.built < c.total*3/4 {
		t.Errorf("only %d of %d refusals built in Go", c.built, c.total)
	}
}

// FuzzRefusalRedaction: a fuzzed string refused as an argument's value is
// shown in the engine's decision as in the Rego's.
//
//	go test -run '^$' -fuzz FuzzRefusalRedaction -fuzztime 2m -parallel 1 ./internal/engine/
func FuzzRefusalRedaction(f *testing.F) {
	for _, s := range secretShaped {
		f.Add(s)
	}
	c := newDecider(f, policyOfYAML(f, secretsConfig))
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return // a caller's JSON holds none; InputJSON would change it for the stock OPA only
		}
		c.check(t, "fuzzed value", decision.Call{Server: "s", Tool: decision.Tool{Name: "tool"}, Args: map[string]any{"content": s}}, &engine.Ledger{})
	})
}
