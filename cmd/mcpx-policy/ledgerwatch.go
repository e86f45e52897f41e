package main

import (
	"context"
	"log/slog"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
)

// ledgerCheckEvery is how often serve and the proxy check that the
// unknown-outcome ledger reads (one query of a PostgreSQL ledger, one
// read of the file), to log an outage and its end.
const ledgerCheckEvery = 2 * time.Second

// watchLedger checks the engine's unknown-outcome ledger every interval
// until ctx ends and logs each change once: when it stops reading (an
// error: every write is denied with LedgerUnreadable until it reads
// again; a PostgreSQL ledger whose database is down or unreachable) and
// when it reads again (with how long it did not). A ledger that does not
// read at the first check is logged as an outage too. It runs in its own
// goroutine.
func watchLedger(ctx context.Context, eng *mcpxpolicy.Engine, logger *slog.Logger, interval time.Duration) {
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		var down time.Time // when the outage began; zero while the ledger reads
		for {
			err := eng.Ready()
			switch {
			case err != nil && down.IsZero():
				down = time.Now()
				logger.Error("unknown-outcome ledger unreadable: every write is denied (LedgerUnreadable) until it reads again", "err", err)
			case err == nil && !down.IsZero():
				logger.Info("unknown-outcome ledger readable again: writes are decided as usual", "unreadable_for", time.Since(down).Round(time.Second).String())
				down = time.Time{}
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}
