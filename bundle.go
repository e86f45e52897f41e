package mcpxpolicy

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	opabundle "github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/util"

	"github.com/mcpx/mcpx-policy/internal/engine"
)

// BundleFiles returns the whole policy for a config as the files of a
// standard OPA bundle: ".manifest" (revision, roots ["mcpx"], rego_version
// 1), "data.json" ({"mcpx": compiled data}), the static Rego under mcpx/
// and the generated and override Rego under their compiled names. An
// override the engine would refuse (docs/overrides.md, "What overrides may
// not do") is an error here too.
func BundleFiles(opts Options) (map[string][]byte, error) {
	compiled, err := compileConfig(opts)
	if err != nil {
		return nil, err
	}
	p := policyOf(compiled)
	if err := engine.CheckOverrides(p.Modules); err != nil {
		return nil, fmt.Errorf("mcpxpolicy: %w", err)
	}
	files := map[string][]byte{}
	for name, src := range p.Modules {
		files[name] = []byte(src)
	}
	data, err := json.MarshalIndent(map[string]any{"mcpx": p.Data}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("mcpxpolicy: bundle data: %w", err)
	}
	files["data.json"] = append(data, '\n')
	manifest, err := json.MarshalIndent(map[string]any{
		"revision":     p.Revision,
		"roots":        []string{"mcpx"},
		"rego_version": 1,
		"metadata":     map[string]any{"generator": "mcpx-policy"},
	}, "", "  ")
	if err != nil {
		return nil, err
	}
	files[".manifest"] = append(manifest, '\n')
	return files, nil
}

// Signing says how to sign a bundle, as `opa build --signing-key
// --signing-alg --claims-file` does: Key is a PEM private key (RSA or
// ECDSA), an HMAC secret, or a file holding either; Algorithm defaults to
// RS256; ClaimsFile is an optional JSON file of extra JWT claims; KeyID is
// put in the token's "kid" header when set (stock OPA then picks the
// verification key by it; otherwise its --verification-key-id, "default").
type Signing struct {
	Key        string
	Algorithm  string
	ClaimsFile string
	KeyID      string
}

// SignBundleFiles adds ".signatures.json" to files: one JWT, signed with
// OPA's bundle signer, that lists the SHA-256 of every file the way OPA's
// verifier hashes them (data.json and .manifest as parsed JSON, the rest
// byte for byte). Stock OPA checks it with --verification-key.
func SignBundleFiles(files map[string][]byte, s Signing) error {
	if s.Key == "" {
		return fmt.Errorf("mcpxpolicy: sign bundle: no signing key")
	}
	hasher, err := opabundle.NewSignatureHasher(opabundle.SHA256)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for n := range files {
		if !opabundle.IsSignaturesFile(n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	infos := make([]opabundle.FileInfo, 0, len(names))
	for _, n := range names {
		var v any = files[n]
		if opabundle.IsStructuredDoc(n) {
			if err := util.Unmarshal(files[n], &v); err != nil {
				return fmt.Errorf("mcpxpolicy: sign bundle: %s: %w", n, err)
			}
		}
		sum, err := hasher.HashFile(v)
		if err != nil {
			return fmt.Errorf("mcpxpolicy: sign bundle: %s: %w", n, err)
		}
		infos = append(infos, opabundle.NewFile(strings.TrimPrefix(n, "/"), hex.EncodeToString(sum), opabundle.SHA256.String()))
	}
	sc := opabundle.NewSigningConfig(s.Key, s.Algorithm, s.ClaimsFile)
	token, err := opabundle.GenerateSignedToken(infos, sc, s.KeyID)
	if err != nil {
		return fmt.Errorf("mcpxpolicy: sign bundle: %w", err)
	}
	sig, err := json.MarshalIndent(map[string]any{"signatures": []string{token}}, "", "  ")
	if err != nil {
		return err
	}
	files[".signatures.json"] = append(sig, '\n')
	return nil
}

func bundleFiles(opts Options, sign *Signing) (map[string][]byte, error) {
	files, err := BundleFiles(opts)
	if err != nil {
		return nil, err
	}
	if sign != nil {
		if err := SignBundleFiles(files, *sign); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// WriteBundleDir writes BundleFiles into dir (created if missing), so
// operators can read the code their rules became and `opa test` it.
func WriteBundleDir(opts Options, dir string) error { return writeBundleDir(opts, nil, dir) }

// WriteSignedBundleDir is WriteBundleDir plus ".signatures.json" (see
// SignBundleFiles).
func WriteSignedBundleDir(opts Options, sign Signing, dir string) error {
	return writeBundleDir(opts, &sign, dir)
}

// WriteBundleArchive writes BundleFiles as a gzipped tarball, the form
// `opa run --server --bundle` and bundle servers take. The archive is
// deterministic: same config, same bytes.
func WriteBundleArchive(opts Options, path string) error { return writeBundleArchive(opts, nil, path) }

// WriteSignedBundleArchive is WriteBundleArchive plus ".signatures.json"
// (see SignBundleFiles). RSA and ECDSA signatures differ from run to run;
// every other file is the same bytes.
func WriteSignedBundleArchive(opts Options, sign Signing, path string) error {
	return writeBundleArchive(opts, &sign, path)
}

func writeBundleDir(opts Options, sign *Signing, dir string) error {
	files, err := bundleFiles(opts, sign)
	if err != nil {
		return err
	}
	for name, b := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func writeBundleArchive(opts Options, sign *Signing, path string) error {
	files, err := bundleFiles(opts, sign)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, n := range names {
		hdr := &tar.Header{Name: "/" + n, Mode: 0o644, Size: int64(len(files[n])), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(files[n]); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := gz.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}
