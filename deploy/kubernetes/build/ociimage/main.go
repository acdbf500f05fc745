// Command ociimage writes a container image as a tarball `ctr images import`
// takes: a scratch image holding the given files (static binaries), for
// tpslab's local cluster, which has no registry and no Docker engine.
//
//	ociimage -o OUT.tar -name tpslab.local/tpslab:dev -entrypoint /tpslab SRC:/DEST ...
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func main() {
	out := flag.String("o", "", "output tarball")
	ref := flag.String("name", "", "image name, e.g. tpslab.local/tpslab:dev")
	entry := flag.String("entrypoint", "", "the image's entrypoint")
	flag.Parse()
	if err := run(*out, *ref, *entry, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "ociimage:", err)
		os.Exit(1)
	}
}

func run(out, ref, entry string, files []string) error {
	if out == "" || ref == "" || len(files) == 0 {
		return fmt.Errorf("usage: ociimage -o OUT.tar -name NAME [-entrypoint PATH] SRC:/DEST ...")
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range []string{"tmp/", "data/"} { // writable places a program may expect
		if err := tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o1777}); err != nil {
			return err
		}
	}
	for _, f := range files {
		src, dest, ok := strings.Cut(f, ":")
		if !ok {
			return fmt.Errorf("%q: expected SRC:/DEST", f)
		}
		b, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(dest, "/"), Mode: 0o755, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := tw.Write(b); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS = "amd64", "linux"
	if entry != "" {
		cfg.Config.Entrypoint = []string{entry}
	}
	cfg.Config.Env = []string{"PATH=/"}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return err
	}
	return tarball.WriteToFile(out, tag, img)
}
