package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
)

const diffUsage = `usage: mcpx-policy diff [--catalog F] [--format text|json] OLD.yaml NEW.yaml
       mcpx-policy diff [--catalog F] [--format text|json] --old F [--old F…] --new F [--new F…]

Says what a config change does before it ships. With --catalog, for every
tool of the catalog it asks the old and the new policy whether the tool is
hidden, whether a call to it is a write, its write mode and
unknown-arguments mode, which keys are exempt from that check and which
argument rules apply (by id, with file and line), and prints what differs.
Without --catalog it compares each server's patterns and settings as
written (and those of the servers neither config names): give a catalog to
see what each tool gets (its labels too, for data-flow rules). Write
budgets and flow rules are compared by id. Policy-wide it compares
confirmDestructive and the override files. Each change is marked loosening (some call may now be
decided less strictly), tightening, or changed (a rule's schema edited, a
setting with no strictness order).

A config is its files in layer order with the conf.d/*.yaml beside its
first file layered after them, as --config layers them; --old and --new
add files after OLD.yaml and NEW.yaml, or name them all. The MCPX_POLICY_*
environment is not read: the diff compares the files.

  git show main:policy.yaml > /tmp/policy-main.yaml
  mcpx-policy diff --catalog tools.json /tmp/policy-main.yaml policy.yaml
  mcpx-policy diff --format json --old base.yaml --old prod.yaml --new base.yaml --new prod-next.yaml

Exit status: 0 no change, 1 error (usage, a config or the catalog that
does not load), 2 the configs differ (the text or the JSON says how).
`

func runDiff(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpx-policy diff", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var olds, news stringList
	fs.Var(&olds, "old", "a file of the old config (repeatable, layered in order)")
	fs.Var(&news, "new", "a file of the new config (repeatable, layered in order)")
	catalog := fs.String("catalog", "", "tool catalog file: compare every tool of it")
	format := formatFlag(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return usageError(stdout, stderr, diffUsage, err)
	}
	switch {
	case len(pos) == 2:
		olds = append(stringList{pos[0]}, olds...)
		news = append(stringList{pos[1]}, news...)
	case len(pos) != 0:
		return usageError(stdout, stderr, diffUsage, fmt.Errorf("diff takes OLD.yaml NEW.yaml, or --old and --new files (got %d arguments)", len(pos)))
	}
	switch {
	case len(olds) == 0 || len(news) == 0:
		return usageError(stdout, stderr, diffUsage, fmt.Errorf("diff needs an old and a new config"))
	case format.check() != nil:
		return usageError(stdout, stderr, diffUsage, format.check())
	}
	d, err := mcpxpolicy.DiffConfigs(context.Background(), mcpxpolicy.Options{ConfigPaths: olds}, mcpxpolicy.Options{ConfigPaths: news, Catalog: *catalog})
	if err != nil {
		return fail(stderr, err, "run 'mcpx-policy check --config …' on that config to see every problem")
	}
	if format.json() {
		fmt.Fprintf(stdout, "%s\n", d.JSON)
	} else {
		fmt.Fprint(stdout, d.Text)
	}
	if d.Loosening+d.Tightening+d.Other > 0 {
		return exitFound
	}
	return 0
}

// parseInterleaved parses flags that may come before, between or after
// the positional arguments, and returns the positional ones. Everything
// after "--" is positional.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// flag stops at "--" (dropping it) or at the first positional
		// argument: find out which
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// exitFound is the exit status of diff and replay when they find what
// they look for (configs that differ, decisions that change). Every
// command exits 1 on an error; 2 and up say what was found (eval: 2 deny,
// 3 ask).
const exitFound = 2
