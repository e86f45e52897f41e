package policy_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// budgetLayer is a config layer over examples/mcpx-policy.yaml with two
// budgets on fs — writes to write_file (spent by budgetLedger's records)
// and destructive writes of any tool per principal (not spent) — and a
// loop breaker on write_file (spent for the call budgetLedger counted).
func budgetLayer(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "budgets.yaml")
	body := `version: 1
servers:
  fs:
    budgets:
      - {id: fs-notes, tools: [write_file], max: 2, window: 1h}
      - {id: fs-destructive, writes: destructive, max: 50, window: 10m, per: principal}
    loopBreakers:
      - {id: fs-loops, tools: [write_file], max: 2, window: 1h}
`
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// budgetLedger is a ledger whose store counted two writes to fs.write_file
// a minute ago, both the call of examples/calls/2-write-asks.json.
func budgetLedger(t *testing.T) string {
	t.Helper()
	at := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339Nano)
	recs := make([]map[string]any, 2)
	for i := range recs {
		recs[i] = map[string]any{"id": fmt.Sprintf("d%d", i), "server": "fs", "tool": "write_file", "destructive": true, "time": at,
			"call": "cbc4fa4518d3748546704cdbab18cd9fc03404397e7a50ec48b6877dc131f19b"}
	}
	b, err := json.Marshal(map[string]any{"version": 1, "entries": []any{}, "dispatched": recs})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ledger-budgets.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
