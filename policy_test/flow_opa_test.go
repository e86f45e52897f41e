package policy_test

import (
	"os"
	"path/filepath"
	"testing"
)

// flowLayer is a config layer over examples/mcpx-policy.yaml with labels
// and flow rules on fs: reading a file is untrusted input (and, on fs,
// private data); writing one sends data out. The examples' read call
// comes first in the corpus, so the writes after it are judged with
// untrusted-input and private-data touched: the pool's rule asks, fs's
// denies. No tool is both remembered and judged, so the input the gateway
// gives a stock OPA after the engine decided a call is the one the engine
// decided it with.
func flowLayer(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "flows.yaml")
	body := `version: 1
pool:
  labels:
    - {label: untrusted-input, tools: [read_text_file]}
    - {label: egress, tools: [write_file, edit_file]}
  flows:
    - {id: ask-after-read, after: [untrusted-input], calls: [egress], then: ask}
servers:
  fs:
    labels:
      - {label: private-data, tools: [read_text_file]}
    flows:
      - {id: fs-no-exfiltration, after: [private-data, untrusted-input], calls: [egress], then: deny}
`
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
