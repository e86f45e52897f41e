package config

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
)

// A place is one field of the configuration where a file writes it: the
// mapping that holds it ("policy", "pool", "servers.fs", or "" for a
// top-level key) and its key there.
type place struct {
	at, key string
	f       fieldDecl
	typ     reflect.Type
}

func (p place) path() string { return join(p.at, p.key) }

// server is the server a setting at p belongs to ("" for every server's).
func (p place) server() string {
	if strings.HasPrefix(p.at, "servers.") {
		return strings.TrimPrefix(p.at, "servers.")
	}
	return ""
}

// row is the settings table's row of an ordered place.
func (p place) row() *scalarDef {
	table := p.at
	if strings.HasPrefix(table, "servers.") {
		table = "servers"
	}
	return scalarIn(table, p.key)
}

// places lists every field a file can set that has a direction a change
// can take (not a part or a meta), at every mapping that holds it, from
// the declarations: nothing here names a field.
func places(t *testing.T) []place {
	t.Helper()
	var out []place
	settable := func(d direction) bool {
		return d == dirOrdered || d == dirLoosens || d == dirTightens || d == dirEntries || d == dirAny
	}
	var walk func(typ reflect.Type, at string, keys []string)
	walk = func(typ reflect.Type, at string, keys []string) {
		for _, f := range declared(typ) {
			sf := typ.Field(f.index)
			switch {
			case f.dir == dirScope && sf.Anonymous:
				walk(sf.Type, at, keys)
			case f.dir == dirScope:
				walk(sf.Type, f.key, poolKeys)
			case f.dir == dirEach:
				walk(sf.Type.Elem().Elem(), f.key+".fs", serverKeys)
			case settable(f.dir):
				key, in := f.key, at
				if at == "" {
					in, key, _ = strings.Cut(f.key, ".")
					if key == "" { // a top-level key (ledger)
						in, key = "", f.key
					}
				}
				if keys != nil && !slices.Contains(keys, key) {
					continue // the scope holds the field, but a file may not set it here
				}
				out = append(out, place{at: in, key: key, f: f, typ: sf.Type})
			}
		}
	}
	walk(reflect.TypeFor[layer](), "", nil)
	if len(out) < 15 {
		t.Fatalf("only %d places found", len(out))
	}
	return out
}

// doc builds one config file: each place's value (YAML) in its mapping.
type doc map[string][]string // mapping ("" top level) -> "key: value" lines

func (d doc) set(at, key, value string) doc {
	d[at] = append(d[at], key+": "+value)
	return d
}

func (d doc) String() string {
	var b strings.Builder
	b.WriteString("version: 1\n")
	for _, l := range d[""] {
		b.WriteString(l + "\n")
	}
	for _, m := range []string{"policy", "pool"} {
		if len(d[m]) > 0 {
			b.WriteString(m + ":\n")
			for _, l := range d[m] {
				b.WriteString("  " + l + "\n")
			}
		}
	}
	b.WriteString("servers:\n  fs:\n")
	if len(d["servers.fs"]) == 0 {
		b.WriteString("    {}\n")
	}
	for _, l := range d["servers.fs"] {
		b.WriteString("    " + l + "\n")
	}
	return b.String()
}

// A change is one case of the generated test: a base (the first file)
// and what a later layer sets, and whether that loosens.
type change struct {
	name        string
	base, later doc
	env         []string          // the environment (a later layer, or a dsnEnv's variables)
	set         map[string]string // the flags layer
	files       map[string]string // other files the config names
	loosens     bool
	want        string // what the warning says, when it loosens
}

// changes generates the cases of p: for an ordered setting every pair of
// its values from every kind of later layer; for a list, entries added;
// for the ledger, each way to point it elsewhere. A field whose Go type
// has no generator here fails the test: add one with the field.
func changes(t *testing.T, p place) []change {
	t.Helper()
	var out []change
	later := func(name string, loosens bool, want string, base doc, at, value string) {
		for _, l := range []string{"file", "conf.d"} {
			out = append(out, change{name: name + " by " + l, base: base, later: doc{}.set(at, p.key, value), loosens: loosens, want: want})
			if l == "file" {
				out[len(out)-1].name = name + " by a second --config"
			}
		}
	}
	switch p.typ {
	case reflect.TypeFor[*setting]():
		d := p.row()
		if d == nil {
			t.Fatalf("%s: no row of the settings table", p.path())
		}
		values := make([]string, 0, len(d.kind.order))
		for v := range d.kind.order {
			values = append(values, v)
		}
		sort.Strings(values)
		for _, a := range values {
			for _, b := range values {
				if a == b {
					continue
				}
				loosens := d.kind.order[b] < d.kind.order[a]
				name := fmt.Sprintf("%s to %s", a, b)
				want := "loosened from " + a + " ("
				base := doc{}.set(p.at, p.key, a)
				later(name, loosens, want, base, p.at, b)
				env := d.env() + "=" + b
				if d.scope == "servers" {
					env = EnvPrefix + "SERVERS_FS" + d.env() + "=" + b
				}
				out = append(out,
					change{name: name + " by the environment", base: base, later: doc{}, env: []string{env}, loosens: loosens, want: want},
					change{name: name + " by a flag", base: base, later: doc{}, set: map[string]string{d.path("fs"): b}, loosens: loosens, want: want})
			}
		}
	case reflect.TypeFor[[]argRef]():
		base := doc{}.set(p.at, p.key, "[a]")
		later("a key added", true, `adds "b"`, base, p.at, "[a, b]")
		later("the same key again", false, "", base, p.at, "[a]")
		if p.at != "policy" {
			// a key every server already has is no loosening for one
			later("a key exempt everywhere already", false, "", doc{}.set("policy", p.key, "[g]"), p.at, "[g]")
		}
	case reflect.TypeFor[[]unknownArgsRef]():
		base := doc{}.set(p.at, p.key, "[{tools: [t1], mode: reject}]")
		later("an entry reject to warn", true, "loosened from reject (", base, p.at, "[{tools: [t1], mode: warn}]")
		later("an entry reject to off", true, "loosened from reject (", base, p.at, "[{tools: [t1], mode: off}]")
		later("an entry reject again", false, "", base, p.at, "[{tools: [t1], mode: reject}]")
	case reflect.TypeFor[*ledgerDef]():
		pg := func(target string) doc { return doc{}.set("", p.key, "{store: postgres, "+target+"}") }
		env := []string{"LEDGER_A=dbname=a", "LEDGER_B=dbname=b"}
		files := map[string]string{"dsn-a": "dbname=a\n", "dsn-b": "dbname=b\n", "conf.d/dsn-b": "dbname=b\n"}
		for _, c := range []struct {
			name        string
			base, later doc
			loosens     bool
			want        string
		}{
			{"another dsn", pg(`dsn: "dbname=a"`), pg(`dsn: "dbname=b"`), true, "ledger store postgres at the dsn written at "},
			{"another variable", pg("dsnEnv: LEDGER_A"), pg("dsnEnv: LEDGER_B"), true, "ledger store postgres at the connection string in $LEDGER_B replaces the one at the connection string in $LEDGER_A"},
			{"another file", pg("dsnFile: dsn-a"), pg("dsnFile: dsn-b"), true, "replaces the one at the connection string in file "},
			{"a variable for a dsn", pg(`dsn: "dbname=a"`), pg("dsnEnv: LEDGER_A"), true, "replaces the one at the dsn written at "},
			{"the file store for postgres", pg("dsnEnv: LEDGER_A"), doc{}.set("", p.key, "{store: file}"), true, "ledger store file replaces store postgres set at "},
			{"postgres for the default file store", doc{}, pg("dsnEnv: LEDGER_A"), true, "ledger store postgres replaces the default store file"},
			{"the same database", pg("dsnEnv: LEDGER_A"), pg("dsnEnv: LEDGER_A"), false, ""},
			{"the default file store named", doc{}, doc{}.set("", p.key, "{store: file}"), false, ""},
		} {
			for _, l := range []string{"a second --config", "conf.d"} {
				out = append(out, change{name: c.name + " by " + l, base: c.base, later: c.later, env: env, files: files, loosens: c.loosens, want: c.want})
			}
		}
	case reflect.TypeFor[[]patRef]():
		later("a pattern added", false, "", doc{}, p.at, "[t9]")
	case reflect.TypeFor[[]*ruleDef]():
		later("a rule added", false, "", doc{}, p.at, "[{id: later-rule, tools: [t9], schema: {type: object}}]")
	case reflect.TypeFor[[]*budgetDef]():
		// a later layer can only add a budget (another cap), never raise
		// or remove one: an id written twice is a load error
		later("a budget added", false, "", doc{}.set(p.at, p.key, "[{id: first-budget, max: 5, window: 1h}]"), p.at, "[{id: later-budget, max: 50, window: 1h}]")
	case reflect.TypeFor[[]*labelDef]():
		// a later layer can only give more labels: a label taken away
		// would let a flow rule's call through
		later("a label added", false, "", doc{}.set(p.at, p.key, "[{label: egress, tools: [t1]}]"), p.at, "[{label: egress, tools: [t9]}]")
	case reflect.TypeFor[[]*flowDef]():
		// a later layer can only add a flow rule, never remove one: an id
		// written twice is a load error
		labels := doc{}.set("pool", "labels", "[{label: egress, tools: [t1]}, {label: untrusted-input, tools: [t2]}]")
		later("a flow rule added", false, "", labels.set(p.at, p.key, "[{id: first-flow, after: [untrusted-input], calls: [egress], then: ask}]"), p.at, "[{id: later-flow, after: [untrusted-input], calls: [egress], then: deny}]")
	case reflect.TypeFor[[]overrideRef]():
		for i, l := range []string{"a second --config", "conf.d"} {
			_ = i
			out = append(out, change{name: "an override added by " + l, base: doc{}, later: doc{}.set(p.at, p.key, "[ov.rego]"),
				files: map[string]string{"ov.rego": "package mcpx.overrides\n", "conf.d/ov.rego": "package mcpx.overrides\n"}})
		}
	default:
		t.Fatalf("%s (%s, %s): no generator for its type %s: add one to changes", p.path(), p.f.name, p.f.dir, p.typ)
	}
	// every loosening is of a field that declares one
	for _, c := range out {
		if c.loosens && p.f.dir == dirTightens {
			t.Fatalf("%s declares tightens but a case loosens", p.path())
		}
	}
	return out
}

// TestEveryLooseningIsReported: for every field a file can set, at every
// place that holds it (policy, the pool, a server), generated from the
// declarations, a later layer — a second --config file, a conf.d file,
// the environment and the flags where they set it — changes it in every
// way the generator knows: each loosening is a warning at the later
// value's origin naming the setting and what it replaced, and is in the
// compiled data (data.mcpx.config.loosened) the decisions' ConfigLoosened
// warnings are made of, for the server it concerns; each change that does
// not loosen says nothing.
func TestEveryLooseningIsReported(t *testing.T) {
	t.Parallel()
	kinds := map[direction]int{}
	for _, p := range places(t) {
		kinds[p.f.dir]++
		for _, c := range changes(t, p) {
			t.Run(p.path()+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				write := func(name, body string) {
					path := filepath.Join(dir, filepath.FromSlash(name))
					if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
						t.Fatal(err)
					}
				}
				for n, b := range c.files {
					write(n, b)
				}
				write("main.yaml", c.base.String())
				paths := []string{filepath.Join(dir, "main.yaml")}
				source := ""
				switch {
				case strings.HasSuffix(c.name, "by a second --config"):
					write("extra.yaml", c.later.String())
					paths = append(paths, filepath.Join(dir, "extra.yaml"))
					source = filepath.Join(dir, "extra.yaml")
				case strings.HasSuffix(c.name, "by conf.d"):
					write("conf.d/50-later.yaml", c.later.String())
					source = filepath.Join(dir, "conf.d", "50-later.yaml")
				case strings.HasSuffix(c.name, "by the environment"):
					source = "env $" + strings.SplitN(c.env[0], "=", 2)[0]
				case strings.HasSuffix(c.name, "by a flag"):
					source = "flags"
				}
				env := c.env
				if env == nil {
					env = []string{}
				}
				comp, err := Load(LoadOptions{Paths: paths, Env: env, Set: c.set, SchemaCompiler: func(_ any, name string) (string, error) {
					return "package mcpx.rules." + name + "\nviolations := {}\n", nil
				}})
				if err != nil {
					t.Fatalf("load: %v\nbase:\n%s\nlater:\n%s", err, c.base, c.later)
				}
				var loose []Warning
				for _, w := range comp.Warnings {
					if w.File == source || strings.HasPrefix(w.Msg, "loosened") || strings.Contains(w.Msg, "ledger store") {
						loose = append(loose, w)
					}
				}
				data, _ := comp.Data["config"].(map[string]any)["loosened"].([]any)
				if !c.loosens {
					if len(loose) != 0 || len(data) != 0 {
						t.Fatalf("a change that does not loosen warned: %v (data %v)", loose, data)
					}
					return
				}
				if len(loose) != 1 {
					t.Fatalf("warnings %v; want exactly one loosening of %s", comp.Warnings, p.path())
				}
				w := loose[0]
				if w.File != source || !strings.HasPrefix(w.Path, p.path()) || !strings.Contains(w.Msg, c.want) {
					t.Errorf("warning %q (file %q, path %q); want one at %s, path %s, saying %q", w.String(), w.File, w.Path, source, p.path(), c.want)
				}
				if source != "flags" && !strings.HasPrefix(source, "env ") && w.Line == 0 {
					t.Errorf("warning %q has no line", w.String())
				}
				if len(data) != 1 {
					t.Fatalf("data.mcpx.config.loosened %v; want the one loosening", data)
				}
				e := data[0].(map[string]any)
				if e["message"] != w.String() || e["path"] != w.Path || e["server"] != p.server() {
					t.Errorf("loosened data %v; want message %q, path %q, server %q", e, w.String(), w.Path, p.server())
				}
			})
		}
	}
	for _, d := range []direction{dirOrdered, dirLoosens, dirTightens, dirEntries, dirAny} {
		if kinds[d] == 0 {
			t.Errorf("no field of direction %s was generated", d)
		}
	}
}

// everyLoosening is where TestEveryLooseningAtOnce keeps the config that
// loosens every field at once, for policy_test's
// TestEveryLooseningOnEverySurface: the first file, the conf.d file and
// the warnings a load says, paths relative to the first file's folder.
const everyLoosening = "../../policy_test/testdata/loosen-every-field"

// TestEveryLooseningAtOnce generates, from the declarations, one config
// that loosens every field a file can set at once — the first file
// strict, one conf.d file loosening each place (the ledger between two
// variables policy_test points at one database) — checks that each place
// is warned about, and that the copy policy_test runs against the built
// binary is this one (go test ./internal/config/ -run
// TestEveryLooseningAtOnce -update rewrites it).
func TestEveryLooseningAtOnce(t *testing.T) {
	t.Parallel()
	base, later := doc{}, doc{}
	var ps []place
	for _, p := range places(t) {
		var pick *change
		for _, c := range changes(t, p) {
			if c.loosens && strings.HasSuffix(c.name, "by conf.d") && (p.key != "ledger" || strings.HasPrefix(c.name, "another variable")) {
				pick = &c
				break
			}
		}
		if pick == nil {
			continue // a field no change loosens (a list every entry of which tightens)
		}
		ps = append(ps, p)
		for m, lines := range pick.base {
			base[m] = append(base[m], lines...)
		}
		for m, lines := range pick.later {
			later[m] = append(later[m], lines...)
		}
	}
	dir := t.TempDir()
	files := map[string]string{"mcpx-policy.yaml": base.String(), "conf.d/50-loosen.yaml": later.String()}
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	comp, err := Load(LoadOptions{Paths: []string{filepath.Join(dir, "mcpx-policy.yaml")}, Env: []string{"LEDGER_A=dbname=a", "LEDGER_B=dbname=b"},
		SchemaCompiler: func(_ any, name string) (string, error) {
			return "package mcpx.rules." + name + "\nviolations := {}\n", nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	var warnings []string
	for _, w := range comp.Warnings {
		warnings = append(warnings, strings.ReplaceAll(w.String(), dir+string(filepath.Separator), ""))
	}
	for _, p := range ps {
		if !slices.ContainsFunc(comp.Warnings, func(w Warning) bool { return strings.HasPrefix(w.Path, p.path()) }) {
			t.Errorf("%s: loosened in the conf.d file, and not warned about", p.path())
		}
	}
	files["warnings.txt"] = strings.Join(warnings, "\n") + "\n"
	update := false
	if f := flag.Lookup("update"); f != nil {
		update = f.Value.String() == "true"
	}
	for name, want := range files {
		path := filepath.Join(everyLoosening, filepath.FromSlash(name))
		if update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != want {
			t.Errorf("%s is not the config the declarations generate (run with -update):\n%s", path, want)
		}
	}
}
