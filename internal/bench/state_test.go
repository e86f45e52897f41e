package bench

import (
	"os"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/ledger"
)

// stateEnv chooses the state dir a benchmark's engine starts with: unset,
// none (a gateway that never wrote); "written", the ledger's three files
// as one settled write leaves them (a gateway that wrote once), which a
// decision reads every time.
const stateEnv = "MCPX_BENCH_STATE"

// prepareState leaves the state dir as stateEnv says.
func prepareState(b testing.TB, stateDir string) {
	b.Helper()
	if os.Getenv(stateEnv) != "written" {
		return
	}
	l, err := ledger.Open(stateDir)
	if err != nil {
		b.Fatal(err)
	}
	d, err := l.Begin("bench", "write", map[string]any{"n": 1}, "bench")
	if err != nil {
		b.Fatal(err)
	}
	d.Sent()
	if err := d.Settle(); err != nil {
		b.Fatal(err)
	}
}
