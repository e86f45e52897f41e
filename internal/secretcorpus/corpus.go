// Package secretcorpus generates the secrets the redaction tests put on
// every output: realistic secrets (cloud keys, tokens, private keys, JWTs,
// passwords, data source names, basic and bearer credentials) in the shapes
// they reach a tool call in (a secret-named key, a name/value object, a
// header list, an argument vector, KEY=VALUE text, YAML, INI and .env
// blocks, JSON text in a string, a command line), and random nestings of
// them. Every value is synthetic and plainly fake (it holds "FAKE" or
// "Fake"); nothing is read from anywhere. Only tests import it.
package secretcorpus

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
)

// Case is one secret in one shape: Args is a call's arguments holding it,
// Leaks the texts no output may show (raw, or escaped as in JSON text).
type Case struct {
	Name  string
	Args  map[string]any
	Leaks []string
	// JSONDepth is how many levels of JSON text in strings the secret is
	// already inside (at most 2 are read as JSON).
	JSONDepth int
}

// secret is one secret value: text is what is passed, leak the part that
// must never show, token whether text is one word (no space, quote,
// backslash or newline) that fits in KEY=VALUE text and command lines, and
// shaped whether the table finds it by its shape alone.
type secret struct {
	kind          string
	text, leak    string
	token, shaped bool
}

// alnum is a deterministic random string of n letters and digits, both
// cases and digits always present.
func alnum(rng *rand.Rand, n int) string {
	const set = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = set[rng.IntN(len(set))]
	}
	// Make sure of two digits and both cases (the entropy test needs them).
	if n >= 6 {
		b[0], b[1], b[2], b[3], b[4], b[5] = 'Q', 'x', '7', 'K', 'm', '3'
	}
	return string(b)
}

func b64url(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// secrets returns the secret values of the i-th round: each unique (its
// index is in it) and fake.
func secrets(i int) []secret {
	rng := rand.New(rand.NewPCG(uint64(i), 0x5ec7e7))
	pw := fmt.Sprintf("Fake-Pass-%03d-%s", i, alnum(rng, 6))
	apiKey := fmt.Sprintf("fakekey%03d%s", i, alnum(rng, 10))
	jwtSig := alnum(rng, 43)
	jwtBody := b64url(fmt.Sprintf(`{"sub":"fake-user-%03d","fake":true}`, i))
	jwt := "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + jwtBody + "." + jwtSig
	pemBody := "MIIEFAKE" + alnum(rng, 56)
	pem := "-----BEGIN RSA PRIVATE KEY-----\n" + pemBody + "\n" + alnum(rng, 64) + "\n-----END RSA PRIVATE KEY-----\n"
	bearer := "FAKE" + alnum(rng, 28)
	basicPw := fmt.Sprintf("Fake-Basic-%03d", i)
	basic := base64.StdEncoding.EncodeToString([]byte("fakeuser:" + basicPw))
	dbPw := fmt.Sprintf("Fake-Db-%03d-%s", i, alnum(rng, 5))
	azKey := "FAKE" + alnum(rng, 40) + "=="
	return []secret{
		{kind: "password", text: pw, leak: pw, token: true},
		{kind: "api key", text: apiKey, leak: apiKey, token: true},
		{kind: "aws access key id", text: fmt.Sprintf("AKIAFAKE%012d", i), leak: fmt.Sprintf("AKIAFAKE%012d", i), token: true, shaped: true},
		{kind: "aws secret access key", text: "FAKEs3cr3t/" + alnum(rng, 29), leak: "FAKEs3cr3t/", token: true},
		{kind: "github token", text: "ghp_FAKE" + alnum(rng, 32), leak: "ghp_FAKE", token: true, shaped: true},
		{kind: "github fine-grained token", text: "github_pat_11FAKE" + alnum(rng, 20) + "_" + alnum(rng, 40), leak: "github_pat_11FAKE", token: true, shaped: true},
		{kind: "gitlab token", text: "glpat-FAKE" + alnum(rng, 16), leak: "glpat-FAKE", token: true, shaped: true},
		{kind: "slack token", text: "xoxb-1111-2222-FAKE" + alnum(rng, 20), leak: "FAKE", token: true, shaped: true},
		{kind: "openai key", text: "sk-proj-FAKE" + alnum(rng, 32), leak: "sk-proj-FAKE", token: true, shaped: true},
		{kind: "anthropic key", text: "sk-ant-api03-FAKE" + alnum(rng, 40), leak: "sk-ant-api03-FAKE", token: true, shaped: true},
		{kind: "stripe key", text: "sk_test_FAKE" + alnum(rng, 24), leak: "sk_test_FAKE", token: true, shaped: true},
		{kind: "npm token", text: "npm_FAKE" + alnum(rng, 32), leak: "npm_FAKE", token: true, shaped: true},
		{kind: "hugging face token", text: "hf_FAKE" + alnum(rng, 30), leak: "hf_FAKE", token: true, shaped: true},
		{kind: "gcp api key", text: "AIzaSyFAKE" + alnum(rng, 29), leak: "AIzaSyFAKE", token: true, shaped: true},
		{kind: "gcp oauth token", text: "ya29.FAKE" + alnum(rng, 40), leak: "ya29.FAKE", token: true, shaped: true},
		{kind: "jwt", text: jwt, leak: jwtSig, token: true, shaped: true},
		{kind: "pem private key", text: pem, leak: pemBody, shaped: true},
		{kind: "bearer credential", text: "Bearer " + bearer, leak: bearer, shaped: true},
		{kind: "basic credential", text: "Basic " + basic, leak: basic, shaped: true},
		{kind: "postgres url", text: "postgres://app:" + dbPw + "@db.internal:5432/prod", leak: dbPw, token: true, shaped: true},
		{kind: "libpq dsn", text: "host=db.internal user=app password=" + dbPw + " dbname=prod", leak: dbPw, shaped: true},
		{kind: "go mysql dsn", text: "app:" + dbPw + "@tcp(db.internal:3306)/shop", leak: dbPw, token: true, shaped: true},
		{kind: "jdbc url", text: "jdbc:mysql://db.internal:3306/shop?user=app&password=" + dbPw, leak: dbPw, token: true, shaped: true},
		{kind: "azure connection string", text: "DefaultEndpointsProtocol=https;AccountName=fake;AccountKey=" + azKey + ";EndpointSuffix=core.windows.net", leak: azKey[:30], token: true, shaped: true},
		{kind: "odbc password in braces", text: "Driver={ODBC Driver 18};Server=db;Uid=app;Pwd={" + dbPw + " x};", leak: dbPw, shaped: true},
		{kind: "slack webhook", text: "https://hooks.slack.com/services/T0FAKE/B0FAKE/" + alnum(rng, 24), leak: "T0FAKE/B0FAKE", token: true, shaped: true},
		{kind: "url password", text: "https://fakeuser:" + pw + "@git.example.com/acme/repo.git", leak: pw, token: true, shaped: true},
	}
}

// name is a secret name a structure names a value with.
var names = []string{"DB_PASSWORD", "api_key", "X-Api-Key", "Authorization", "client_secret", "GITHUB_TOKEN", "session-cookie", "private_key"}

// A shape puts secret s, named n, in a call's arguments; it is nil when
// the shape cannot hold s (a multi-line value in a command line).
type shape struct {
	name string
	put  func(s secret, n string) map[string]any
	json int // levels of JSON text in strings it puts the secret in
}

// tokenOnly is put for token values only.
func tokenOnly(put func(s secret, n string) map[string]any) func(s secret, n string) map[string]any {
	return func(s secret, n string) map[string]any {
		if !s.token {
			return nil
		}
		return put(s, n)
	}
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

var shapes = []shape{
	{"by key name", func(s secret, n string) map[string]any { return map[string]any{n: s.text, "path": "/workspace/a"} }, 0},
	{"name/value object (Kubernetes env)", func(s secret, n string) map[string]any {
		return map[string]any{"env": []any{map[string]any{"name": "LOG_LEVEL", "value": "info"}, map[string]any{"name": n, "value": s.text}}}
	}, 0},
	{"key/val object", func(s secret, n string) map[string]any {
		return map[string]any{"settings": map[string]any{"key": n, "val": s.text}}
	}, 0},
	{"Name/Value header list (HAR)", func(s secret, n string) map[string]any {
		return map[string]any{"request": map[string]any{"headers": []any{map[string]any{"Name": "Accept", "Value": "application/json"}, map[string]any{"Name": n, "Value": s.text}}}}
	}, 0},
	{"ParameterKey/ParameterValue", func(s secret, n string) map[string]any {
		return map[string]any{"Parameters": []any{map[string]any{"ParameterKey": n, "ParameterValue": s.text}}}
	}, 0},
	{"[K, V] pairs", func(s secret, n string) map[string]any {
		return map[string]any{"headers": []any{[]any{"Accept", "text/plain"}, []any{n, s.text}}}
	}, 0},
	{"flat header list", func(s secret, n string) map[string]any {
		return map[string]any{"rawHeaders": []any{"Host", "api.example.com", n, s.text}}
	}, 0},
	{"argument vector --flag value", func(s secret, n string) map[string]any {
		return map[string]any{"argv": []any{"deploy", "--" + strings.ToLower(strings.ReplaceAll(n, "_", "-")), s.text, "--verbose"}}
	}, 0},
	{"KEY=VALUE text", tokenOnly(func(s secret, n string) map[string]any {
		return map[string]any{"script": "export " + n + "=" + s.text + " && ./run.sh"}
	}), 0},
	{"KEY=VALUE list", tokenOnly(func(s secret, n string) map[string]any {
		return map[string]any{"env": []any{"PATH=/usr/bin", n + "=" + s.text}}
	}), 0},
	{"YAML, value on the next line", tokenOnly(func(s secret, n string) map[string]any {
		return map[string]any{"config": "db:\n  host: db.internal\n  " + n + ":\n    " + s.text + "\n  port: 5432\n"}
	}), 0},
	{"YAML block scalar", func(s secret, n string) map[string]any {
		return map[string]any{"manifest": "stringData:\n  " + n + ": |\n    " + strings.ReplaceAll(strings.TrimSuffix(s.text, "\n"), "\n", "\n    ") + "\n"}
	}, 0},
	{"INI section", tokenOnly(func(s secret, n string) map[string]any {
		return map[string]any{"content": "[database]\nhost = db.internal\n" + n + " = " + s.text + "\n"}
	}), 0},
	{".env file, quoted over lines", func(s secret, n string) map[string]any {
		return map[string]any{"dotenv": "APP_ENV=prod\n" + n + "=\"" + s.text + "\"\n"}
	}, 0},
	{"JSON text in a string", func(s secret, n string) map[string]any {
		return map[string]any{"body": jsonText(map[string]any{"env": []any{map[string]any{"name": n, "value": s.text}}})}
	}, 1},
	{"JSON text in JSON text", func(s secret, n string) map[string]any {
		inner := jsonText(map[string]any{"key": n, "value": s.text})
		return map[string]any{"event": jsonText(map[string]any{"detail": inner})}
	}, 2},
	{"header line", tokenOnly(func(s secret, n string) map[string]any {
		return map[string]any{"headers": []any{"Accept: */*", n + ": " + s.text}}
	}), 0},
	{"mysql -pPASS in an argument vector", tokenOnly(func(s secret, _ string) map[string]any {
		return map[string]any{"command": "mysql", "args": []any{"-h", "db.internal", "-u", "root", "-p" + s.text, "shop"}}
	}), 0},
	{"mysql -pPASS in a command line", tokenOnly(func(s secret, _ string) map[string]any {
		return map[string]any{"cmd": "mysql -h db.internal -u root -p" + s.text + " shop < dump.sql"}
	}), 0},
	{"sshpass -p in an argument vector", tokenOnly(func(s secret, _ string) map[string]any {
		return map[string]any{"argv": []any{"sshpass", "-p", s.text, "ssh", "deploy@web1"}}
	}), 0},
	{"curl -u user:PASS", tokenOnly(func(s secret, _ string) map[string]any {
		return map[string]any{"command": "curl -sS -u fakeuser:" + s.text + " https://api.example.com/v1"}
	}), 0},
}

// Cases returns the corpus: every secret value in every shape that holds
// it, and every value the table finds by its shape alone in a string that
// says nothing else; at least 200 cases.
func Cases() []Case {
	var out []Case
	for i, s := range secrets(0) {
		for j, sh := range shapes {
			n := names[(i+j)%len(names)]
			args := sh.put(s, n)
			if args == nil {
				continue
			}
			out = append(out, Case{Name: s.kind + " / " + sh.name + " (" + n + ")", Args: args, Leaks: []string{s.leak}, JSONDepth: sh.json})
		}
		if s.shaped {
			out = append(out, Case{Name: s.kind + " / by its shape alone", Args: map[string]any{"note": "see " + s.text + " for the details"}, Leaks: []string{s.leak}})
		}
	}
	return out
}

// Shapes returns value, a secret with no telling shape of its own (a
// short password), in every shape that holds one word: what hides it
// there is the structure alone.
func Shapes(value string) []Case {
	s := secret{kind: "plain secret", text: value, leak: value, token: true}
	var out []Case
	for j, sh := range shapes {
		n := names[j%len(names)]
		if args := sh.put(s, n); args != nil {
			out = append(out, Case{Name: value + " / " + sh.name + " (" + n + ")", Args: args, Leaks: []string{value}, JSONDepth: sh.json})
		}
	}
	return out
}

// safeKeys are object keys// safeKeys are object keys a nesting wraps a case in: none names a secret
// or names its siblings.
var safeKeys = []string{"data", "items", "payload", "spec", "options", "request", "batch", "meta"}

// Nest returns c with its arguments wrapped at random, depth times: in an
// object beside plain members, in an array beside plain elements, or as
// JSON text in a string (up to two levels of JSON text in all, c's own
// included: deeper JSON text is searched by shape only). The leaks are
// c's.
func Nest(rng *rand.Rand, c Case, depth int) Case {
	var v any = c.Args
	jsonLevels := c.JSONDepth
	var how []string
	for d := 0; d < depth; d++ {
		switch k := rng.IntN(3); {
		case k == 2 && jsonLevels < 2:
			v = jsonText(v)
			jsonLevels++
			how = append(how, "json")
		case k == 1:
			a := []any{"plain", rng.IntN(100)}
			at := rng.IntN(len(a) + 1)
			a = append(a[:at], append([]any{v}, a[at:]...)...)
			v = a
			how = append(how, "array")
		default:
			key := safeKeys[rng.IntN(len(safeKeys))]
			v = map[string]any{key: v, "kind": "wrapper", "count": rng.IntN(10)}
			how = append(how, "object."+key)
		}
	}
	args, ok := v.(map[string]any)
	if !ok {
		args = map[string]any{"root": v}
	}
	return Case{Name: c.Name + " in " + strings.Join(how, "/"), Args: args, Leaks: c.Leaks, JSONDepth: jsonLevels}
}
