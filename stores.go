package mcpxpolicy

import (
	"fmt"

	"github.com/mcpx/mcpx-policy/internal/approval"
	"github.com/mcpx/mcpx-policy/internal/config"
	"github.com/mcpx/mcpx-policy/internal/ledger"
	"github.com/mcpx/mcpx-policy/internal/ledger/pgledger"
	"github.com/mcpx/mcpx-policy/internal/pgstate"
	"github.com/mcpx/mcpx-policy/internal/pins"
)

// stores is where the state of one Engine or handle lives: the
// unknown-outcome ledger, the approval requests and the pins, all in the
// state dir, or all in the PostgreSQL database the config's ledger
// section names (docs/ledger.md#approvals-and-pins-a-fleet-shares) — one
// place, so that what one gateway of a fleet records every other sees.
type stores struct {
	ledger ledger.Store
	dir    string       // the state dir (the file stores)
	db     *pgstate.DB  // the database (nil for the file stores)
	close  func() error // releases the database's pool
}

// openState opens the stores opts name: the config's ledger section when
// opts.ConfigPaths are given (the config must load), else the state dir
// opts.StateDir. It touches nothing until used.
func openState(opts Options) (*stores, error) {
	lc := config.LedgerConfig{Store: config.StoreFile}
	if len(opts.ConfigPaths) > 0 {
		c, err := compileConfig(opts)
		if err != nil {
			return nil, err
		}
		lc = c.Ledger
	}
	dir := opts.StateDir
	if lc.Store != config.StorePostgres {
		var err error
		if dir, err = stateDir(dir); err != nil {
			return nil, err
		}
	}
	return openStores(lc, dir)
}

// openStores opens the stores the config's ledger section names: the
// files in stateDir by default, or the PostgreSQL database a fleet shares,
// whose one pool the ledger, the approvals and the pins use.
func openStores(lc config.LedgerConfig, stateDir string) (*stores, error) {
	if lc.Store == config.StorePostgres {
		s, err := pgledger.Open(lc.DSN, lc.Source, pgledger.Options{})
		if err != nil {
			return nil, fmt.Errorf("mcpxpolicy: %w", err)
		}
		return &stores{ledger: s, db: pgstate.New(s.Pool(), s.Where(), s.Timeout()), close: s.Close}, nil
	}
	l, err := ledger.Open(stateDir)
	if err != nil {
		return nil, fmt.Errorf("mcpxpolicy: %w", err)
	}
	return &stores{ledger: l, dir: stateDir, close: l.Close}, nil
}

// approvals is the approval store, with opts' TTL and caps.
func (s *stores) approvals(opts Options) (*Approvals, error) {
	o := approvalOptions(opts)
	if s.db != nil {
		return &Approvals{s: s.db.Approvals(o...)}, nil
	}
	st, err := approval.Open(s.dir, o...)
	if err != nil {
		return nil, fmt.Errorf("mcpxpolicy: %w", err)
	}
	return &Approvals{s: st}, nil
}

// pins is the pin store.
func (s *stores) pins() (*Pins, error) {
	if s.db != nil {
		return &Pins{s: s.db.Pins(nil)}, nil
	}
	st, err := pins.Open(s.dir)
	if err != nil {
		return nil, fmt.Errorf("mcpxpolicy: %w", err)
	}
	return &Pins{s: st}, nil
}
