// Package opabundle writes and signs standard OPA bundles: the files of a
// policy (mcpxpolicy.BundleFiles gives them for a config) as a folder, as a
// gzipped tarball that `opa run --server --bundle` and bundle servers take,
// and with a ".signatures.json" that stock OPA verifies with
// --verification-key (docs/fleet.md).
//
// A bundle is a map from slash-separated file names to their bytes. The
// functions here hold no state and are safe for concurrent use on
// different maps.
package opabundle

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

	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/util"
)

// SignaturesFile is the name of the file Sign adds.
const SignaturesFile = ".signatures.json"

// Signing says how to sign a bundle, as `opa build --signing-key
// --signing-alg --claims-file` does: Key is a PEM private key (RSA or
// ECDSA), an HMAC secret, or a file holding either, read as opa build
// reads it — a Key that names no file is taken as the HMAC secret, so a
// mistyped path would sign with the path; KeyData is the key itself (PEM
// or an HMAC secret) as the caller read it, instead of Key — the CLI reads
// the key file with the trust checks of internal/trust and passes it here, so a
// key that cannot be read is an error before anything is signed;
// Algorithm defaults to RS256; ClaimsFile is an optional JSON file of
// extra JWT claims; KeyID is put in the token's "kid" header when set
// (stock OPA then picks the verification key by it; otherwise its
// --verification-key-id, "default").
type Signing struct {
	Key        string
	KeyData    []byte
	Algorithm  string
	ClaimsFile string
	KeyID      string
}

// Sign adds SignaturesFile to files: one JWT, signed with OPA's bundle
// signer, that lists the SHA-256 of every other file the way OPA's
// verifier hashes them (data.json and .manifest as parsed JSON, the rest
// byte for byte). It fails without a key (KeyData empty or blank
// included), on a file that should be JSON and is not, and on a key the
// algorithm cannot use; files is then unchanged.
func Sign(files map[string][]byte, s Signing) error {
	if s.Key != "" && s.KeyData != nil {
		return fmt.Errorf("opabundle: sign: Key and KeyData are both set")
	}
	if s.KeyData != nil {
		if len(bytes.TrimSpace(s.KeyData)) == 0 {
			return fmt.Errorf("opabundle: sign: the signing key is empty")
		}
		// OPA reads a key from a file it is named, and takes anything
		// else that is not PEM as an HMAC secret: hand it the key in a
		// file of our own, so the bytes read are the bytes signed with
		path, done, err := privateCopy(s.KeyData)
		if err != nil {
			return fmt.Errorf("opabundle: sign: %w", err)
		}
		defer done()
		s.Key = path
	}
	if s.Key == "" {
		return fmt.Errorf("opabundle: sign: no signing key")
	}
	hasher, err := bundle.NewSignatureHasher(bundle.SHA256)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for n := range files {
		if !bundle.IsSignaturesFile(n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	infos := make([]bundle.FileInfo, 0, len(names))
	for _, n := range names {
		var v any = files[n]
		if bundle.IsStructuredDoc(n) {
			if err := util.Unmarshal(files[n], &v); err != nil {
				return fmt.Errorf("opabundle: sign: %s: %w", n, err)
			}
		}
		sum, err := hasher.HashFile(v)
		if err != nil {
			return fmt.Errorf("opabundle: sign: %s: %w", n, err)
		}
		infos = append(infos, bundle.NewFile(strings.TrimPrefix(n, "/"), hex.EncodeToString(sum), bundle.SHA256.String()))
	}
	sc := bundle.NewSigningConfig(s.Key, s.Algorithm, s.ClaimsFile)
	token, err := bundle.GenerateSignedToken(infos, sc, s.KeyID)
	if err != nil {
		return fmt.Errorf("opabundle: sign: %w", err)
	}
	sig, err := json.MarshalIndent(map[string]any{"signatures": []string{token}}, "", "  ")
	if err != nil {
		return err
	}
	files[SignaturesFile] = append(sig, '\n')
	return nil
}

// privateCopy writes key to a new file only this user may read, and
// returns its path and the function that removes it.
func privateCopy(key []byte) (string, func(), error) {
	dir, err := os.MkdirTemp("", "mcpx-policy-key-")
	if err != nil {
		return "", nil, err
	}
	done := func() { os.RemoveAll(dir) }
	path := filepath.Join(dir, "key")
	if err := os.WriteFile(path, key, 0o600); err != nil {
		done()
		return "", nil, err
	}
	return path, done, nil
}

// WriteDir writes files into dir (created if missing), each under its
// name, so that operators can read the code their rules became and
// `opa test` it. Files already in dir that files does not name are left.
func WriteDir(files map[string][]byte, dir string) error {
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

// WriteArchive writes files as a gzipped tarball at path. The archive is
// deterministic: the same files give the same bytes (names sorted, times
// zero). RSA and ECDSA signatures differ from run to run; every other
// file is the same bytes.
func WriteArchive(files map[string][]byte, path string) error {
	b, err := Archive(files)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// Archive is the gzipped tarball WriteArchive writes.
func Archive(files map[string][]byte) ([]byte, error) {
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
			return nil, err
		}
		if _, err := tw.Write(files[n]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
