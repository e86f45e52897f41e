package schemarego_test

import (
	"encoding/json"
	"os"
	"syscall"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/config/schemarego"
	"github.com/mcpx/mcpx-policy/internal/jsonsuite"
)

// compileCorpus is the schemas BenchmarkCompile compiles: the four-property
// rule, the golden cases, and every schema of the official suite that
// Compile accepts.
func compileCorpus(b *testing.B) (four any, corpus []any) {
	b.Helper()
	four = decodeJSON(b, fourPropertyRule)
	corpus = append(corpus, four)
	goldens := goldenFiles()
	if len(goldens) == 0 {
		b.Fatal("found no golden cases")
	}
	for _, f := range goldens {
		raw, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		var gc goldenCase
		if err := json.Unmarshal(raw, &gc); err != nil {
			b.Fatal(err)
		}
		corpus = append(corpus, decodeJSON(b, string(gc.Schema)))
	}
	for _, f := range jsonsuite.Files(b) {
		for _, g := range f.Groups {
			s := decodeJSON(b, string(g.Schema))
			if _, err := schemarego.Compile(s, "s_bench"); err == nil {
				corpus = append(corpus, s)
			}
		}
	}
	return four, corpus
}

// workloadRules are the ten rule shapes of the large reference workload
// (internal/bench), with one value of their varying numbers.
var workloadRules = []string{
	`{"properties": {"path": {"type": "string", "pattern": "^/(workspace|tmp)/", "maxLength": 4096}}}`,
	`{"type": "integer", "minimum": 0, "maximum": 4097}`,
	`{"enum": ["overwrite", "append", "create", "m2"]}`,
	`{"type": "array", "maxItems": 23, "uniqueItems": true, "items": {"type": "string", "maxLength": 32, "minLength": 1}}`,
	`{"const": false}`,
	`{"type": "string", "maxLength": 16400, "not": {"pattern": "BEGIN [A-Z]* ?PRIVATE KEY"}}`,
	`{"type": "number", "exclusiveMinimum": 0, "maximum": 100, "multipleOf": 0.01}`,
	`{"required": ["path"], "dependentRequired": {"content": ["path"]}, "minProperties": 1, "maxProperties": 22, "propertyNames": {"maxLength": 64}}`,
	`{"type": "object", "properties": {"depth": {"type": "integer", "minimum": 0, "maximum": 18}, "encoding": {"anyOf": [{"const": "utf-8"}, {"const": "base64"}, {"pattern": "^latin"}]}}, "if": {"properties": {"force": {"const": true}}, "required": ["force"]}, "then": {"required": ["depth"]}}`,
	`{"type": "array", "prefixItems": [{"type": "string", "pattern": "^[a-z]"}], "contains": {"type": "string", "minLength": 2}, "minContains": 1, "maxContains": 59, "oneOf": [{"maxItems": 30}, {"minItems": 31}]}`,
}

// BenchmarkCompile measures Compile alone: on the four-property rule, on
// the ten rule shapes of the large workload, and over the whole corpus
// (each op compiles every schema of the set once). cpu-ns/op is the
// process's CPU time (GC included) per op, which other load on the
// machine disturbs less than wall time.
func BenchmarkCompile(b *testing.B) {
	four, corpus := compileCorpus(b)
	var workload []any
	for _, s := range workloadRules {
		workload = append(workload, decodeJSON(b, s))
	}
	for _, set := range []struct {
		name    string
		schemas []any
	}{{"four-property", []any{four}}, {"workload", workload}, {"corpus", corpus}} {
		b.Run(set.name, func(b *testing.B) {
			b.ReportAllocs()
			start := cpuTime()
			for b.Loop() {
				for _, s := range set.schemas {
					if _, err := schemarego.Compile(s, "s_bench"); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(len(set.schemas)), "schemas")
		})
	}
}

// cpuTime is the process's user and system CPU time so far, in ns.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
