package config

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// A rule that confines a path with a regular expression (pattern "^/…")
// is the rule operators write first and the one that is easiest to get
// wrong: "^/workspace/" accepts /workspace/../etc/passwd, and
// "^/workspace" accepts /workspace-evil. pathPrefixWarnings finds such
// patterns on path-like arguments and tries them on the two tricks; each
// that gets through is a warning at the pattern's line that suggests
// pathWithin, which handles both (docs/argument-rules.md#paths-and-urls).

// pathLikeName matches argument names that usually hold a path.
var pathLikeName = regexp.MustCompile(`(?i)(path|file|dir|folder)|^(source|src|destination|dest|target|root|cwd|location)$`)

// pathPrefixWarnings returns r's warnings about hand-written path prefixes.
func pathPrefixWarnings(r *ruleDef) []Warning {
	name := ""
	if len(r.argument) > 0 {
		name = r.argument[len(r.argument)-1]
	}
	var out []Warning
	walkSchemas(r.schema, "", name, func(m map[string]any, ptr, name string) {
		msg := pathPrefixProblem(m, name)
		if msg == "" {
			return
		}
		line := pointerLine(r.schemaNode, ptr+"/pattern")
		if line == 0 {
			line = r.schemaAt.line
		}
		where := ptr
		if where == "" {
			where = "/"
		}
		out = append(out, Warning{File: r.schemaAt.file, Line: line, Path: r.schemaAt.path,
			Msg: fmt.Sprintf("rule %q: schema %s: %s", r.id, where, msg)})
	})
	return out
}

// pathPrefixProblem says what is wrong with the pattern of schema m, the
// schema of an argument called name ("" when it has none), or "".
func pathPrefixProblem(m map[string]any, name string) string {
	src, ok := m["pattern"].(string)
	if !ok || !(strings.HasPrefix(src, "^/") || strings.HasPrefix(src, `^\/`)) || (name != "" && !pathLikeName.MatchString(name)) {
		return ""
	}
	re, err := regexp.Compile(src)
	if err != nil {
		return ""
	}
	var guard *regexp.Regexp
	if not, ok := m["not"].(map[string]any); ok {
		if p, ok := not["pattern"].(string); ok {
			guard, _ = regexp.Compile(p)
		}
	}
	accepts := func(s string) bool { return re.MatchString(s) && (guard == nil || !guard.MatchString(s)) }
	prefix, _ := re.LiteralPrefix()
	root := strings.TrimSuffix(prefix, "/")
	if root == "" {
		return ""
	}
	var tricks []string
	for _, t := range []string{root + "/../etc/passwd", root + "-evil/x"} {
		if accepts(t) {
			tricks = append(tricks, t)
		}
	}
	if len(tricks) == 0 {
		return ""
	}
	quoted := make([]string, len(tricks))
	for i, t := range tricks {
		quoted[i] = strconv.Quote(t)
	}
	return fmt.Sprintf("pattern %q reads as a hand-written path prefix, and it accepts %s: write pathWithin: [%s] instead, which cleans the path, refuses \"..\" and stops at a separator (docs/argument-rules.md#paths-and-urls)",
		src, strings.Join(quoted, " and "), root)
}

// walkSchemas calls fn on every schema object in the raw schema s, with
// its JSON Pointer and the name of the argument it applies to as far as
// the keywords tell: a property's name, kept through items, the
// combinators and conditionals; "" under patternProperties, $defs and
// additionalProperties. Not under not: a pattern there is a deny-list.
func walkSchemas(s any, ptr, name string, fn func(m map[string]any, ptr, name string)) {
	m, ok := s.(map[string]any)
	if !ok {
		return
	}
	fn(m, ptr, name)
	esc := func(k string) string { return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1") }
	for _, k := range sortedKeys(m) {
		v := m[k]
		switch k {
		case "items", "contains", "if", "then", "else", "unevaluatedItems":
			walkSchemas(v, ptr+"/"+k, name, fn)
		case "additionalProperties", "unevaluatedProperties":
			walkSchemas(v, ptr+"/"+k, "", fn)
		case "prefixItems", "allOf", "anyOf", "oneOf":
			if xs, ok := v.([]any); ok {
				for i, x := range xs {
					walkSchemas(x, ptr+"/"+k+"/"+strconv.Itoa(i), name, fn)
				}
			}
		case "properties", "patternProperties", "$defs", "dependentSchemas":
			subs, _ := v.(map[string]any)
			for _, p := range sortedKeys(subs) {
				sub := ""
				if k == "properties" {
					sub = p
				}
				walkSchemas(subs[p], ptr+"/"+k+"/"+esc(p), sub, fn)
			}
		}
	}
}

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
