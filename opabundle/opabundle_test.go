package opabundle_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	opabundle_ "github.com/open-policy-agent/opa/v1/bundle"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/opabundle"
)

// keyPair returns a PEM private key and its PEM public key.
func keyPair(t *testing.T, alg string) (string, string) {
	t.Helper()
	var priv, pub []byte
	switch alg {
	case "RS256":
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		priv = pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
		der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
		if err != nil {
			t.Fatal(err)
		}
		pub = pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	case "ES256":
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		der, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		priv = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
		pder, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
		if err != nil {
			t.Fatal(err)
		}
		pub = pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pder})
	default: // HS256: the secret is both
		priv, pub = []byte("a shared secret of enough length"), []byte("a shared secret of enough length")
	}
	return string(priv), string(pub)
}

func readSigned(path string, pub, alg, keyID, scope string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	vc := opabundle_.NewVerificationConfig(map[string]*opabundle_.KeyConfig{keyID: {Key: pub, Algorithm: alg}}, keyID, scope, nil)
	_, err = opabundle_.NewReader(f).WithBundleVerificationConfig(vc).Read()
	return err
}

// writeArchive is BundleFiles, signed when sign is not nil, written by
// WriteArchive.
func writeArchive(t *testing.T, opts mcpxpolicy.Options, sign *opabundle.Signing, path string) {
	t.Helper()
	files, err := mcpxpolicy.BundleFiles(opts)
	if err != nil {
		t.Fatal(err)
	}
	if sign != nil {
		if err := opabundle.Sign(files, *sign); err != nil {
			t.Fatal(err)
		}
	}
	if err := opabundle.WriteArchive(files, path); err != nil {
		t.Fatal(err)
	}
}

// TestSignedBundleVerifies signs the example's bundle with each key kind
// and checks the signature with OPA's own bundle verification; a tampered
// file, a wrong key and an unsigned bundle must all fail it.
func TestSignedBundleVerifies(t *testing.T) {
	t.Parallel()
	opts := mcpxpolicy.Options{ConfigPaths: []string{"../examples/mcpx-policy.yaml"}, Env: []string{}}
	for _, alg := range []string{"RS256", "ES256", "HS256"} {
		t.Run(alg, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			priv, pub := keyPair(t, alg)
			keyFile := filepath.Join(dir, "key.pem")
			if err := os.WriteFile(keyFile, []byte(priv), 0o600); err != nil {
				t.Fatal(err)
			}
			claims := filepath.Join(dir, "claims.json")
			if err := os.WriteFile(claims, []byte(`{"scope": "fleet"}`), 0o644); err != nil {
				t.Fatal(err)
			}
			signed := filepath.Join(dir, "signed.tar.gz")
			sign := opabundle.Signing{Key: keyFile, Algorithm: alg, ClaimsFile: claims, KeyID: "fleet"}
			writeArchive(t, opts, &sign, signed)
			if err := readSigned(signed, pub, alg, "fleet", "fleet"); err != nil {
				t.Fatalf("signed bundle does not verify: %v", err)
			}
			if err := readSigned(signed, pub, alg, "fleet", "other"); err == nil {
				t.Error("the claims file's scope was not in the signature")
			}

			other, _ := keyPair(t, alg)
			if alg == "HS256" {
				other = "another secret entirely, not the same"
			}
			wrong := filepath.Join(dir, "wrong.tar.gz")
			writeArchive(t, opts, &opabundle.Signing{Key: other, Algorithm: alg, KeyID: "fleet"}, wrong)
			if err := readSigned(wrong, pub, alg, "fleet", ""); err == nil {
				t.Error("a bundle signed with another key verified")
			}

			// Tamper: sign, then change one Rego file in the folder form.
			files, err := mcpxpolicy.BundleFiles(opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := opabundle.Sign(files, sign); err != nil {
				t.Fatal(err)
			}
			files["mcpx/steps/write_mode.rego"] = bytes.ReplaceAll(files["mcpx/steps/write_mode.rego"], []byte(`== "deny"`), []byte(`== "never"`))
			tampered := filepath.Join(dir, "tampered.tar.gz")
			if err := opabundle.WriteArchive(files, tampered); err != nil {
				t.Fatal(err)
			}
			err = readSigned(tampered, pub, alg, "fleet", "fleet")
			if err == nil || !strings.Contains(err.Error(), "digest mismatch") {
				t.Errorf("tampered bundle: got %v, want a digest mismatch", err)
			}
		})
	}
	unsigned := filepath.Join(t.TempDir(), "unsigned.tar.gz")
	writeArchive(t, opts, nil, unsigned)
	if err := readSigned(unsigned, "secret", "HS256", "fleet", ""); err == nil {
		t.Error("an unsigned bundle verified")
	}
}

func TestSignNeedsKey(t *testing.T) {
	t.Parallel()
	files := map[string][]byte{"data.json": []byte("{}\n")}
	if err := opabundle.Sign(files, opabundle.Signing{}); err == nil {
		t.Error("signing without a key succeeded")
	}
	if _, ok := files[opabundle.SignaturesFile]; ok {
		t.Error("a failed Sign added a signature")
	}
}

// TestArchiveIsDeterministic: the same files give the same archive bytes,
// whatever the map's order, so a bundle server sees no change where there
// is none.
func TestArchiveIsDeterministic(t *testing.T) {
	t.Parallel()
	files, err := mcpxpolicy.BundleFiles(mcpxpolicy.Options{ConfigPaths: []string{"../examples/mcpx-policy.yaml"}, Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := opabundle.Archive(files)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		b, err := opabundle.Archive(files)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Fatal("two archives of the same files differ")
		}
	}
}
