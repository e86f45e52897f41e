package mcpxpolicy

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// BundleFiles returns the whole policy for a config as the files of a
// standard OPA bundle: ".manifest" (revision, roots ["mcpx"], rego_version
// 1), "data.json" ({"mcpx": compiled data}), the static Rego under mcpx/
// and the generated and override Rego under their compiled names.
func BundleFiles(opts Options) (map[string][]byte, error) {
	compiled, err := compileConfig(opts)
	if err != nil {
		return nil, err
	}
	p := Policy(compiled)
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

// WriteBundleDir writes BundleFiles into dir (created if missing), so
// operators can read the code their rules became and `opa test` it.
func WriteBundleDir(opts Options, dir string) error {
	files, err := BundleFiles(opts)
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

// WriteBundleArchive writes BundleFiles as a gzipped tarball, the form
// `opa run --server --bundle` and bundle servers take. The archive is
// deterministic: same config, same bytes.
func WriteBundleArchive(opts Options, path string) error {
	files, err := BundleFiles(opts)
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
