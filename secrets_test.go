package mcpxpolicy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"math/rand/v2"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/internal/redact"
	"github.com/mcpx/mcpx-policy/internal/secretcorpus"
)

var update = flag.Bool("update", false, "rewrite rego/mcpx/secrets/data.json from the Go table")

// regoSecretsFile is the copy of the table that `opa test rego/` reads as
// data.mcpx.secrets (bundles and the engine get it from Policy).
const regoSecretsFile = "rego/mcpx/secrets/data.json"

// TestPolicySecretsAreTheGoTable ties the policy's secret table to Go's: the
// data every bundle ships (and the engine evaluates) holds redact.Secrets
// under data.mcpx.secrets, and so does the file `opa test rego/` reads
// (go test . -run TestPolicySecretsAreTheGoTable -update rewrites it).
func TestPolicySecretsAreTheGoTable(t *testing.T) {
	t.Parallel()
	want := generic(t, redact.Secrets)
	files, err := mcpxpolicy.BundleFiles(mcpxpolicy.Options{ConfigPaths: []string{"examples/mcpx-policy.yaml"}, Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	var data struct {
		Mcpx map[string]any `json:"mcpx"`
	}
	if err := json.Unmarshal(files["data.json"], &data); err != nil {
		t.Fatal(err)
	}
	if got := data.Mcpx["secrets"]; !reflect.DeepEqual(got, want) {
		t.Errorf("the bundle's data.mcpx.secrets is not redact.Secrets:\n%v\nwant\n%v", got, want)
	}
	b, err := json.MarshalIndent(redact.SecretsData(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	if *update {
		if err := os.WriteFile(regoSecretsFile, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	onDisk, err := os.ReadFile(regoSecretsFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(onDisk, b) {
		t.Errorf("%s is not redact.Secrets: run go test . -run TestPolicySecretsAreTheGoTable -update", regoSecretsFile)
	}
}

func generic(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// sample is one string of the agreement table: leak is the part that must
// never be shown ("" for a non-secret, which must be shown unchanged).
type sample struct {
	name, in, leak string
}

// samples are realistic secrets in the places they turn up (commands,
// URLs, config files, JSON text) and realistic non-secrets that look a
// little like them. The values are fake.
var samples = []sample{
	// Secrets.
	{"bearer header", "curl -H 'Authorization: Bearer 8xKq0ZtYwV3nR7uLp2sD5fGh' https://api.example.com", "8xKq0ZtYwV3nR7uLp2sD5fGh"},
	{"basic header", "Authorization: Basic YWRtaW46c3VwZXJzZWNyZXQ=", "YWRtaW46c3VwZXJzZWNyZXQ"},
	{"jwt", "token eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c", "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"},
	{"rsa private key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi6Z5zX0sKq\n-----END RSA PRIVATE KEY-----\n", "MIIEowIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi6Z5zX0sKq"},
	{"pgp private key block", "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBGR1c2VyAQgAq3k9Zp2WmXr7Tn4Lp9Vw3Hs6Jd1Fb5Gc0Ya\n=Ab12\n-----END PGP PRIVATE KEY BLOCK-----", "lQOYBGR1c2VyAQgAq3k9Zp2WmXr7Tn4Lp9Vw3Hs6Jd1Fb5Gc0Ya"},
	{"openssh private key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAAB\n-----END OPENSSH PRIVATE KEY-----", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAAB"},
	{"private key cut short", "key: -----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkq3Zp2Wm", "MHcCAQEEIBkq3Zp2Wm"},
	{"aws access key id", "aws configure set aws_access_key_id AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"},
	{"aws secret in .env", "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
	{"gcp api key", "https://maps.googleapis.com/maps/api/geocode/json?address=Berlin&key=AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY", "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"},
	{"gcp oauth token", "use ya29.a0AfH6SMBx3kLq9Zr7Tn4Lp9Vw3Hs6Jd1Fb5 for now", "a0AfH6SMBx3kLq9Zr7Tn4Lp9Vw3Hs6Jd1Fb5"},
	{"gcp service account json", `{"type": "service_account", "project_id": "acme", "private_key_id": "1a2b3c4d5e6f7a8b9c0d", "private_key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n", "client_email": "ci@acme.iam.gserviceaccount.com"}`, "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"},
	{"gcp service account key id", `{"type": "service_account", "private_key_id": "1a2b3c4d5e6f7a8b9c0d"}`, "1a2b3c4d5e6f7a8b9c0d"},
	{"azure storage connection string", "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=Zk8Qm2Xr7Tn4Lp9Vw3Hs6Jd1Fb5Gc0Ya+Q==;EndpointSuffix=core.windows.net", "Zk8Qm2Xr7Tn4Lp9Vw3Hs6Jd1Fb5Gc0Ya"},
	{"azure sas url", "https://acme.blob.core.windows.net/c/b.txt?sv=2022-11-02&se=2025-01-01&sp=r&sig=q0Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8%3D", "q0Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8"},
	{"azure client secret json", `{"tenantId": "72f988bf-86f1-41af-91ab-2d7cd011db47", "clientId": "04b07795-8ddb-461a-bbee-02f9e1bf7b46", "clientSecret": "Q~8Xr7.Tn4Lp9Vw3Hs6Jd1Fb5Gc0Ya"}`, "Q~8Xr7.Tn4Lp9Vw3Hs6Jd1Fb5Gc0Ya"},
	{"github token in a remote", "https://ghp_16C7e42F292c6912E7710c838347Ae178B4a@github.com/acme/billing.git", "ghp_16C7e42F292c6912E7710c838347Ae178B4a"},
	{"github fine-grained pat", "github_pat_11ABCDEFG0abcdefghijklm_nopqrstuvwxyz0123456789ABCDEFGHIJ", "github_pat_11ABCDEFG0abcdefghijklm"},
	{"gitlab token", "glpat-Zk8Qm2Xr7Tn4Lp9Vw3Hs", "Zk8Qm2Xr7Tn4Lp9Vw3Hs"},
	{"slack bot token", "xoxb-2048-4096-aBcDeFgHiJkLmNoPqRsTuVwX", "aBcDeFgHiJkLmNoPqRsTuVwX"},
	{"slack webhook", "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX", "XXXXXXXXXXXXXXXXXXXXXXXX"},
	{"openai key", "OPENAI sk-proj-Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzXcVbNm", "Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzXcVbNm"},
	{"anthropic key", "sk-ant-api03-Qm2Xr7Tn4Lp9Vw3Hs6Jd1Fb5Gc0YaZk8Q", "Qm2Xr7Tn4Lp9Vw3Hs6Jd1Fb5Gc0YaZk8Q"},
	{"stripe key", "stripe --api-key=sk_live_4eC39HqLyjWDarjtT1zdp7dc customers list", "4eC39HqLyjWDarjtT1zdp7dc"},
	{"npm token", "//registry.npmjs.org/:_authToken=npm_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789", "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"},
	{"hugging face token", "HF hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ012345", "aBcDeFgHiJkLmNoPqRsTuVwXyZ012345"},
	{"postgres url", "postgres://app:Pg-S3cret-99@db.internal:5432/prod", "Pg-S3cret-99"},
	{"mongodb srv url", "mongodb+srv://admin:Mongo-Pass-1@cluster0.mongodb.net/db?retryWrites=true", "Mongo-Pass-1"},
	{"redis url without user", "redis://:r3dis-Pass@cache.internal:6379/0", "r3dis-Pass"},
	{"jdbc url", "jdbc:mysql://db.internal:3306/shop?user=shop&password=Shop-Pass-42", "Shop-Pass-42"},
	{"ado.net connection string", "Server=tcp:db.database.windows.net,1433;Database=shop;User ID=app;Password=Ad0-Pass-77;Encrypt=true", "Ad0-Pass-77"},
	{".env lines", "DB_HOST=db.internal\nDB_PASSWORD=s3cr3t-env-pw\nSTRIPE_SECRET=whsec_abc123", "s3cr3t-env-pw"},
	{"export line", "export GITHUB_TOKEN=abc123notashape && make release", "abc123notashape"},
	{"yaml secret", "stringData:\n  password: c2VjcmV0LXBhc3M=\n", "c2VjcmV0LXBhc3M"},
	{"json in a string", `{"user": "app", "password": "hunter2-Correct"}`, "hunter2-Correct"},
	{"json in a string, escaped", `{\"user\": \"app\", \"password\": \"hunter2-Correct\"}`, "hunter2-Correct"},
	{"json in a string, twice escaped", `{\\\"password\\\": \\\"hunter2-Correct\\\"}`, "hunter2-Correct"},
	{"mysql glued -p", "mysql -h db.internal -u root -phunter2pass shop", "hunter2pass"},
	{"mysqldump glued -p quoted", `mysqldump -u root -p"hunter 2 pass" shop > dump.sql`, "hunter 2 pass"},
	{"sshpass", "sshpass -p 'Ssh-Pass-55' ssh deploy@web1", "Ssh-Pass-55"},
	{"redis-cli -a", "redis-cli -h cache -a R3dis-Pass-9 ping", "R3dis-Pass-9"},
	{"docker login -p", "docker login -u ci -p Dock3r-Pass-1 registry.example.com", "Dock3r-Pass-1"},
	{"curl -u", "curl -u admin:Curl-Pass-8 https://api.example.com/v1", "Curl-Pass-8"},
	{"--password flag", "mysql -h db.internal --password hunter22pass -e 'select 1'", "hunter22pass"},
	{"query token", "https://api.example.com/v1/items?limit=5&access_token=qwerty123secret", "qwerty123secret"},
	{"high entropy blob", "Zk8Qm2Xr7Tn4Lp9Vw3Hs6Jd1Fb5Gc0Ya", "Zk8Qm2Xr7Tn4Lp9Vw3Hs6Jd1Fb5Gc0Ya"},
	// Non-secrets.
	{"max_tokens assignment", "max_tokens=500 max_new_tokens: 64 token_count=12", ""},
	{"workspace path", "/workspace/src/internal/render/redact.go", ""},
	{"home path", "~/projects/mcpx-policy/docs/surfaces.md", ""},
	{"uuid", "request 550e8400-e29b-41d4-a716-446655440000 failed", ""},
	{"commit id", "git show 3f786850e387550fdab836ed7e6dc881de23001b", ""},
	{"sha256", "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", ""},
	{"branch name", "git checkout -b feature/add-login-page-2024", ""},
	{"npm install", "npm install --save-dev typescript@5.4.2", ""},
	{"sql", "SELECT id, name FROM users WHERE id = 42 LIMIT 10", ""},
	{"search url", "https://example.com/search?q=hello&page=2", ""},
	{"prose about passwords", "the password is required; see the token docs", ""},
	{"mysql prompts for the password", "mysql -h db.internal -u root -p shop", ""},
	{"ssh port", "ssh -p 2222 deploy@web1", ""},
	{"psql port", "psql -h db -p 5432 -U app shop", ""},
	{"docker port", "docker run -p 8080:80 nginx:1.25", ""},
	{"mkdir -p", "mkdir -p /tmp/build/out", ""},
	{"timestamp", "2024-01-15T10:30:00Z", ""},
	{"auth scheme alone", "Authorization: Bearer", ""},
	{"email", "alice@example.com", ""},
	{"identifier", "MyComponent_v2_FinalVersion", ""},
	{"low-entropy run", "aaaaaaaaaaBBBBBBBBBB1111111111", ""},
}

// keys are argument names whose verdicts must agree exactly.
var keys = []string{
	"password", "Password", "PGPASSWORD", "api_key", "API-Key", "x-api-key", "clientSecret", "client_secret",
	"session_id", "Cookie", "Authorization", "AccountKey", "private_key", "privkey", "passcode", "pwd", "pw",
	"auth", "otp", "sig", "dsn", "pat", "api_tokens", "refresh_token", "jwt",
	"max_tokens", "maxTokens", "max_new_tokens", "total_tokens", "tokenizer", "token_count", "tokens",
	"path", "key", "author", "bypass", "compass", "passage", "monkey", "signed", "", "___",
}

// TestRegoAgreesWithGo runs the samples and keys through Go
// (redact.RedactString, redact.SecretKey) and through the policy as a
// stock OPA evaluates it, with the bundle's data (text.redact,
// text.secret_key): key verdicts are equal; a secret's leak appears in
// neither output, a non-secret comes out of both unchanged, and the two
// outputs are equal (the one difference the docs allow, Rego's entropy
// test hiding more, shows in none of these samples).
func TestRegoAgreesWithGo(t *testing.T) {
	t.Parallel()
	if len(samples) < 60 {
		t.Fatalf("the sample table has %d rows; keep it growing", len(samples))
	}
	files, err := mcpxpolicy.BundleFiles(mcpxpolicy.Options{ConfigPaths: []string{"examples/mcpx-policy.yaml"}, Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	opts := []func(*rego.Rego){
		rego.Query(`x := {"redact": [data.mcpx.lib.text.redact(s) | some s in input.strings], "keys": {k | some k in input.keys; data.mcpx.lib.text.secret_key(k)}}`),
		rego.SetRegoVersion(ast.RegoV1),
		rego.StrictBuiltinErrors(true),
	}
	for name, src := range files {
		switch {
		case strings.HasSuffix(name, ".rego"):
			opts = append(opts, rego.Module(name, string(src)))
		case name == "data.json":
			var doc map[string]any
			if err := json.Unmarshal(src, &doc); err != nil {
				t.Fatal(err)
			}
			opts = append(opts, rego.Store(inmem.NewFromObject(doc)))
		}
	}
	var strs []string
	for _, s := range samples {
		strs = append(strs, s.in)
	}
	rs, err := rego.New(append(opts, rego.Input(map[string]any{"strings": strs, "keys": keys}))...).Eval(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 {
		t.Fatalf("the policy answered %d results", len(rs))
	}
	var got struct {
		Redact []string `json:"redact"`
		Keys   []string `json:"keys"`
	}
	b, _ := json.Marshal(rs[0].Bindings["x"])
	if err := json.Unmarshal(b, &got); err != nil || len(got.Redact) != len(samples) {
		t.Fatalf("the policy answered %s (%v)", b, err)
	}
	for _, k := range keys {
		if g, r := redact.SecretKey(k), slices.Contains(got.Keys, k); g != r {
			t.Errorf("key %q: Go says secret=%v, Rego says %v", k, g, r)
		}
	}
	for i, s := range samples {
		goOut, regoOut := redact.RedactString(s.in), got.Redact[i]
		switch {
		case s.leak == "" && (goOut != s.in || regoOut != s.in):
			t.Errorf("%s is not a secret, but Go shows %q and Rego %q", s.name, goOut, regoOut)
		case s.leak != "" && (strings.Contains(goOut, s.leak) || strings.Contains(regoOut, s.leak)):
			t.Errorf("%s leaks %q: Go shows %q, Rego %q", s.name, s.leak, goOut, regoOut)
		case goOut != regoOut:
			t.Errorf("%s: Go shows %q, Rego %q", s.name, goOut, regoOut)
		}
	}
}

// regoEval evaluates query on the policy as a stock OPA evaluates the
// bundle of the example config (the secret table as data.mcpx.secrets),
// with input.
func regoEval(t *testing.T, query string, input any) any {
	t.Helper()
	files, err := mcpxpolicy.BundleFiles(mcpxpolicy.Options{ConfigPaths: []string{"examples/mcpx-policy.yaml"}, Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	opts := []func(*rego.Rego){rego.Query(query), rego.SetRegoVersion(ast.RegoV1), rego.StrictBuiltinErrors(true), rego.Input(input)}
	for name, src := range files {
		switch {
		case strings.HasSuffix(name, ".rego"):
			opts = append(opts, rego.Module(name, string(src)))
		case name == "data.json":
			var doc map[string]any
			if err := json.Unmarshal(src, &doc); err != nil {
				t.Fatal(err)
			}
			opts = append(opts, rego.Store(inmem.NewFromObject(doc)))
		}
	}
	rs, err := rego.New(opts...).Eval(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 {
		t.Fatalf("the policy answered %d results", len(rs))
	}
	return rs[0].Bindings["x"]
}

// TestRegoHidesTheCorpus runs the secret corpus, and random nestings of
// it (objects, arrays, JSON text in strings), through the policy as a
// stock OPA evaluates it: text.value — what a violation's value and an
// override's details become — hides every leak, and so does every
// violation value at every path of the arguments (text.show_at), and
// secrets_in knows each secret, so an override's message quoting it is
// scrubbed. What the policy shows is what Go shows (redact.RedactShown).
func TestRegoHidesTheCorpus(t *testing.T) {
	t.Parallel()
	cases := append(secretcorpus.Cases(), secretcorpus.Shapes("hunter2")...)
	rng := rand.New(rand.NewPCG(25, 2))
	for i := 0; i < 300; i++ {
		cases = append(cases, secretcorpus.Nest(rng, cases[rng.IntN(len(cases))], 1+rng.IntN(4)))
	}
	var args []any
	for _, c := range cases {
		args = append(args, c.Args)
	}
	got, _ := json.Marshal(regoEval(t, `x := [{
		"value": data.mcpx.lib.text.value("", a, set()),
		"scrubbed": data.mcpx.lib.text.scrub(json.marshal(a), data.mcpx.lib.text.secrets_in(a)),
		"shown": [data.mcpx.lib.text.show_at(a, false, data.mcpx.lib.text.pointer(p), "", v) |
			walk(a, [p, v])
			count(p) > 0
		],
	} | some a in input.args]`, map[string]any{"args": args}))
	var outs []struct {
		Value    map[string]any `json:"value"`
		Scrubbed string         `json:"scrubbed"`
		Shown    []any          `json:"shown"`
	}
	if err := json.Unmarshal(got, &outs); err != nil || len(outs) != len(cases) {
		t.Fatalf("the policy answered %s (%v)", got, err)
	}
	differ := 0
	for i, c := range cases {
		for _, leak := range c.Leaks {
			for name, v := range map[string]any{"value": outs[i].Value, "scrubbed message": outs[i].Scrubbed, "violation values": outs[i].Shown} {
				b, _ := json.Marshal(v)
				q, _ := json.Marshal(leak)
				if strings.Contains(string(b), leak) || strings.Contains(string(b), strings.Trim(string(q), `"`)) {
					t.Errorf("%s: the policy's %s shows %q:\n%s", c.Name, name, leak, b)
				}
			}
		}
		goOut, _ := redact.RedactShown(c.Args)
		g, _ := json.Marshal(goOut)
		r, _ := json.Marshal(outs[i].Value)
		if string(g) != string(r) {
			differ++
			// Inside JSON text in a string, a secret several rules find
			// may be named by another of them (docs/surfaces.md, "Where
			// the policy differs from Go"): the same text is hidden.
			if anyKind.ReplaceAllString(string(g), "[REDACTED ?, $1 chars]") != anyKind.ReplaceAllString(string(r), "[REDACTED ?, $1 chars]") {
				t.Errorf("%s: Go shows\n%s\nthe policy\n%s", c.Name, g, r)
			}
		}
	}
	t.Logf("%d cases, %d named differently inside JSON text", len(cases), differ)
}

// anyKind matches a redaction marker whatever it names.
var anyKind = regexp.MustCompile(`\[REDACTED [a-z -]+, (\d+) chars\]`)
