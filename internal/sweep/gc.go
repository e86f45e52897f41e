package sweep

import (
	"flag"
	"os"
	"runtime/debug"
)

// LessGC is for the TestMain of a package whose tests compile and
// evaluate large policies, where the collector at Go's default pace
// (GOGC=100) took a sixth to a third of the tests' CPU: it collects at a
// quarter of that pace (GOGC=400; a test process's heap is tens to a few
// hundred MiB, on a machine with gigabytes). It changes nothing when GOGC
// is set, and nothing in a benchmark run: make bench measures at the pace
// an operator's process runs. It sets the pace of this process only: the
// processes a test starts keep their own.
//
// Call it before m.Run; it parses the test flags.
func LessGC() {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	if !flag.Parsed() {
		flag.Parse()
	}
	if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" {
		return
	}
	debug.SetGCPercent(400)
}
