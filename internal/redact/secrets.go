package redact

import (
	"bytes"
	"encoding/json"
	"regexp"
	"sync"

	"github.com/mcpx/mcpx-policy/internal/regexneed"
)

// Shape is one secret shape: an RE2 regex, the submatch that is the secret
// (0: the whole match) and the submatch that must itself be a secret key
// name for the match to count (0: none).
type Shape struct {
	Kind  string `json:"kind"`
	RE    string `json:"re"`
	Group int    `json:"group"`
	Name  int    `json:"name"`
}

// Entropy says which runs of token characters count as random
// credentials: at least MinRun characters, letters and at least MinDigits
// digits, not all hex, not a UUID, both cases at least twice (or at least
// DenseRun characters with DenseDigits of them digits), and at least Bits
// bits of Shannon entropy per character. The policy (Rego has no logarithm)
// checks MinDistinct distinct characters instead of Bits: fewer than
// 2^Bits distinct characters can never reach Bits, so it hides at least
// what Go hides.
type Entropy struct {
	Run         string  `json:"run"`
	Hex         string  `json:"hex"`
	UUID        string  `json:"uuid"`
	MinRun      int     `json:"minRun"`
	MinDigits   int     `json:"minDigits"`
	DenseRun    int     `json:"denseRun"`
	DenseDigits float64 `json:"denseDigits"`
	Bits        float64 `json:"bits"`
	MinDistinct int     `json:"minDistinct"`
}

// SecretTable is the one table of secret patterns. Go redacts with it
// (this package) and the policy reads the same table as data.mcpx.secrets
// (rego/mcpx/lib/text.rego), so the embedded engine and a stock OPA serving
// the bundle hide the same things.
type SecretTable struct {
	// KeyParts are substrings of a normalised key name (lower case, only
	// letters and digits) that mark its value as a secret.
	KeyParts []string `json:"keyParts"`
	// KeyExact are whole normalised key names that mark a secret.
	KeyExact []string `json:"keyExact"`
	// KeyCounts are normalised names that contain a part but count tokens
	// rather than hold one (max_tokens and its kin): never secrets.
	KeyCounts []string `json:"keyCounts"`
	// NameFields are normalised member names that name the value beside
	// them: when one of them holds a string that is a secret key name
	// ({"name": "DB_PASSWORD", "value": "…"}, {"key": "api_key", "val":
	// "…"}, {"ParameterKey": "DbPassword", "ParameterValue": "…"}), every
	// value field of that object (ValueFields, ValueParts) is a secret by
	// key name.
	NameFields []string `json:"nameFields"`
	// ValueFields are normalised member names that hold the value a name
	// field names; so is every name that contains one of ValueParts
	// (value, Value, ParameterValue, SecretValue, encrypted_value). Other
	// members beside a name field stay ({"key": "api_key", "path":
	// "/api_key"} names an argument, it holds none).
	ValueFields []string `json:"valueFields"`
	ValueParts  []string `json:"valueParts"`
	// PairKey matches an array element that names the element after it:
	// when a string element matches it and is a secret key name, the next
	// element is a secret by key name ([["X-Api-Key", "…"]], a flat header
	// list, the argument vector ["--password", "…"]).
	PairKey string `json:"pairKey"`
	// LineWord is the longest string, in characters and without a line
	// break, that takes part in the command line an array's strings make
	// with the strings beside it (a word of a command, not a text).
	LineWord int `json:"lineWord"`
	// Schemes are HTTP auth scheme words a name=value shape must not take
	// for the secret ("Authorization: Bearer …": the credential is its own
	// shape).
	Schemes []string `json:"schemes"`
	// Trim is the cutset trimmed from a secret before its length is told.
	Trim string `json:"trim"`
	// Shapes are searched for anywhere in a string, all on the string as
	// given; where two find the same text the earlier names it.
	Shapes []Shape `json:"shapes"`
	// Entropy finds random-looking runs after the shapes.
	Entropy Entropy `json:"entropy"`
	// MinScrub is the shortest secret known by key name that is searched
	// for in free text: shorter ones are replaced where they stand, but
	// replacing every "ab" in a message would garble it.
	MinScrub int `json:"minScrub"`
	// MaxScan is the longest string the policy searches: a longer one is
	// echoed by the policy as its size only ("[REDACTED long value, n
	// chars]"), which bounds the policy's work per string. Go searches
	// strings of any length.
	MaxScan int `json:"maxScan"`
}

// quotedValue is the value of a name=value shape: a double-quoted string
// (also JSON text inside a JSON string, whose quotes are escaped), a
// single-quoted one, or a bare word — not an escaped line break or tab
// (JSON text's "name:\n  …" has its value on the next line, if any: taken
// for the value, the one character was redacted wherever it stood).
const quotedValue = `(\\*"(?:[^"\\\n]|\\[^"\n])*\\*"|'[^'\n]*'|\{[^}\n]*\}|(?:[^\s,;&"'}\]\\]|\\[^nrt\s])[^\s,;&"'}\]]*)`

// glued is the value of a short flag glued to its value (-pPASS) or after
// it: a bare word or a quoted string.
const glued = `([^\s"'][^\s]*|"[^"\n]*"|'[^'\n]*')`

// Secrets is the table. Change it here only: TestPolicySecretsAreTheGoTable
// ties the copy the policy reads to it, and TestRegoAgreesWithGo checks the
// two readers agree on realistic secrets and non-secrets.
var Secrets = SecretTable{
	KeyParts: []string{
		"token", "password", "passwd", "passphrase", "passcode", "secret", "apikey",
		"authorization", "credential", "privatekey", "privkey", "cookie", "session",
		"accesskey", "accountkey", "signingkey", "encryptionkey", "masterkey", "bearer",
		"jwt", "signature", "connectionstring", "clientkey",
	},
	KeyExact: []string{"auth", "pwd", "pw", "pass", "otp", "totp", "sig", "dsn", "pat",
		"storepass", "keypass", "srcstorepass", "deststorepass", "srckeypass", "destkeypass"},
	NameFields: []string{
		"name", "key", "k", "header", "headername", "field", "fieldname", "variable", "var", "env", "envvar",
		"param", "paramname", "parameter", "parametername", "parameterkey", "option", "optionname", "setting",
		"property", "propertyname", "attribute",
	},
	ValueFields: []string{"val", "v", "data", "content"},
	ValueParts:  []string{"value"},
	PairKey:     `^-{0,2}[A-Za-z_][A-Za-z0-9_.-]*[:=]?$`,
	LineWord:    256,
	KeyCounts: []string{
		"tokens", "maxtokens", "maxnewtokens", "maxoutputtokens", "maxinputtokens",
		"maxcompletiontokens", "numtokens", "totaltokens", "inputtokens", "outputtokens",
		"prompttokens", "completiontokens", "tokencount", "tokenlimit", "tokenizer",
		"tokensused", "maxtoken",
	},
	Schemes: []string{"bearer", "basic", "token", "digest"},
	Trim:    `"'\`,
	Shapes: []Shape{
		{Kind: "private-key", RE: `-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|$)`},
		{Kind: "jwt", RE: `\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*`},
		{Kind: "aws-access-key", RE: `\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA|ABIA|ACCA)[A-Z0-9]{16}\b`},
		{Kind: "gcp-api-key", RE: `\bAIza[0-9A-Za-z_-]{35}`},
		{Kind: "gcp-oauth-token", RE: `\bya29\.[0-9A-Za-z_-]{20,}`},
		{Kind: "github-token", RE: `\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})`},
		{Kind: "gitlab-token", RE: `\bglpat-[A-Za-z0-9_-]{20,}`},
		{Kind: "slack-token", RE: `\bxox[abposre]-[A-Za-z0-9-]{10,}`},
		{Kind: "slack-webhook", RE: `https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+`},
		{Kind: "openai-key", RE: `\bsk-(?:proj-|svcacct-|admin-|ant-[a-z0-9]+-)?[A-Za-z0-9_-]{20,}`},
		{Kind: "stripe-key", RE: `\b[rsp]k_(?:live|test)_[0-9A-Za-z]{16,}`},
		{Kind: "npm-token", RE: `\bnpm_[A-Za-z0-9]{36}`},
		{Kind: "huggingface-token", RE: `\bhf_[A-Za-z0-9]{30,}`},
		{Kind: "bearer-token", RE: `(?i)\bbearer\s+([A-Za-z0-9._~+/=-]{8,})`, Group: 1},
		{Kind: "basic-auth", RE: `(?i)\bbasic\s+([A-Za-z0-9+/]{8,}={0,2})`, Group: 1},
		{Kind: "url-password", RE: `(?i)\b[a-z][a-z0-9+.-]*://[^/\s:@]*:([^/\s@]+)@`, Group: 1},
		// Password flags of the clients known to take one, also glued to
		// their value: mysql -pPASS (a space after -p means "prompt"),
		// sshpass -p PASS, redis-cli -a PASS, docker login -p PASS,
		// curl -u USER:PASS.
		{Kind: "password-flag", RE: `\b(?i:mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mysqlshow|mysqlpump|mariadb|mariadb-dump|mariadb-admin)\b[^\n;|&]*?\s-p` + glued, Group: 1},
		{Kind: "password-flag", RE: `\bsshpass\s+-p\s*` + glued, Group: 1},
		{Kind: "password-flag", RE: `\bredis-cli\b[^\n;|&]*?\s-a\s*` + glued, Group: 1},
		{Kind: "password-flag", RE: `\bdocker\s+login\b[^\n;|&]*?\s-p\s*` + glued, Group: 1},
		{Kind: "password-flag", RE: `\bcurl\b[^\n;|&]*?\s(?:-u\s*|--user[\s=]+)[^\s:'"]*:` + glued, Group: 1},
		// Clients that take a password in another flag or glued to the
		// user: sqlcmd -P PASS, mongosh -p PASS, openssl -passin pass:PASS,
		// smbclient -U USER%PASS, sqlplus USER/PASS@DB (and expdp, impdp,
		// rman, sqlldr), a .netrc line.
		{Kind: "password-flag", RE: `\b(?i:sqlcmd|bcp|osql|isql)\b[^\n;|&]*?\s-P\s*` + glued, Group: 1},
		{Kind: "password-flag", RE: `\b(?i:mongo|mongosh|mongodump|mongorestore|mongoexport|mongoimport)\b[^\n;|&]*?\s-p\s*` + glued, Group: 1},
		{Kind: "password-flag", RE: `(?i)-pass(?:in|out)?\s+pass:([^\s"']+)`, Group: 1},
		{Kind: "password-flag", RE: `\bsmbclient\b[^\n;|&]*?\s-U\s*[^\s%"']+%` + glued, Group: 1},
		{Kind: "password-flag", RE: `\b(?i:sqlplus|rman|expdp|impdp|sqlldr|dgmgrl)\s+(?:-[A-Za-z]+\s+)*(?i:userid=)?[A-Za-z0-9_$#.]+/([^\s@/"']+)`, Group: 1},
		{Kind: "netrc", RE: `(?i)\bmachine\s+\S+\s+login\s+\S+\s+password\s+(\S+)`, Group: 1},
		// Data source names that are not URLs: Go's MySQL driver
		// (user:pass@tcp(host)/db), Oracle's user/pass@//host and JDBC thin.
		{Kind: "dsn-password", RE: `\b[A-Za-z0-9_.-]*:([^\s:@/"']+)@(?:tcp6?|unix|udp|cloudsql)\(`, Group: 1},
		{Kind: "dsn-password", RE: `(?i)\b[a-z0-9_$#.]+/([^\s@/"']+)@//`, Group: 1},
		{Kind: "dsn-password", RE: `(?i)\bjdbc:oracle:[a-z]+:[a-z0-9_$#.]*/([^\s@/"']+)@`, Group: 1},
		// An Authorization header of any other scheme (Token, Digest …):
		// the credential after the scheme word.
		{Kind: "auth-header", RE: `(?i)\bauthorization\b\\*["']?[ \t]*[:=][ \t]*\\*["']?[a-z][a-z0-9-]*[ \t]+([^\s"'\\]{6,})`, Group: 1},
		{Kind: "query-secret", RE: `(?i)[?&]([a-z0-9_.-]+)=([^&\s#"']+)`, Group: 2, Name: 1},
		{Kind: "assignment", RE: `(?i)([a-z0-9_.-]+)(?:\\*["'])?[ \t]*[:=][ \t]*` + quotedValue, Group: 2, Name: 1},
		// A flag starts a token: the dash follows the start or a character
		// that cannot be part of a word ("notes-per-session allows" in
		// prose is no -session flag).
		{Kind: "flag", RE: `(?i)(?:^|[^a-z0-9_-])--?([a-z0-9_-]+)\s+("[^"\n]*"|'[^'\n]*'|[^\s"'-][^\s]*)`, Group: 2, Name: 1},
		// A secret name whose value is on the lines below it: the next
		// line (YAML password:\n  value, JSON text broken over lines; not
		// a line that opens another block), every indented line of a YAML
		// block scalar (password: |\n  …), and a quoted value over several
		// lines (.env).
		{Kind: "block-value", RE: `(?im)([a-z0-9_.-]+)\\*["']?[ \t]*[:=][ \t]*\r?\n[ \t]+([^\s:|>]|[^\s][^\n]*[^\s:|>])[ \t\r]*$`, Group: 2, Name: 1},
		{Kind: "block-value", RE: `(?i)([a-z0-9_.-]+)\\*["']?[ \t]*:[ \t]*[|>][-+0-9]*[ \t]*\r?\n[ \t]+([^\n]*(?:\n[ \t]+[^\n]*)*)`, Group: 2, Name: 1},
		{Kind: "block-value", RE: `(?i)([a-z0-9_.-]+)[ \t]*[:=][ \t]*("[^"\\]*(?:\\.[^"\\]*)*"|'[^']*')`, Group: 2, Name: 1},
	},
	Entropy: Entropy{
		Run:         `[A-Za-z0-9+/=_-]{20,}`,
		Hex:         `^[0-9A-Fa-f]+$`,
		UUID:        `^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`,
		MinRun:      20,
		MinDigits:   2,
		DenseRun:    32,
		DenseDigits: 0.15,
		Bits:        3.5,
		MinDistinct: 12, // 2^3.5 ≈ 11.3
	},
	MinScrub: 4,
	MaxScan:  16 << 10,
}

// SecretsData is Secrets as the policy reads it under data.mcpx.secrets:
// plain JSON values (objects, arrays, strings, json.Number). Each call
// returns a new copy.
func SecretsData() map[string]any {
	b, err := json.Marshal(Secrets)
	if err != nil {
		panic("render: the secret table does not marshal: " + err.Error()) // cannot happen: plain fields
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out map[string]any
	if err := dec.Decode(&out); err != nil {
		panic("render: the secret table does not unmarshal: " + err.Error())
	}
	return out
}

// compiled is the table ready for Go.
type compiled struct {
	parts     []string
	partBytes [][]byte // parts, as bytes
	exact     map[string]bool
	counts    map[string]bool
	schemes   map[string]bool
	names     map[string]bool // NameFields
	values    map[string]bool // ValueFields
	pairKey   *regexp.Regexp
	shapes    []compiledShape
	run       *regexp.Regexp
	runs      *runScan // run, byte by byte; nil when run has another form
	hex       *regexp.Regexp
	uuid      *regexp.Regexp
}

type compiledShape struct {
	Shape
	re   *regexp.Regexp
	need regexneed.Need // what every match holds: a string without it is skipped
}

// table is Secrets compiled, on first use: a command that redacts
// nothing (check, diff, version) does not compile its regular expressions.
var table = sync.OnceValue(func() *compiled { return compile(Secrets) })

func compile(t SecretTable) *compiled {
	set := func(xs []string) map[string]bool {
		m := make(map[string]bool, len(xs))
		for _, x := range xs {
			m[x] = true
		}
		return m
	}
	c := &compiled{
		parts:   t.KeyParts,
		exact:   set(t.KeyExact),
		counts:  set(t.KeyCounts),
		schemes: set(t.Schemes),
		names:   set(t.NameFields),
		values:  set(t.ValueFields),
		pairKey: regexp.MustCompile(t.PairKey),
		run:     regexp.MustCompile(t.Entropy.Run),
		runs:    newRunScan(t.Entropy.Run),
		hex:     regexp.MustCompile(t.Entropy.Hex),
		uuid:    regexp.MustCompile(t.Entropy.UUID),
	}
	for _, p := range t.KeyParts {
		c.partBytes = append(c.partBytes, []byte(p))
	}
	for _, s := range t.Shapes {
		need, _ := regexneed.Of(s.RE) // the regex compiled: it parses
		c.shapes = append(c.shapes, compiledShape{Shape: s, re: regexp.MustCompile(s.RE), need: need})
	}
	return c
}
