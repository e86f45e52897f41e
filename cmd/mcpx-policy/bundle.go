package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/opabundle"
)

const bundleUsage = `usage: mcpx-policy bundle --config F [--config F…] [--set PATH=VALUE…] (-o bundle.tar.gz | --dir D)
                          [--sign --signing-key K [--signing-alg RS256] [--claims-file F] [--signing-key-id ID]]

Writes the whole policy for a config — the static Rego, one generated
package per argument-rule schema, operator overrides and the compiled data
— as a standard OPA bundle (roots ["mcpx"], rego_version 1).

  mcpx-policy bundle --config mcpx-policy.yaml --dir build/policy
  opa test build/policy my-overrides/
  mcpx-policy bundle --config mcpx-policy.yaml -o bundle.tar.gz
  opa run --server --bundle bundle.tar.gz

With --sign the bundle carries .signatures.json, signed as "opa build
--signing-key" signs (the key is a PEM private key or HMAC secret, or a
file holding it; --signing-alg defaults to RS256); stock OPA verifies it:

  mcpx-policy bundle --config mcpx-policy.yaml -o bundle.tar.gz --sign --signing-key private.pem
  opa run --server --bundle bundle.tar.gz --verification-key public.pem

It says on stderr what it wrote: the file or folder, the bundle's files
and the revision (the same for the same config wherever it is loaded
from).

Exit status: 0 written, 1 error (usage, a config that does not load, a
signing key or an output that cannot be used).
`

func runBundle(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpx-policy bundle", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var configs stringList
	fs.Var(&configs, "config", "config file (repeatable, layered in order)")
	set := addSetFlag(fs)
	out := fs.String("o", "", "write a gzipped tarball here")
	dir := fs.String("dir", "", "write the bundle's files into this folder")
	sign := fs.Bool("sign", false, "sign the bundle (.signatures.json)")
	key := fs.String("signing-key", "", "PEM private key or HMAC secret, or a file holding it")
	alg := fs.String("signing-alg", "RS256", "JWT signing algorithm")
	claims := fs.String("claims-file", "", "JSON file of extra claims for the signature")
	keyID := fs.String("signing-key-id", "", "key id (kid) put in the signature")
	if err := fs.Parse(args); err != nil {
		return usageError(stdout, stderr, bundleUsage, err)
	}
	if len(configs) == 0 || (*out == "") == (*dir == "") || fs.NArg() > 0 {
		return usageError(stdout, stderr, bundleUsage, fmt.Errorf("bundle needs --config and exactly one of -o or --dir"))
	}
	if *sign && *key == "" {
		return usageError(stdout, stderr, bundleUsage, fmt.Errorf("--sign needs --signing-key"))
	}
	if !*sign && (*key != "" || *claims != "" || *keyID != "") {
		return usageError(stdout, stderr, bundleUsage, fmt.Errorf("--signing-key, --claims-file and --signing-key-id need --sign"))
	}
	files, err := mcpxpolicy.BundleFiles(mcpxpolicy.Options{ConfigPaths: configs, Set: set.options()})
	if err == nil && *sign {
		err = opabundle.Sign(files, opabundle.Signing{Key: *key, Algorithm: *alg, ClaimsFile: *claims, KeyID: *keyID})
	}
	where := *out
	if err == nil && *dir != "" {
		err = opabundle.WriteDir(files, *dir)
		where = strings.TrimSuffix(*dir, "/") + "/"
	} else if err == nil {
		err = opabundle.WriteArchive(files, *out)
	}
	if err != nil {
		return fail(stderr, err, "")
	}
	fmt.Fprintf(stderr, "wrote %s\n", bundleSummary(where, files, *sign))
	return 0
}

// bundleSummary says what bundle wrote: where, how many files of which
// kind, and the revision from the manifest.
func bundleSummary(where string, files map[string][]byte, signed bool) string {
	rego := 0
	for name := range files {
		if strings.HasSuffix(name, ".rego") {
			rego++
		}
	}
	var manifest struct {
		Revision string `json:"revision"`
	}
	_ = json.Unmarshal(files[".manifest"], &manifest)
	s := fmt.Sprintf("%s: %d files (%d Rego modules, data.json, .manifest", where, len(files), rego)
	if signed {
		s += ", .signatures.json"
	}
	return s + "), revision " + manifest.Revision
}
