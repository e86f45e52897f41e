package main

import (
	"flag"
	"fmt"
	"io"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
)

const bundleUsage = `usage: mcpx-policy bundle --config F [--config F…] (-o bundle.tar.gz | --dir D)

Writes the whole policy for a config — the static Rego, one generated
package per argument-rule schema, operator overrides and the compiled data
— as a standard OPA bundle (roots ["mcpx"], rego_version 1).

  mcpx-policy bundle --config mcpx-policy.yaml --dir build/policy
  opa test build/policy my-overrides/
  mcpx-policy bundle --config mcpx-policy.yaml -o bundle.tar.gz
  opa run --server --bundle bundle.tar.gz
`

func runBundle(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpx-policy bundle", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var configs stringList
	fs.Var(&configs, "config", "config file (repeatable, layered in order)")
	out := fs.String("o", "", "write a gzipped tarball here")
	dir := fs.String("dir", "", "write the bundle's files into this folder")
	if err := fs.Parse(args); err != nil {
		return usageError(stdout, stderr, bundleUsage, err)
	}
	if len(configs) == 0 || (*out == "") == (*dir == "") || fs.NArg() > 0 {
		return usageError(stdout, stderr, bundleUsage, fmt.Errorf("bundle needs --config and exactly one of -o or --dir"))
	}
	opts := mcpxpolicy.Options{ConfigPaths: configs}
	var err error
	if *dir != "" {
		err = mcpxpolicy.WriteBundleDir(opts, *dir)
	} else {
		err = mcpxpolicy.WriteBundleArchive(opts, *out)
	}
	if err != nil {
		return fail(stderr, err, "")
	}
	return 0
}
