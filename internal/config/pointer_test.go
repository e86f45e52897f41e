package config_test

import (
	"testing"

	"github.com/mcpx/mcpx-policy/internal/config"
)

// TestArgumentPointerReadings: a rule's argument compiles to its JSON
// Pointer and to the key paths the policy tries: a token of digits
// (without leading zeros) reads as an array index and as an object key.
func TestArgumentPointerReadings(t *testing.T) {
	t.Parallel()
	cases := []struct{ argument, pointer, paths string }{
		{"force", "/force", `[["force"]]`},
		{"/options/force", "/options/force", `[["options","force"]]`},
		{"/items/0/force", "/items/0/force", `[["items","0","force"],["items",0,"force"]]`},
		{"/items/10", "/items/10", `[["items","10"],["items",10]]`},
		{"/items/01", "/items/01", `[["items","01"]]`},
		{"/m/0/1", "/m/0/1", `[["m","0","1"],["m","0",1],["m",0,"1"],["m",0,1]]`},
		{"/a~1b/0", "/a~1b/0", `[["a/b","0"],["a/b",0]]`},
		{"0", "/0", `[["0"]]`},                  // a plain name is a key
		{"/0/1", "/0/1", `[["0","1"],["0",1]]`}, // so is the first token: the arguments are an object
	}
	for _, tc := range cases {
		cfg := "version: 1\npool:\n  argumentRules:\n    - id: r\n      tools: [t]\n      argument: \"" + tc.argument + "\"\n      schema: {const: false}\n"
		c, err, _ := load(t, map[string]string{"main.yaml": cfg}, config.LoadOptions{})
		if err != nil {
			t.Errorf("%s: %v", tc.argument, err)
			continue
		}
		r := get(t, configData(t, c), "rules", "r").(map[string]any)
		if r["pointer"] != tc.pointer || jsonOf(t, r["paths"]) != tc.paths {
			t.Errorf("%s: pointer %v paths %s; want %s %s", tc.argument, r["pointer"], jsonOf(t, r["paths"]), tc.pointer, tc.paths)
		}
	}
}

// TestArgumentPointerErrors: "-" names no argument, and a pointer's
// readings are bounded; both are errors at the argument's line.
func TestArgumentPointerErrors(t *testing.T) {
	t.Parallel()
	cases := []struct{ argument, want string }{
		{"/items/-", `main.yaml:6: pool.argumentRules[0].argument: bad JSON Pointer "/items/-": - names the element after an array's last, which no argument has (write an index such as 0)`},
		{"/a/-/b", `main.yaml:6: pool.argumentRules[0].argument: bad JSON Pointer "/a/-/b": - names the element after an array's last, which no argument has (write an index such as 0)`},
		{"/a/0/1/2/3/4", `main.yaml:6: pool.argumentRules[0].argument: JSON Pointer "/a/0/1/2/3/4" has 5 array indexes, more than the limit of 4`},
	}
	for _, tc := range cases {
		cfg := "version: 1\npool:\n  argumentRules:\n    - id: r\n      tools: [t]\n      argument: \"" + tc.argument + "\"\n      schema: {const: false}\n"
		_, err, dir := load(t, map[string]string{"main.yaml": cfg}, config.LoadOptions{})
		if err == nil {
			t.Errorf("%s loaded; want %s", tc.argument, tc.want)
			continue
		}
		if got := rel(dir, err.Error()); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.argument, got, tc.want)
		}
	}
	// Up to the limit, and "-" inside a key, load.
	for _, arg := range []string{"/a/0/1/2/3", "/0/1/2/3/4", "/a-b/-x"} {
		cfg := "version: 1\npool:\n  argumentRules:\n    - id: r\n      tools: [t]\n      argument: \"" + arg + "\"\n      schema: {const: false}\n"
		if _, err, _ := load(t, map[string]string{"main.yaml": cfg}, config.LoadOptions{}); err != nil {
			t.Errorf("%s: %v", arg, err)
		}
	}
}
