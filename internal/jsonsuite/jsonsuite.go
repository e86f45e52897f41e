// Package jsonsuite reads the official JSON-Schema-Test-Suite (draft
// 2020-12) for tests, in place from the workspace's shared folder
// (../shared beside the project): the suite is never copied into the
// project.
package jsonsuite

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Group is one schema of a suite file with its cases.
type Group struct {
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Tests       []struct {
		Description string          `json:"description"`
		Data        json.RawMessage `json:"data"`
		Valid       bool            `json:"valid"`
	} `json:"tests"`
}

// File is one suite file: its base name, its bytes and its groups.
type File struct {
	Name   string
	Raw    []byte
	Groups []Group
}

// Dir is the suite's draft 2020-12 folder.
func Dir() string {
	_, self, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(self), "..", "..") // the module's root
	return filepath.Join(root, "..", "shared", "testdata", "json-schema-test-suite", "draft2020-12")
}

// Files reads every file of the suite, in name order; tb fails when there
// is none or one cannot be read.
func Files(tb testing.TB) []File {
	tb.Helper()
	names, err := filepath.Glob(filepath.Join(Dir(), "*.json"))
	if err != nil || len(names) == 0 {
		tb.Fatalf("no suite files under %s (../shared/testdata/json-schema-test-suite must be beside the project): %v", Dir(), err)
	}
	files := make([]File, len(names))
	for i, name := range names {
		raw, err := os.ReadFile(name)
		if err != nil {
			tb.Fatal(err)
		}
		files[i] = File{Name: filepath.Base(name), Raw: raw}
		if err := json.Unmarshal(raw, &files[i].Groups); err != nil {
			tb.Fatalf("%s: %v", files[i].Name, err)
		}
	}
	return files
}
