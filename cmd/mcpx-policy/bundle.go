package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/internal/trust"
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
--signing-key" signs (--signing-key names a file holding a PEM private key
or an HMAC secret — one only you may read — or is a PEM key itself; a key
file that cannot be read is an error; --signing-alg defaults to RS256);
stock OPA verifies it:

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
	key := fs.String("signing-key", "", "file holding a PEM private key or HMAC secret (or a PEM key itself)")
	alg := fs.String("signing-alg", "RS256", "JWT signing algorithm")
	claims := fs.String("claims-file", "", "JSON file of extra claims for the signature")
	keyID := fs.String("signing-key-id", "", "key id (kid) put in the signature")
	var err error
	if err = fs.Parse(args); err != nil {
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
	var sig opabundle.Signing
	if *sign {
		var hint, exposed string
		if sig, exposed, hint, err = signing(*key, *alg, *claims, *keyID); err != nil {
			return fail(stderr, err, hint)
		}
		if exposed != "" {
			fmt.Fprintf(stderr, "mcpx-policy: warning: signing key %s\n", exposed)
		}
	}
	files, err := mcpxpolicy.BundleFiles(mcpxpolicy.Options{ConfigPaths: configs, Env: os.Environ(), Set: set.options()})
	if err == nil && *sign {
		err = opabundle.Sign(files, sig)
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

// maxKeyFile caps a signing key or claims file: a PEM key is a few KiB.
const maxKeyFile = 1 << 20

// signing reads what --sign needs: the key — a PEM key given inline, else
// the file --signing-key names, an operator secret that must be readable
// and not empty (never the path itself as an HMAC secret, as opa build
// would take it) — and a claims file only its owner may write. exposed
// warns of a key file other users may read; an error comes with a hint.
func signing(key, alg, claims, keyID string) (s opabundle.Signing, exposed, hint string, err error) {
	s = opabundle.Signing{Algorithm: alg, ClaimsFile: claims, KeyID: keyID}
	hintOf := func(err error) string {
		var fe *trust.Error
		if errors.As(err, &fe) {
			return fe.Hint
		}
		return "--signing-key names a file holding the key (a PEM private key or an HMAC secret)"
	}
	if strings.HasPrefix(key, "-----BEGIN") {
		s.Key = key
	} else {
		var b []byte
		b, exposed, err = trust.ReadTrusted(key, trust.Secret, maxKeyFile)
		if err != nil {
			return s, "", hintOf(err), fmt.Errorf("signing key: %w", err)
		}
		if len(strings.TrimSpace(string(b))) == 0 {
			return s, "", "", fmt.Errorf("signing key %s is empty", key)
		}
		s.KeyData = b
	}
	if claims != "" {
		if _, _, err := trust.ReadTrusted(claims, trust.Config, maxKeyFile); err != nil {
			return s, "", hintOf(err), fmt.Errorf("claims file: %w", err)
		}
	}
	return s, exposed, "", nil
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
