package config_test

import (
	"errors"
	"regexp"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/config"
	"github.com/mcpx/mcpx-policy/internal/config/schemarego"
)

// TestSchemaErrorLine: an error inside a rule's schema is reported at the
// line of the keyword at fault — a bad pattern at its `pattern:` line, in
// block or flow style, through an alias, inside a list — not at the
// rule's `schema:` line; an error that names no place stays there.
func TestSchemaErrorLine(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, yaml string
		want       string // the error's "file:line: path: " prefix
	}{
		{
			name: "pattern in a flow mapping",
			yaml: `version: 1
servers:
  fs:
    argumentRules:
      - id: r1
        tools: ["x"]
        schema:
          type: object
          properties:
            n: {type: string, pattern: "^(?!main$)"}
`,
			want: `main.yaml:10: servers.fs.argumentRules[0].schema: `,
		},
		{
			name: "pattern in a block mapping",
			yaml: `version: 1
pool:
  argumentRules:
    - id: r1
      tools: ["x"]
      schema:
        properties:
          branch:
            type: string
            pattern: "(?<=a)b"
`,
			want: `main.yaml:10: pool.argumentRules[0].schema: `,
		},
		{
			name: "pattern of one argument",
			yaml: `version: 1
pool:
  argumentRules:
    - id: r1
      tools: ["x"]
      argument: path
      schema:
        type: string
        pattern: "^(?!/etc)"
`,
			want: `main.yaml:9: pool.argumentRules[0].schema: `,
		},
		{
			name: "pattern inside a list",
			yaml: `version: 1
pool:
  argumentRules:
    - id: r1
      tools: ["x"]
      schema:
        anyOf:
          - {type: number}
          - type: string
            pattern: "(?!x)"
`,
			want: `main.yaml:10: pool.argumentRules[0].schema: `,
		},
		{
			// the compiler names the keyword, not the bad key under it
			name: "patternProperties key",
			yaml: `version: 1
pool:
  argumentRules:
    - id: r1
      tools: ["x"]
      schema:
        patternProperties:
          "(?!x)": {type: string}
`,
			want: `main.yaml:7: pool.argumentRules[0].schema: `,
		},
		{
			name: "a schema shared through an alias is placed in the anchor",
			yaml: `version: 1
pool:
  argumentRules:
    - id: r1
      tools: ["x"]
      schema: &s
        properties:
          a: {pattern: "(?!x)"}
    - id: r2
      tools: ["y"]
      schema: *s
`,
			want: `main.yaml:8: pool.argumentRules[0].schema: `,
		},
		{
			name: "another draft, at $schema:",
			yaml: `version: 1
pool:
  argumentRules:
    - id: r1
      tools: ["x"]
      schema:
        $schema: "http://json-schema.org/draft-07/schema#"
`,
			want: `main.yaml:7: pool.argumentRules[0].schema: `,
		},
		{
			// a remote reference is refused without a place in the schema
			name: "no place: at schema:",
			yaml: `version: 1
pool:
  argumentRules:
    - id: r1
      tools: ["x"]
      schema:
        properties:
          a: {$ref: "https://example.com/a.json"}
`,
			want: `main.yaml:6: pool.argumentRules[0].schema: `,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err, dir := load(t, map[string]string{"main.yaml": tc.yaml}, config.LoadOptions{SchemaCompiler: schemarego.Compile})
			var ces config.ConfigErrors
			if !errors.As(err, &ces) || len(ces) == 0 {
				t.Fatalf("err = %v, want config errors", err)
			}
			got := rel(dir, ces[0].Error())
			if !regexp.MustCompile(`^` + regexp.QuoteMeta(tc.want) + `rule "r1": schemarego: `).MatchString(got) {
				t.Errorf("error\n%s\nwant it to start with %s", got, tc.want)
			}
		})
	}
}
