package kubenet

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tpslab/tpslab/internal/cluster"
	"github.com/tpslab/tpslab/internal/testnet"
	"github.com/tpslab/tpslab/internal/testnet/sdknet"
)

// UpCosmos generates an SDK network as for loopback (keys, genesis, gentxs)
// and starts each validator as a pod: tpslab's image unpacks the node's home
// from its Secret (one compressed archive: a genesis with thousands of
// wallets is larger than a Secret's value may be otherwise), then the
// daemon's image runs `start` with its peers given by pod address. image is
// the daemon's image; empty builds tpsd (tpsevmd for a Cosmos EVM chain)
// statically and loads it into the local cluster.
func UpCosmos(ctx context.Context, so sdknet.Options, k Options, daemonImage string) (*testnet.Net, error) {
	if k.Log == nil {
		k.Log = io.Discard
	}
	if err := k.Check(); err != nil {
		return nil, err
	}
	if daemonImage == "" {
		st := cluster.ForKubeconfig(k.Kubeconfig)
		if st == nil {
			return nil, errors.New("--image: the daemon's image is required for a cluster that is not tpslab's local one")
		}
		build, name := cluster.StaticTpsd, "tpsd"
		if so.EVM {
			build, name = cluster.StaticTpsevmd, "tpsevmd"
		}
		bin, err := build(k.Log)
		if err != nil {
			return nil, err
		}
		if daemonImage, err = st.LoadImage("tpslab.local/"+name, "/"+name, bin, k.Log); err != nil {
			return nil, err
		}
	}
	so.PodPorts = true
	n, err := sdknet.Generate(ctx, so)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(n.Home))
	n.Kubernetes = &testnet.Kube{Kubeconfig: k.Kubeconfig, Namespace: k.Namespace, Image: k.Image, DaemonImage: daemonImage,
		Name: "tpslab-" + hex.EncodeToString(sum[:])[:8], CPU: k.CPU, Memory: k.Memory}
	n.Started = time.Now().UTC()
	fmt.Fprintf(k.Log, "starting %d validators of %s as pods %s-node* in namespace %s (image %s)\n",
		len(n.Nodes), filepath.Base(so.Binary), n.Kubernetes.Name, k.Namespace, daemonImage)
	return startPods(ctx, n, k)
}

// homeArchive is a node's home as a gzipped tar.
func homeArchive(home string) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	err := filepath.WalkDir(home, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(home, p)
		if rel == "." || d.Name() == "node.log" {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		h, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			_, err = tw.Write(b)
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Unpack writes the archive at from into the folder to, unless to exists
// (a container restarted in its pod keeps its state). It is what a
// daemon's pod runs first (tpslab unpack).
func Unpack(from, to string) error {
	if _, err := os.Stat(to); err == nil {
		return nil
	}
	f, err := os.Open(from)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %v", from, err)
	}
	tr := tar.NewReader(zr)
	tmp := to + ".part"
	os.RemoveAll(tmp)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: %v", from, err)
		}
		name := filepath.Clean(h.Name)
		if strings.HasPrefix(name, "..") || filepath.IsAbs(name) {
			return fmt.Errorf("%s: %q leaves the home", from, h.Name)
		}
		p := filepath.Join(tmp, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o700); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				return err
			}
			w, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o777)
			if err != nil {
				return err
			}
			if _, err := io.Copy(w, tr); err != nil {
				w.Close()
				return err
			}
			w.Close()
		}
	}
	return os.Rename(tmp, to)
}
