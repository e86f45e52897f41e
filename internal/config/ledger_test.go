package config_test

import (
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/config"
)

// TestLedgerSection: the ledger section selects the store; the DSN comes
// from the config, a variable or a file; every mistake is an error with
// file and line, and no message shows the DSN.
func TestLedgerSection(t *testing.T) {
	t.Parallel()
	const secret = "postgres://gate:s3cr3t-pw@db.internal:5432/mcpx"
	ok := []struct {
		name   string
		files  map[string]string
		env    []string
		store  string
		dsn    string
		source string
	}{
		{"absent: the file store", map[string]string{"main.yaml": "version: 1\n"}, nil, "file", "", ""},
		{"file store", map[string]string{"main.yaml": "version: 1\nledger: {store: file}\n"}, nil, "file", "", ""},
		{"dsn inline", map[string]string{"main.yaml": "version: 1\nledger:\n  store: postgres\n  dsn: host=/run/pg dbname=mcpx\n"}, nil,
			"postgres", "host=/run/pg dbname=mcpx", "main.yaml:3"},
		{"dsn from a variable", map[string]string{"main.yaml": "version: 1\nledger:\n  store: postgres\n  dsnEnv: LEDGER_DSN\n"},
			[]string{"LEDGER_DSN=" + secret}, "postgres", secret, "env $LEDGER_DSN (main.yaml:3)"},
		{"dsn from a file beside the config", map[string]string{"main.yaml": "version: 1\nledger:\n  store: postgres\n  dsnFile: secrets/dsn\n", "secrets/dsn": secret + "\n"},
			nil, "postgres", secret, "file secrets/dsn (main.yaml:3)"},
		{"conf.d replaces the section", map[string]string{"main.yaml": "version: 1\nledger: {store: file}\n",
			"conf.d/10-fleet.yaml": "version: 1\nledger: {store: postgres, dsn: \"dbname=mcpx\"}\n"}, nil, "postgres", "dbname=mcpx", "conf.d/10-fleet.yaml:2"},
	}
	for _, c := range ok {
		comp, err, dir := load(t, c.files, config.LoadOptions{Env: c.env})
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		got := comp.Ledger
		if got.Store != c.store || got.DSN != c.dsn || rel(dir, got.Source) != c.source {
			t.Errorf("%s: ledger %q %q %q; want %q %q %q", c.name, got.Store, got.DSN, rel(dir, got.Source), c.store, c.dsn, c.source)
		}
	}
	// The ledger is not policy: the revision does not change with it.
	a, err, _ := load(t, map[string]string{"main.yaml": "version: 1\n"}, config.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err, _ := load(t, map[string]string{"main.yaml": "version: 1\nledger: {store: postgres, dsn: \"dbname=x\"}\n"}, config.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Revision != b.Revision {
		t.Errorf("the ledger section changed the revision")
	}
	// Switching store in a later layer is said.
	w, err, dir := load(t, map[string]string{"main.yaml": "version: 1\nledger: {store: postgres, dsn: \"dbname=x\"}\n",
		"conf.d/a.yaml": "version: 1\nledger: {store: file}\n"}, config.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Warnings) != 1 || rel(dir, w.Warnings[0].String()) != "conf.d/a.yaml:2: ledger: ledger store file replaces store postgres set at main.yaml:2: writes are checked against another ledger" {
		t.Errorf("warnings %v", w.Warnings)
	}

	bad := []struct {
		name  string
		files map[string]string
		env   []string
		want  string
	}{
		{"unknown store", map[string]string{"main.yaml": "version: 1\nledger:\n  store: etcd\n"}, nil,
			`main.yaml:3: ledger.store: unknown ledger store "etcd" (want file or postgres)`},
		{"unknown key", map[string]string{"main.yaml": "version: 1\nledger:\n  store: postgres\n  dns: x\n"}, nil,
			`main.yaml:4: ledger.dns: unknown key "dns", did you mean "dsn"? (valid keys: dsn, dsnEnv, dsnFile, store)`},
		{"postgres without a dsn", map[string]string{"main.yaml": "version: 1\nledger:\n  store: postgres\n"}, nil,
			`main.yaml:3: ledger: store: postgres needs exactly one of dsn, dsnEnv (a variable holding the connection string) or dsnFile (a file holding it); found 0`},
		{"two dsn sources", map[string]string{"main.yaml": "version: 1\nledger: {store: postgres, dsn: x, dsnEnv: Y}\n"}, nil,
			`main.yaml:2: ledger: store: postgres needs exactly one of dsn, dsnEnv (a variable holding the connection string) or dsnFile (a file holding it); found 2`},
		{"dsn on the file store", map[string]string{"main.yaml": "version: 1\nledger: {dsn: x}\n"}, nil,
			`main.yaml:2: ledger: dsn, dsnEnv and dsnFile apply to store: postgres only (the file store lives in the state dir)`},
		{"variable not set", map[string]string{"main.yaml": "version: 1\nledger:\n  store: postgres\n  dsnEnv: LEDGER_DSN\n"}, []string{"OTHER=1"},
			`main.yaml:3: ledger.dsnEnv: $LEDGER_DSN is not set or empty: it must hold the ledger's PostgreSQL connection string`},
		{"file missing", map[string]string{"main.yaml": "version: 1\nledger:\n  store: postgres\n  dsnFile: nope\n"}, nil,
			`main.yaml:3: ledger.dsnFile: cannot read the DSN file: open nope: no such file or directory`},
		{"file empty", map[string]string{"main.yaml": "version: 1\nledger:\n  store: postgres\n  dsnFile: dsn\n", "dsn": "\n"}, nil,
			`main.yaml:3: ledger.dsnFile: the DSN file dsn is empty`},
		{"not a string", map[string]string{"main.yaml": "version: 1\nledger:\n  store: [postgres]\n"}, nil,
			`main.yaml:3: ledger.store: want a non-empty string, got a list`},
	}
	for _, c := range bad {
		_, err, dir := load(t, c.files, config.LoadOptions{Env: c.env})
		if err == nil {
			t.Errorf("%s: loaded", c.name)
			continue
		}
		if got := rel(dir, err.Error()); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
		if strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("%s: the error shows the DSN: %v", c.name, err)
		}
	}
}
