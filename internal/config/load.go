package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mcpx/mcpx-policy/internal/statedir"
	"github.com/mcpx/mcpx-policy/internal/trust"
)

// SchemaCompiler compiles one argument-rule schema (JSON-compatible Go
// values, numbers as json.Number) into the Rego module of package
// mcpx.rules.<pkgName> (ADR 0001). The real one is schemarego.Compile.
// An error with a method SchemaPointer() string, a JSON Pointer into the
// schema, is reported at the line of the YAML node it points at (the
// `pattern:` of a bad pattern), else at the rule's `schema:` line.
type SchemaCompiler func(schema any, pkgName string) (module string, err error)

// LoadOptions says where the configuration comes from.
type LoadOptions struct {
	// Paths are the main config files (--config), in layer order. The
	// conf.d/*.yaml files in the folder of the first one are layered
	// after them, in lexical order.
	Paths []string
	// Env holds "NAME=value" pairs; only MCPX_POLICY_* names are read.
	// Nil means os.Environ(); an empty non-nil slice means no environment.
	Env []string
	// Set holds flag-level overrides, the highest layer, by config path:
	// policy.write, policy.confirmDestructive, policy.unknownArgs,
	// policy.enforce, pool.pinTools, servers.<name>.writePolicy,
	// servers.<name>.unknownArgs, servers.<name>.enforce,
	// servers.<name>.pinTools.
	Set map[string]string
	// Catalog is an optional tool catalog file (see LoadCatalog). With it,
	// Load adds CheckCatalog's warnings to Compiled.Warnings.
	Catalog string
	// SchemaCompiler compiles argument-rule schemas. Nil makes every
	// argument rule a load error.
	SchemaCompiler SchemaCompiler
	// RuleEvaluator decides rule examples with the generated code. Nil
	// makes every rule that has examples a load error (an example is
	// never skipped).
	RuleEvaluator RuleEvaluator
}

// EnvPrefix starts every environment variable the configuration reads.
const EnvPrefix = "MCPX_POLICY_"

// Load reads, layers, validates and compiles the configuration:
// defaults < each of opts.Paths in order < conf.d/*.yaml beside the first
// path (lexical order) < MCPX_POLICY_* environment < opts.Set. Modes are
// replaced by later layers; patterns, rules, exemptArgs, unknownArgsTools
// and overrides add up. A later layer (any after the first path) may make
// the policy less strict, but never silently: every field declares how a
// change moves strictness (direction.go, ADR 0016) — a mode by its order
// (write/writePolicy deny > ask > allow, unknownArgs reject > warn > off,
// confirmDestructive true > false, enforce enforce > shadow, pinTools
// deny > ask > off), an exemptArgs key by being added, the ledger section
// by any change — and each loosening is a Compiled.Warnings entry at the
// loosening value's origin, naming the setting and the value and origin
// it replaced, and an entry of data.mcpx.config.loosened. Every file read
// must be one only its owner (this user or root) may write, and the
// ledger's dsnFile one no other user may read. Every problem found is returned at once as
// ConfigErrors (each a *ConfigError with file and line); on error the
// *Compiled is nil. Load is safe for concurrent use.
func Load(opts LoadOptions) (*Compiled, error) {
	c := &collector{}
	var layers []*layer
	files := append([]string(nil), opts.Paths...)
	for _, p := range opts.Paths {
		layers = append(layers, parseFile(p, c))
	}
	if len(opts.Paths) > 0 {
		for _, p := range confD(opts.Paths[0], c) {
			files = append(files, p)
			layers = append(layers, parseFile(p, c))
		}
	}
	env := opts.Env
	if env == nil {
		env = os.Environ()
	}
	layers = append(layers, envLayer(env, layers, c), setLayer(opts.Set, c))

	var cat *Catalog
	if opts.Catalog != "" {
		var err error
		cat, err = LoadCatalog(opts.Catalog)
		if err != nil {
			if ces, ok := err.(ConfigErrors); ok {
				c.errs = append(c.errs, ces...)
			} else {
				c.add(opts.Catalog, 0, "", "%v", err)
			}
		}
	}
	compiled := compile(layers, originNames(files), opts.SchemaCompiler, opts.RuleEvaluator, c)
	resolveLedger(compiled, env, c)
	if err := c.err(); err != nil {
		return nil, err
	}
	if cat != nil {
		compiled.Catalog = cat
		compiled.Warnings = append(compiled.Warnings, CheckCatalog(compiled, cat)...)
	}
	return compiled, nil
}

// originNames names each config file as the compiled policy shows it (a
// rule's origin in the data, and so in violations, a bundle and the
// Revision): its path from the folder of the first file when it lies
// under that folder ("mcpx-policy.yaml", "conf.d/10-team.yaml"), else its
// base name. The name depends on where the files lie relative to each
// other, never on how a path was spelled (relative, absolute, through
// another working directory), so one configuration is one Revision and
// one bundle wherever it is loaded from. Errors and warnings still name
// files as they were given.
func originNames(files []string) map[string]string {
	names := make(map[string]string, len(files))
	if len(files) == 0 {
		return names
	}
	base, err := filepath.Abs(filepath.Dir(files[0]))
	for _, f := range files {
		name := filepath.Base(f)
		if abs, aerr := filepath.Abs(f); err == nil && aerr == nil {
			if rel, rerr := filepath.Rel(base, abs); rerr == nil && filepath.IsLocal(rel) {
				name = filepath.ToSlash(rel)
			}
		}
		names[f] = name
	}
	return names
}

// confD lists conf.d/*.yaml beside the first main file, in lexical order.
// A missing folder is no layer.
func confD(first string, c *collector) []string {
	dir := filepath.Join(filepath.Dir(first), "conf.d")
	if _, err := trust.CheckTrustedDir(dir); err != nil {
		var se *statedir.Error
		if errors.As(err, &se) && se.Hint != "" {
			err = fmt.Errorf("%w (%s)", se, se.Hint)
		}
		c.add(dir, 0, "", "cannot read conf.d folder: %v", unwrapPathError(err))
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		if !os.IsNotExist(err) {
			c.add(dir, 0, "", "cannot read conf.d folder: %v", unwrapPathError(err))
		}
		return nil
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		out = append(out, filepath.Join(dir, e.Name()))
	}
	sort.Strings(out)
	return out
}

// envLayer reads the MCPX_POLICY_* scalars. Variables of other parts of
// the program (MCPX_POLICY_STATE_DIR and the like) are left alone; a
// MCPX_POLICY_POLICY_* or MCPX_POLICY_SERVERS_* name this package does not
// know is an error, so a typo never goes unnoticed.
func envLayer(env []string, files []*layer, c *collector) *layer {
	l := &layer{source: "env"}
	var names []string
	vals := map[string]string{}
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(k, EnvPrefix) {
			continue
		}
		if _, dup := vals[k]; !dup {
			names = append(names, k)
		}
		vals[k] = v
	}
	sort.Strings(names)
	servers := map[string][]string{} // env form of a configured server name -> names
	for _, f := range files {
		for _, s := range f.servers {
			k := envName(s.name)
			if !containsStr(servers[k], s.name) {
				servers[k] = append(servers[k], s.name)
			}
		}
	}
	for _, k := range names {
		src := "env $" + k
		rest := strings.TrimPrefix(k, EnvPrefix)
		v := vals[k]
		if d := scalarByEnv(k); d != nil {
			d.set(l, "", d.fromString(c, src, d.path(""), v))
			continue
		}
		switch {
		case strings.HasPrefix(rest, "POLICY_"), strings.HasPrefix(rest, "POOL_"):
			c.add(src, 0, "", "unknown setting (%s)", envHelp())
		case strings.HasPrefix(rest, "SERVERS_"):
			body := strings.TrimPrefix(rest, "SERVERS_")
			d := serverScalarByEnv(body)
			if d == nil {
				c.add(src, 0, "", "unknown setting (%s)", serverEnvHelp())
				continue
			}
			body = strings.TrimSuffix(body, d.env())
			match := servers[body]
			if len(match) != 1 {
				if len(match) == 0 {
					c.add(src, 0, "", "no configured server is named %s (the name is upper-cased, other characters than letters and digits become _)", strings.ToLower(body))
				} else {
					c.add(src, 0, "", "ambiguous: servers %s all match", strings.Join(match, ", "))
				}
				continue
			}
			d.set(l, match[0], d.fromString(c, src, d.path(match[0]), v))
		}
	}
	return l
}

// scalarByEnv is the global setting whose variable is name; nil for none.
func scalarByEnv(name string) *scalarDef {
	for _, d := range scalars {
		if d.scope != "servers" && d.env() == name {
			return d
		}
	}
	return nil
}

// serverScalarByEnv is the server setting whose suffix ends body (what
// follows MCPX_POLICY_SERVERS_); nil for none.
func serverScalarByEnv(body string) *scalarDef {
	for _, d := range scalars {
		if d.scope == "servers" && strings.HasSuffix(body, d.env()) {
			return d
		}
	}
	return nil
}

// envName is a server name as it appears in an environment variable name.
func envName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			return r
		}
		return '_'
	}, s)
}

func containsStr(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// setLayer reads LoadOptions.Set: a global setting by its path, a
// server's as servers.<name>.<key>, the key in any case.
func setLayer(set map[string]string, c *collector) *layer {
	l := &layer{source: "flags"}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		d, name := scalarBySet(k)
		if d == nil {
			c.add("flags", 0, k, "unknown setting (%s)", setHelp())
			continue
		}
		d.set(l, name, d.fromString(c, "flags", d.path(name), set[k]))
	}
	return l
}

// scalarBySet is the setting a LoadOptions.Set key names, and the server's
// name for a server setting; nil for none.
func scalarBySet(k string) (*scalarDef, string) {
	for _, d := range scalars {
		if d.scope != "servers" {
			if strings.EqualFold(k, d.path("")) {
				return d, ""
			}
			continue
		}
		suffix := "." + d.key
		if strings.HasPrefix(k, "servers.") && strings.HasSuffix(strings.ToLower(k), strings.ToLower(suffix)) && len(k) > len("servers."+suffix) {
			return d, k[len("servers.") : len(k)-len(suffix)]
		}
	}
	return nil, ""
}
