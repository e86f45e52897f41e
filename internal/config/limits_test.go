package config_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/config"
)

// nested returns n levels of flow lists around a scalar: [[[x]]].
func nested(n int) string {
	return strings.Repeat("[", n) + "x" + strings.Repeat("]", n)
}

// notSchema returns a schema of n nested mappings: {not: {not: {}}}.
func notSchema(n int) string {
	return strings.Repeat("{not: ", n-1) + "{}" + strings.Repeat("}", n-1)
}

func rule(schema string) string {
	return "version: 1\npool:\n  argumentRules:\n    - id: r\n      tools: [t]\n      schema: " + schema + "\n"
}

// aliases returns a rule whose schema's $defs hold a list of items zeros
// anchored as &a and a list of n aliases of it (on line 8).
func aliases(items, n int) string {
	return "version: 1\npool:\n  argumentRules:\n    - id: r\n      tools: [t]\n      schema:\n        $defs:\n" +
		"          a: &a [" + strings.TrimSuffix(strings.Repeat("0, ", items), ", ") + "]\n" +
		"          b: [" + strings.TrimSuffix(strings.Repeat("*a, ", n), ", ") + "]\n"
}

// TestIncompleteFilesRefused: an empty, comment-only or versionless file
// (what an editor leaves after truncating a file, before it writes it
// again) is never loaded as a config: every config file, main or conf.d,
// starts with version: 1.
func TestIncompleteFilesRefused(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"empty main file", map[string]string{"main.yaml": ""},
			[]string{`main.yaml: config file holds no settings (want at least version: 1; an empty or cut-off file is never loaded)`}},
		{"comments only", map[string]string{"main.yaml": "# rewritten by the editor\n"},
			[]string{`main.yaml: config file holds no settings (want at least version: 1; an empty or cut-off file is never loaded)`}},
		{"a null document", map[string]string{"main.yaml": "---\n"},
			[]string{`main.yaml: config file holds no settings (want at least version: 1; an empty or cut-off file is never loaded)`}},
		{"no version", map[string]string{"main.yaml": "policy:\n  write: deny\n"},
			[]string{`main.yaml:1: version: config file has no version (every config file starts with version: 1; an empty or cut-off file is never loaded)`}},
		{"empty conf.d fragment", map[string]string{"main.yaml": "version: 1\n", "conf.d/10-hide.yaml": ""},
			[]string{`conf.d/10-hide.yaml: config file holds no settings (want at least version: 1; an empty or cut-off file is never loaded)`}},
		{"conf.d fragment without version", map[string]string{"main.yaml": "version: 1\n", "conf.d/10-hide.yaml": "pool:\n  hiddenTools: [move_*]\n"},
			[]string{`conf.d/10-hide.yaml:1: version: config file has no version (every config file starts with version: 1; an empty or cut-off file is never loaded)`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err, dir := load(t, tc.files, config.LoadOptions{})
			if err == nil || c != nil {
				t.Fatalf("Load = %v, %v; want the errors:\n%s", c != nil, err, strings.Join(tc.want, "\n"))
			}
			if got := rel(dir, err.Error()); got != strings.Join(tc.want, "\n") {
				t.Errorf("errors:\n got: %s\nwant: %s", got, strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestLoadLimits: a file past a limit is a config error naming the file,
// the line and the limit, and nothing of the file is read further. The
// cases that would take gigabytes or minutes without the limits (alias
// bombs, a 50 MB file, a schema 2,000 levels deep) run against the built
// binary under a memory cap in policy_test (TestCheckLimitsUnderMemoryCap).
func TestLoadLimits(t *testing.T) {
	t.Parallel()
	// Files of 64-byte lines: one of exactly the limit, and one a line
	// longer, whose byte past the limit is the first of line
	// MaxFileSize/64 + 1.
	first := "version: 1 #" + strings.Repeat("x", 51) + "\n"
	line := "# " + strings.Repeat("x", 61) + "\n"
	atLimit := first + strings.Repeat(line, config.MaxFileSize/64-1)
	big := atLimit + line
	cases := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"file over the size limit", map[string]string{"main.yaml": big},
			fmt.Sprintf(`main.yaml:%d: config file is larger than the limit of 2097152 bytes (2 MiB) for one file; this line goes past it (split the config into conf.d/*.yaml files)`, config.MaxFileSize/64+1)},
		{"aliases past the cap", map[string]string{"main.yaml": aliases(999, 101)},
			`main.yaml:9: YAML aliases expand to more than 100000 nodes (the limit for one file; this alias *a goes past it)`},
		{"an alias inside what it names", map[string]string{"main.yaml": "version: 1\npolicy:\n  exemptArgs: &x [a, *x]\n"},
			`main.yaml:3: YAML alias *x refers to a node that contains it`},
		{"nesting past the limit", map[string]string{"main.yaml": "version: 1\npolicy:\n  exemptArgs: " + nested(99) + "\n"},
			`main.yaml:3: mappings and lists nest deeper than 100 levels (the limit for one file, aliases expanded)`},
		{"nesting past the limit through aliases", map[string]string{
			"main.yaml": "version: 1\npolicy:\n  exemptArgs:\n    - &deep " + nested(60) + "\n    - " + strings.Repeat("[", 40) + "*deep" + strings.Repeat("]", 40) + "\n"},
			`main.yaml:4: mappings and lists nest deeper than 100 levels (the limit for one file, aliases expanded)`},
		{"schema past the depth limit", map[string]string{"main.yaml": rule(notSchema(65))},
			`main.yaml:6: pool.argumentRules[0].schema: schema nests deeper than 64 levels of mappings and lists (the limit for one rule's schema, aliases expanded)`},
		{"schema 2,000 levels deep", map[string]string{"main.yaml": rule(notSchema(2000))},
			`main.yaml:6: mappings and lists nest deeper than 100 levels (the limit for one file, aliases expanded)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err, dir := load(t, tc.files, config.LoadOptions{})
			if err == nil || c != nil {
				t.Fatalf("Load succeeded; want %s", tc.want)
			}
			if got := rel(dir, err.Error()); got != tc.want {
				t.Errorf("errors:\n got: %s\nwant: %s", got, tc.want)
			}
		})
	}
	// Right at each limit, the file loads.
	if len(atLimit) != config.MaxFileSize {
		t.Fatalf("the file at the limit is %d bytes", len(atLimit))
	}
	for name, cfg := range map[string]string{
		"a file of exactly the size limit": atLimit,
		"aliases adding exactly the cap":   aliases(999, 100),
		"a schema of exactly the limit":    rule(notSchema(64)),
		// Lists in exemptArgs are an error, but not a limit's.
		"nesting of exactly the limit": "version: 1\npolicy:\n  exemptArgs: " + nested(98) + "\n",
	} {
		_, err, _ := load(t, map[string]string{"main.yaml": cfg}, config.LoadOptions{})
		if err != nil && (strings.Contains(err.Error(), "limit") || !strings.HasPrefix(name, "nesting")) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestCatalogAndOverrideSizeLimits: the other files a load reads are
// capped too, a tool catalog at 32 MiB and an override at 2 MiB.
func TestCatalogAndOverrideSizeLimits(t *testing.T) {
	t.Parallel()
	pad := strings.Repeat("x", 62) + "\n" // 63 bytes a line
	bigCatalog := `{"servers": {}}` + "\n" + strings.Repeat(pad, config.MaxCatalogSize/len(pad)+1)
	bigOverride := "package mcpx.overrides\n" + strings.Repeat("#"+pad, config.MaxFileSize/64+1)
	_, err, dir := load(t, map[string]string{
		"main.yaml":    "version: 1\npolicy:\n  overrides: [ov/big.rego]\n",
		"ov/big.rego":  bigOverride,
		"catalog.json": bigCatalog,
	}, config.LoadOptions{Catalog: "catalog.json"})
	if err == nil {
		t.Fatal("Load succeeded")
	}
	got := rel(dir, err.Error())
	for _, want := range []string{
		fmt.Sprintf(`catalog.json:%d: catalog is larger than the limit of 33554432 bytes (32 MiB); this line goes past it`, 1+(config.MaxCatalogSize-16)/len(pad)+1),
		fmt.Sprintf(`main.yaml:3: policy.overrides[0]: override ov/big.rego is larger than the limit of 2097152 bytes (2 MiB) for one file (line %d goes past it)`, 1+(config.MaxFileSize-23)/64+1),
	} {
		if !strings.Contains(got, want) {
			t.Errorf("errors lack %s:\n%s", want, got)
		}
	}
}
