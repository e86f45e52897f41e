package main

import (
	"flag"
	"fmt"
)

// outputFormat is the --format flag of the commands that print for a
// person or a program — eval, diff, replay, pins, writes and approvals:
// text (the default) or json.
type outputFormat struct{ v string }

// formatFlag registers --format on fs.
func formatFlag(fs *flag.FlagSet) *outputFormat {
	f := &outputFormat{}
	fs.StringVar(&f.v, "format", "text", "output format: text or json")
	return f
}

// check is nil for text and json, else the usage error every command
// gives for another value.
func (f *outputFormat) check() error {
	if f.v == "text" || f.v == "json" {
		return nil
	}
	return fmt.Errorf("unknown --format %q (want text or json)", f.v)
}

// json reports whether --format json was given.
func (f *outputFormat) json() bool { return f.v == "json" }
