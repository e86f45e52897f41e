package config_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/config"
)

const smallConfig = `version: 1
policy:
  write: ask
  confirmDestructive: true
  exemptArgs: [cursor]
pool:
  hiddenTools: ["debug_*", internal, "debug_*"]
  argumentRules:
    - id: no-token
      tools: ["*"]
      schema:
        properties:
          token: false
  unknownArgsTools:
    - tools: [search, "/^list_/"]
      mode: "off"
    - tools: ["search*"]
      mode: reject
servers:
  fs:
    writePolicy: allow
    hiddenTools: ["delete_*"]
    writeTools: [read_and_touch]
    unknownArgs: reject
    exemptArgs: [max_bytes]
    argumentRules:
      - id: fs-writes-in-workspace
        tools: ["write_file", "edit_file", "/^move_/"]
        description: writes stay in the workspace
        schema:
          properties:
            path: {type: string, pathWithin: [/workspace]}
  git:
    argumentRules:
      - id: no-force-push
        tools: ["git_push"]
        argument: force
        schema: {const: false}
      - id: no-force-opt
        tools: ["git_push", "git_*"]
        argument: /options/fo~1rce~0
        required: true
        schema: {const: false}
`

func TestCompiledData(t *testing.T) {
	t.Parallel()
	fc := &fakeCompiler{}
	c, err, dir := load(t, map[string]string{"main.yaml": smallConfig}, config.LoadOptions{SchemaCompiler: fc.compile})
	if err != nil {
		t.Fatal(err)
	}
	cfg := configData(t, c)
	wantKeys := "[confirmDestructive enforce exemptArgs pool rules servers unknownArgs write]"
	if got := sortedKeys(cfg); got != wantKeys {
		t.Errorf("config keys %s, want %s", got, wantKeys)
	}
	if cfg["write"] != "ask" || cfg["confirmDestructive"] != true || cfg["unknownArgs"] != "warn" {
		t.Errorf("modes: write=%v confirmDestructive=%v unknownArgs=%v", cfg["write"], cfg["confirmDestructive"], cfg["unknownArgs"])
	}
	if got := jsonOf(t, cfg["exemptArgs"]); got != `["cursor"]` {
		t.Errorf("exemptArgs %s", got)
	}

	// Pool pattern sets: exact names in the object, a glob written twice
	// is one regex entry.
	pool := get(t, cfg, "pool").(map[string]any)
	if got := sortedKeys(pool); got != "[hidden rules unknownArgsTools writeTools]" {
		t.Errorf("pool keys %s", got)
	}
	if got := jsonOf(t, pool["hidden"]); got != `{"exact":{"internal":["internal"]},"regex":[{"re":"(?s)^debug_.*$","source":"debug_*","values":["debug_*"]}]}` {
		t.Errorf("pool.hidden %s", got)
	}
	if got := jsonOf(t, pool["writeTools"]); got != `{"exact":{},"regex":[]}` {
		t.Errorf("empty pattern set %s", got)
	}
	if got := jsonOf(t, get(t, pool, "rules", "regex")); got != `[{"re":"(?s)^.*$","source":"*","values":["no-token"]}]` {
		t.Errorf("pool.rules.regex %s", got)
	}
	ua := pool["unknownArgsTools"].([]any)
	if len(ua) != 3 {
		t.Fatalf("pool.unknownArgsTools has %d entries, want 3 (one per pattern, layer order)", len(ua))
	}
	for i, want := range []struct{ source, re, mode string }{
		{"search", `^search$`, "off"}, {"/^list_/", `^list_`, "off"}, {"search*", `(?s)^search.*$`, "reject"},
	} {
		e := ua[i].(map[string]any)
		if e["source"] != want.source || e["re"] != want.re || e["mode"] != want.mode || len(e) != 3 {
			t.Errorf("unknownArgsTools[%d] = %v, want %+v", i, e, want)
		}
	}

	// Servers: write and unknownArgs only where set.
	fs := get(t, cfg, "servers", "fs").(map[string]any)
	if got := sortedKeys(fs); got != "[exemptArgs hidden rules unknownArgs unknownArgsTools write writeTools]" {
		t.Errorf("fs keys %s", got)
	}
	if fs["write"] != "allow" || fs["unknownArgs"] != "reject" {
		t.Errorf("fs modes %v %v", fs["write"], fs["unknownArgs"])
	}
	if got := jsonOf(t, fs["writeTools"]); got != `{"exact":{"read_and_touch":["read_and_touch"]},"regex":[]}` {
		t.Errorf("fs.writeTools %s", got)
	}
	fsRules := fs["rules"].(map[string]any)
	if got := jsonOf(t, fsRules["exact"]); got != `{"edit_file":["fs-writes-in-workspace"],"write_file":["fs-writes-in-workspace"]}` {
		t.Errorf("fs.rules.exact %s", got)
	}
	if got := jsonOf(t, fsRules["regex"]); got != `[{"re":"^move_","source":"/^move_/","values":["fs-writes-in-workspace"]}]` {
		t.Errorf("fs.rules.regex %s", got)
	}
	git := get(t, cfg, "servers", "git").(map[string]any)
	if got := sortedKeys(git); got != "[exemptArgs hidden rules unknownArgsTools writeTools]" {
		t.Errorf("git keys %s (write/unknownArgs must be absent when unset)", got)
	}
	if got := jsonOf(t, get(t, git, "rules", "exact")); got != `{"git_push":["no-force-push","no-force-opt"]}` {
		t.Errorf("git.rules.exact %s", got)
	}

	// Rules by id.
	rules := get(t, cfg, "rules").(map[string]any)
	if got := sortedKeys(rules); got != "[fs-writes-in-workspace no-force-opt no-force-push no-token]" {
		t.Errorf("rule ids %s", got)
	}
	ws := rules["fs-writes-in-workspace"].(map[string]any)
	if got := sortedKeys(ws); got != "[argument description id origin package paths pointer required]" {
		t.Errorf("rule keys %s", got)
	}
	if rel(dir, ws["origin"].(string)) != "main.yaml:27" || ws["description"] != "writes stay in the workspace" ||
		jsonOf(t, ws["argument"]) != `[]` || jsonOf(t, ws["paths"]) != `[[]]` || ws["pointer"] != "" || ws["required"] != false || ws["id"] != "fs-writes-in-workspace" {
		t.Errorf("fs-writes-in-workspace = %v", ws)
	}
	opt := rules["no-force-opt"].(map[string]any)
	if jsonOf(t, opt["argument"]) != `["options","fo/rce~"]` || opt["required"] != true || opt["description"] != "" {
		t.Errorf("no-force-opt = %v", opt)
	}
	if jsonOf(t, rules["no-force-push"].(map[string]any)["argument"]) != `["force"]` {
		t.Errorf("no-force-push argument %v", rules["no-force-push"])
	}

	// Package names: s_ + 16 hex of the canonical schema; equal schemas
	// share one package, compiled once.
	wantPkg := pkgOf(t, map[string]any{"const": false})
	if opt["package"] != wantPkg || rules["no-force-push"].(map[string]any)["package"] != wantPkg {
		t.Errorf("const:false package %v / %v, want %s", opt["package"], rules["no-force-push"], wantPkg)
	}
	if !regexp.MustCompile(`^s_[0-9a-f]{16}$`).MatchString(wantPkg) {
		t.Errorf("package name %q", wantPkg)
	}
	if fc.n != 3 {
		t.Errorf("schema compiler called %d times, want 3 (one per distinct schema)", fc.n)
	}
	var gen []string
	for name, src := range c.Modules {
		if !strings.HasPrefix(name, "generated/") {
			t.Errorf("unexpected module %s", name)
			continue
		}
		pkg := strings.TrimSuffix(strings.TrimPrefix(name, "generated/"), ".rego")
		if !strings.HasPrefix(src, "package mcpx.rules."+pkg+"\n") {
			t.Errorf("module %s holds %q", name, src)
		}
		gen = append(gen, pkg)
	}
	if len(gen) != 3 {
		t.Errorf("generated modules %v, want 3", gen)
	}
	for _, id := range []string{"no-token", "fs-writes-in-workspace"} {
		pkg := rules[id].(map[string]any)["package"].(string)
		if _, ok := c.Modules["generated/"+pkg+".rego"]; !ok {
			t.Errorf("rule %s names package %s with no module", id, pkg)
		}
	}

	// The data is JSON and canonicalizable; the revision is its hash.
	if _, err := decision.Canonical(c.Data); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(c.Revision) {
		t.Errorf("revision %q", c.Revision)
	}
	if len(c.Warnings) != 0 {
		t.Errorf("warnings without a catalog: %v", c.Warnings)
	}
}

func sortedKeys(m map[string]any) string {
	ks := keys(m)
	for i := range ks {
		for j := i + 1; j < len(ks); j++ {
			if ks[j] < ks[i] {
				ks[i], ks[j] = ks[j], ks[i]
			}
		}
	}
	return "[" + strings.Join(ks, " ") + "]"
}

func pkgOf(t *testing.T, schema any) string {
	t.Helper()
	b, err := decision.Canonical(schema)
	if err != nil {
		t.Fatal(err)
	}
	return "s_" + decision.SHA256Hex(b)[:16]
}

func TestRevision(t *testing.T) {
	t.Parallel()
	// Origins hold the file path, so every load reads the same folder.
	dir := writeTree(t, map[string]string{"main.yaml": smallConfig})
	opts := func(set map[string]string) config.LoadOptions {
		return config.LoadOptions{Paths: []string{dir + "/main.yaml"}, Env: []string{}, Set: set, SchemaCompiler: (&fakeCompiler{}).compile}
	}
	r1, err := config.Load(opts(nil))
	if err != nil {
		t.Fatal(err)
	}
	r2, err := config.Load(opts(nil))
	if err != nil {
		t.Fatal(err)
	}
	r3, err := config.Load(opts(map[string]string{"policy.write": "deny"}))
	if err != nil {
		t.Fatal(err)
	}
	if r1.Revision != r2.Revision {
		t.Errorf("same config, revisions %s and %s", r1.Revision, r2.Revision)
	}
	if r1.Revision == r3.Revision {
		t.Errorf("policy.write changed but the revision did not")
	}
}

// TestSchemaValues checks that YAML scalars reach the schema compiler as
// exact JSON values: numbers as json.Number with their decimal text.
func TestSchemaValues(t *testing.T) {
	t.Parallel()
	fc := &fakeCompiler{}
	cfg := `version: 1
pool:
  argumentRules:
    - id: nums
      tools: [t]
      schema:
        properties:
          big: {maximum: 123456789012345678901234567890}
          dec: {multipleOf: 0.1}
          exp: {minimum: 1e308}
          odd: {enum: [0x1F, 1.50, +2, .5, -0.0, 1_000]}
          str: {const: "12"}
          flag: {const: no}
          yes: true
          nul: {default: null}
`
	_, err, _ := load(t, map[string]string{"main.yaml": cfg}, config.LoadOptions{SchemaCompiler: fc.compile})
	if err != nil {
		t.Fatal(err)
	}
	if len(fc.calls) != 1 {
		t.Fatalf("compiler saw %d schemas", len(fc.calls))
	}
	var schema any
	for _, s := range fc.calls {
		schema = s
	}
	props := schema.(map[string]any)["properties"].(map[string]any)
	check := func(got any, want json.Number) {
		t.Helper()
		n, ok := got.(json.Number)
		if !ok || n != want {
			t.Errorf("got %#v (%T), want json.Number(%q)", got, got, want)
		}
	}
	check(props["big"].(map[string]any)["maximum"], "123456789012345678901234567890")
	check(props["dec"].(map[string]any)["multipleOf"], "0.1")
	check(props["exp"].(map[string]any)["minimum"], "1e308")
	enum := props["odd"].(map[string]any)["enum"].([]any)
	for i, want := range []json.Number{"31", "1.50", "2", "0.5", "-0.0", "1000"} {
		check(enum[i], want)
	}
	if props["str"].(map[string]any)["const"] != "12" || props["flag"].(map[string]any)["const"] != "no" || props["yes"] != true {
		t.Errorf("strings and booleans: %v", props)
	}
	if v, ok := props["nul"].(map[string]any)["default"]; !ok || v != nil {
		t.Errorf("null: %v", props["nul"])
	}
}

// TestSchemaPackagesExact: schemas that RFC 8785 would confuse (integers
// beyond float64) still get distinct packages.
func TestSchemaPackagesExact(t *testing.T) {
	t.Parallel()
	cfg := `version: 1
pool:
  argumentRules:
    - {id: a, tools: [t], schema: {const: 9007199254740993}}
    - {id: b, tools: [t], schema: {const: 9007199254740992}}
    - {id: c, tools: [t], schema: {const: 9007199254740993}}
    - {id: d, tools: [t], schema: {multipleOf: 0.1}}
`
	c, err, _ := load(t, map[string]string{"main.yaml": cfg}, config.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rules := configData(t, c)["rules"].(map[string]any)
	pa, pb, pc := rules["a"].(map[string]any)["package"], rules["b"].(map[string]any)["package"], rules["c"].(map[string]any)["package"]
	if pa == pb {
		t.Errorf("different schemas share package %v: %v", pa, rules)
	}
	if pa != pc {
		t.Errorf("equal schemas got packages %v and %v", pa, pc)
	}
	// A number RFC 8785 keeps exactly is named by the canonical JSON.
	if pd, want := rules["d"].(map[string]any)["package"], pkgOf(t, map[string]any{"multipleOf": json.Number("0.1")}); pd != want {
		t.Errorf("multipleOf 0.1 package %v, want %s", pd, want)
	}
}

func TestNoSchemaCompiler(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{"main.yaml": "pool:\n  argumentRules:\n    - {id: a, tools: [t], schema: {}}\nversion: 1\n"})
	_, err := config.Load(config.LoadOptions{Paths: []string{dir + "/main.yaml"}, Env: []string{}})
	if err == nil || rel(dir, err.Error()) != `main.yaml:3: pool.argumentRules[0].schema: rule "a": no schema compiler configured` {
		t.Errorf("got %v", err)
	}
	// Without rules no compiler is needed.
	dir = writeTree(t, map[string]string{"main.yaml": "version: 1\n"})
	if _, err := config.Load(config.LoadOptions{Paths: []string{dir + "/main.yaml"}, Env: []string{}}); err != nil {
		t.Error(err)
	}
}

func TestOverrides(t *testing.T) {
	t.Parallel()
	c, err, _ := load(t, map[string]string{
		"main.yaml":           "policy:\n  overrides: [ov, other/policy.rego]\nversion: 1\n",
		"conf.d/a.yaml":       "policy:\n  overrides: [../ov/policy.rego]\nversion: 1\n",
		"ov/policy.rego":      "package mcpx.overrides\n\ndeny contains {\"code\": \"x\", \"message\": \"y\"} if input.server == \"prod\"\n",
		"ov/policy_test.rego": "package mcpx.overrides_test\n",
		"ov/sub/more.rego":    "package mcpx.overrides\n\nask contains {\"code\": \"z\", \"message\": \"w\"} if input.tool.name == \"x\"\n",
		"other/policy.rego":   "package mcpx.overrides\n",
	}, config.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range c.Modules {
		names = append(names, n)
	}
	if got := sortedKeys(toSet(names)); got != "[overrides/more.rego overrides/policy.rego overrides/policy_2.rego]" {
		t.Errorf("modules %s", got)
	}
	if !strings.Contains(c.Modules["overrides/policy.rego"], `input.server == "prod"`) {
		t.Errorf("overrides/policy.rego = %q", c.Modules["overrides/policy.rego"])
	}
}

func TestOverridesEmptyFolderWarns(t *testing.T) {
	t.Parallel()
	c, err, dir := load(t, map[string]string{
		"main.yaml":         "policy:\n  overrides: [ov]\nversion: 1\n",
		"ov/only_test.rego": "package mcpx.overrides_test\n",
	}, config.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Warnings) != 1 || rel(dir, c.Warnings[0].String()) != "main.yaml:2: policy.overrides[0]: override folder ov holds no .rego files" {
		t.Errorf("warnings %v", c.Warnings)
	}
}

func toSet(xs []string) map[string]any {
	m := map[string]any{}
	for _, x := range xs {
		m[x] = true
	}
	return m
}
