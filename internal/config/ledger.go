package config

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/mcpx/mcpx-policy/internal/trust"
	"gopkg.in/yaml.v3"
)

// The ledger stores a config can name (ledger.store).
const (
	// StoreFile is ledger.json in the state dir: one machine. The default.
	StoreFile = "file"
	// StorePostgres is a PostgreSQL database a fleet of gateways shares.
	StorePostgres = "postgres"
)

// maxDSNFile caps what ledger.dsnFile reads: a connection string is short.
const maxDSNFile = 64 << 10

// LedgerConfig is the config's ledger section: where the unknown-outcome
// ledger lives (docs/ledger.md#a-ledger-a-fleet-shares). It is not part of
// the policy: the Revision does not cover it, and a bundle does not carry
// it.
type LedgerConfig struct {
	// Store is StoreFile or StorePostgres.
	Store string
	// DSN is the PostgreSQL connection string, read from ledger.dsn, from
	// the variable ledger.dsnEnv names, or from the file ledger.dsnFile
	// names. It may hold a password: never print it.
	DSN string
	// Source says where the DSN came from, for messages: "env
	// $NAME (file:line)", "file PATH (file:line)" or "file:line".
	Source string
}

// ledgerDef is a ledger section as one layer wrote it. The section is
// replaced whole by a later layer (layer.ledger declares any change a
// loosening), so each of its fields is part of it.
type ledgerDef struct {
	store   string `dir:"part"`
	dsn     string `dir:"part"`
	dsnEnv  string `dir:"part"`
	dsnFile string `dir:"part"`
	at      origin `dir:"meta"`
}

var ledgerKeys = []string{"store", "dsn", "dsnEnv", "dsnFile"}

// ledger reads the ledger section of one file.
func (p *fileParser) ledger(n *yaml.Node, l *layer) {
	d := &ledgerDef{at: p.at(deref(n), "ledger")}
	ok := true
	for _, e := range p.mapping(n, "ledger", "a mapping with keys "+strings.Join(ledgerKeys, ", ")) {
		path := join("ledger", e.key)
		v := deref(e.value)
		var s string
		switch e.key {
		case "store", "dsn", "dsnEnv", "dsnFile":
			if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" || v.Value == "" {
				p.errAt(v, path, "want a non-empty string, got %s", kindName(v))
				ok = false
				continue
			}
			s = v.Value
		default:
			p.unknownKey(e, "ledger", ledgerKeys)
			ok = false
			continue
		}
		switch e.key {
		case "store":
			if s != StoreFile && s != StorePostgres {
				p.errAt(v, path, "unknown ledger store %q (want %s or %s)", s, StoreFile, StorePostgres)
				ok = false
			}
			d.store = s
		case "dsn":
			d.dsn = s
		case "dsnEnv":
			d.dsnEnv = s
		case "dsnFile":
			if !filepath.IsAbs(s) {
				s = filepath.Join(filepath.Dir(p.file), s)
			}
			d.dsnFile = s
		}
	}
	if !ok {
		return
	}
	if d.store == "" {
		d.store = StoreFile
	}
	n2 := 0
	for _, s := range []string{d.dsn, d.dsnEnv, d.dsnFile} {
		if s != "" {
			n2++
		}
	}
	switch {
	case d.store == StoreFile && n2 > 0:
		p.errAt(deref(n), "ledger", "dsn, dsnEnv and dsnFile apply to store: %s only (the file store lives in the state dir)", StorePostgres)
	case d.store == StorePostgres && n2 != 1:
		p.errAt(deref(n), "ledger", "store: %s needs exactly one of dsn, dsnEnv (a variable holding the connection string) or dsnFile (a file holding it); found %d", StorePostgres, n2)
	default:
		l.ledger = d
	}
}

// defaultLedger is the ledger in force when no layer has a ledger
// section: the state dir's file.
var defaultLedger = &ledgerDef{store: StoreFile, at: origin{file: "default"}}

func (d *ledgerDef) origin() origin { return d.at }

func (d *ledgerDef) initial() replaced { return defaultLedger }

// target names where a postgres section's connection string comes from,
// never the string itself (it may hold a password).
func (d *ledgerDef) target() string {
	switch {
	case d.dsnEnv != "":
		return "the connection string in $" + d.dsnEnv
	case d.dsnFile != "":
		return "the connection string in file " + d.dsnFile
	case d.dsn != "":
		return "the dsn written at " + d.at.String()
	}
	return "the state dir's ledger.json"
}

// replaces says how d, a later layer's ledger section, differs from the
// one in force before it: another store, or the same store at another
// target. Either way writes are checked against another ledger, and the
// unknown outcomes recorded in the one before stop blocking them.
func (d *ledgerDef) replaces(before replaced) string {
	b := before.(*ledgerDef)
	if d.store != b.store {
		if b == defaultLedger {
			return fmt.Sprintf("ledger store %s replaces the default store %s (the state dir's ledger.json): writes are checked against another ledger", d.store, b.store)
		}
		return fmt.Sprintf("ledger store %s replaces store %s set at %s: writes are checked against another ledger", d.store, b.store, b.at)
	}
	if d.dsn == b.dsn && d.dsnEnv == b.dsnEnv && d.dsnFile == b.dsnFile {
		return ""
	}
	return fmt.Sprintf("ledger store %s at %s replaces the one at %s set at %s: writes are checked against another ledger", d.store, d.target(), b.target(), b.at)
}

// resolveLedger reads the ledger section in force after every layer (a
// later layer replaces it whole; merge warns when one changes it) and its
// DSN from the environment or the file it names.
func resolveLedger(out *Compiled, env []string, c *collector) {
	cur := out.sum.ledger
	out.Ledger = LedgerConfig{Store: StoreFile}
	if cur == nil || cur.store == StoreFile {
		return
	}
	lc := LedgerConfig{Store: cur.store, Source: cur.at.String()}
	switch {
	case cur.dsn != "":
		lc.DSN = cur.dsn
	case cur.dsnEnv != "":
		lc.Source = fmt.Sprintf("env $%s (%s)", cur.dsnEnv, cur.at)
		for _, kv := range env {
			if k, v, ok := strings.Cut(kv, "="); ok && k == cur.dsnEnv {
				lc.DSN = strings.TrimSpace(v)
			}
		}
		if lc.DSN == "" {
			c.add(cur.at.file, cur.at.line, "ledger.dsnEnv", "$%s is not set or empty: it must hold the ledger's PostgreSQL connection string", cur.dsnEnv)
			return
		}
	default:
		lc.Source = fmt.Sprintf("file %s (%s)", cur.dsnFile, cur.at)
		f, err := openTrusted(cur.dsnFile, trust.Secret)
		if err == nil {
			if exposed := trust.Exposed(f); exposed != "" {
				out.Warnings = append(out.Warnings, Warning{File: cur.at.file, Line: cur.at.line, Path: "ledger.dsnFile", Msg: exposed})
			}
		}
		if err != nil {
			c.add(cur.at.file, cur.at.line, "ledger.dsnFile", "cannot read the DSN file: %v", err)
			return
		}
		b, err := io.ReadAll(io.LimitReader(f, maxDSNFile+1))
		f.Close()
		switch {
		case err != nil:
			c.add(cur.at.file, cur.at.line, "ledger.dsnFile", "cannot read the DSN file %s: %v", cur.dsnFile, unwrapPathError(err))
			return
		case len(b) > maxDSNFile:
			c.add(cur.at.file, cur.at.line, "ledger.dsnFile", "the DSN file %s is larger than %d KiB", cur.dsnFile, maxDSNFile>>10)
			return
		}
		lc.DSN = strings.TrimSpace(string(b))
		if lc.DSN == "" {
			c.add(cur.at.file, cur.at.line, "ledger.dsnFile", "the DSN file %s is empty", cur.dsnFile)
			return
		}
	}
	out.Ledger = lc
}
