package policy_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/opabundle"
)

// TestFleetPageOPAConfig runs docs/fleet.md's opa-config.yaml, as the page
// shows it, on a stock OPA server: the bundle server is a local one serving
// the example config's bundle signed with the key "fleet" (behind the
// bearer token the config reads from $BUNDLE_TOKEN), the page's public key
// stands replaced by that key's. The server must activate the bundle and
// answer GET /v1/status with the bundle's revision, as the page says a
// deploy can check it — which needs the status plugin the config enables.
func TestFleetPageOPAConfig(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("../docs/fleet.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := parseDocBlocks(string(src))
	if err != nil {
		t.Fatal(err)
	}
	config := ""
	for _, b := range blocks {
		if b.role == "file" && b.file == "opa-config.yaml" {
			config = b.body
		}
	}
	if config == "" {
		t.Fatal("docs/fleet.md has no opa-config.yaml block (<!-- doc-test: file opa-config.yaml -->)")
	}

	dir := t.TempDir()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	priv := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pub := strings.TrimSpace(string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})))
	opts := mcpxpolicy.Options{ConfigPaths: []string{"../examples/mcpx-policy.yaml"}, Env: []string{}}
	files, err := mcpxpolicy.BundleFiles(opts)
	if err != nil {
		t.Fatal(err)
	}
	var manifest struct {
		Revision string `json:"revision"`
	}
	if err := json.Unmarshal(files[".manifest"], &manifest); err != nil || manifest.Revision == "" {
		t.Fatalf("manifest %s: %v", files[".manifest"], err)
	}
	if err := opabundle.Sign(files, opabundle.Signing{Key: string(priv), KeyID: "fleet"}); err != nil {
		t.Fatal(err)
	}
	tarball := filepath.Join(dir, "bundle.tar.gz")
	if err := opabundle.WriteArchive(files, tarball); err != nil {
		t.Fatal(err)
	}
	archive, err := os.ReadFile(tarball)
	if err != nil {
		t.Fatal(err)
	}
	const token = "a-token-for-the-bundle-server"
	bundles := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token || r.URL.Path != "/mcpx-policy/bundle.tar.gz" {
			http.Error(w, "no", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/gzip")
		w.Write(archive)
	}))
	defer bundles.Close()

	// The page's config, its placeholders filled: the bundle server's URL
	// and the public key.
	const placeholderURL = "https://bundles.internal.example"
	keyBlock := "-----BEGIN PUBLIC KEY-----\n      …\n      -----END PUBLIC KEY-----"
	if !strings.Contains(config, placeholderURL) || !strings.Contains(config, keyBlock) {
		t.Fatalf("the page's opa-config.yaml no longer has the placeholders this test fills (%s, the public key):\n%s", placeholderURL, config)
	}
	config = strings.Replace(config, placeholderURL, bundles.URL, 1)
	config = strings.Replace(config, keyBlock, strings.ReplaceAll(pub, "\n", "\n      "), 1)
	cfgPath := filepath.Join(dir, "opa-config.yaml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, opaBinary(t), "run", "--server", "--addr", addr, "--config-file", cfgPath, "--disable-telemetry")
	cmd.Env = append(os.Environ(), "BUNDLE_TOKEN="+token)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	base := "http://" + addr
	for {
		resp, err := http.Get(base + "/health?bundles=true")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("opa with the page's config never activated the bundle: %s", stderr.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	resp, err := http.Get(base + "/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var status struct {
		Result struct {
			Bundles map[string]struct {
				ActiveRevision string `json:"active_revision"`
			} `json:"bundles"`
		} `json:"result"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &status) != nil {
		t.Fatalf("GET /v1/status on the page's config: %d %s", resp.StatusCode, body)
	}
	if got := status.Result.Bundles["mcpx"].ActiveRevision; got != manifest.Revision {
		t.Errorf("GET /v1/status: bundle mcpx at revision %q, want the manifest's %q:\n%s", got, manifest.Revision, body)
	}
}
