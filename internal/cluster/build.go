package cluster

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/tpslab/tpslab/internal/buildcache"
)

// KubeVersion is the Kubernetes the local cluster runs, built from the Go
// module proxy (deploy/kubernetes/build).
const KubeVersion = "v1.37.2"

const (
	kubeModule = "deploy/kubernetes/build"
	etcdModule = "deploy/kubernetes/etcd"
	// PauseImage and the tpslab image are imported into each node's
	// containerd: there is no registry.
	PauseImage = "tpslab.local/pause:1"
	imageRepo  = "tpslab.local/tpslab"
)

// programs are what the local cluster runs, built once into the cache.
type programs struct {
	etcd, apiserver, controllerManager, scheduler, kubelet string
	ociimage, pause, tpslab                                string
}

func buildPrograms(log io.Writer) (*programs, error) {
	ld := fmt.Sprintf("-ldflags=-s -w -X k8s.io/component-base/version.gitVersion=%s -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 -X k8s.io/component-base/version.gitTreeState=clean", KubeVersion)
	var p programs
	var err error
	for _, b := range []struct {
		out  *string
		name string
	}{{&p.apiserver, "kube-apiserver"}, {&p.controllerManager, "kube-controller-manager"}, {&p.scheduler, "kube-scheduler"}, {&p.kubelet, "kubelet"}} {
		if *b.out, err = buildcache.GoBuildWith(b.name, kubeModule, "k8s.io/kubernetes/cmd/"+b.name, nil, []string{ld}, log); err != nil {
			return nil, err
		}
	}
	if p.etcd, err = buildcache.GoBuildWith("etcd", etcdModule, ".", nil, []string{"-ldflags=-s -w"}, log); err != nil {
		return nil, err
	}
	if p.ociimage, err = buildcache.GoBuildWith("ociimage", kubeModule, "./ociimage", nil, nil, log); err != nil {
		return nil, err
	}
	if p.pause, err = buildPause(log); err != nil {
		return nil, err
	}
	if p.tpslab, err = buildcache.GoBuildWith("tpslab-static", ".", "./cmd/tpslab", []string{"CGO_ENABLED=0"}, []string{"-ldflags=-s -w"}, log); err != nil {
		return nil, err
	}
	return &p, nil
}

// buildPause compiles Kubernetes' own pause program (build/pause/linux in
// the kubernetes module), statically: the sandbox every pod holds.
func buildPause(log io.Writer) (string, error) {
	root, err := buildcache.Root()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes")
	cmd.Dir = filepath.Join(root, kubeModule)
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("finding the kubernetes module: %v", err)
	}
	src := filepath.Join(strings.TrimSpace(string(out)), "build", "pause", "linux", "pause.c")
	if _, err := os.Stat(src); err != nil {
		return "", err
	}
	return buildcache.Command("pause", KubeVersion+" static", log, func(out string) *exec.Cmd {
		return exec.Command("gcc", "-Os", "-static", "-DVERSION="+KubeVersion, "-o", out, src)
	})
}

// Image is the tpslab image name for the static binary at path: tagged by
// its content, so a changed tpslab is a new image.
func Image(binary string) (string, error) {
	sum, err := buildcache.FileSHA256(binary)
	if err != nil {
		return "", err
	}
	return imageRepo + ":" + sum[:12], nil
}

// writeImages writes the pause and tpslab images as tarballs in dir.
func writeImages(p *programs, dir string) (tpslabImage string, tars []string, err error) {
	if tpslabImage, err = Image(p.tpslab); err != nil {
		return "", nil, err
	}
	for _, im := range []struct{ name, entry, bin string }{{PauseImage, "/pause", p.pause}, {tpslabImage, "/tpslab", p.tpslab}} {
		out := filepath.Join(dir, strings.NewReplacer("/", "_", ":", "_").Replace(im.name)+".tar")
		cmd := exec.Command(p.ociimage, "-o", out, "-name", im.name, "-entrypoint", im.entry, im.bin+":"+im.entry)
		if b, err := cmd.CombinedOutput(); err != nil {
			return "", nil, fmt.Errorf("image %s: %v: %s", im.name, err, b)
		}
		tars = append(tars, out)
	}
	return tpslabImage, tars, nil
}

// LoadImage builds an image holding binary at entry (a static program) and
// imports it into every node; it returns the image's name.
func (s *State) LoadImage(repo, entry, binary string, log io.Writer) (string, error) {
	ociimage, err := buildcache.GoBuildWith("ociimage", kubeModule, "./ociimage", nil, nil, log)
	if err != nil {
		return "", err
	}
	tag, err := Image(binary)
	if err != nil {
		return "", err
	}
	name := repo + ":" + strings.TrimPrefix(tag, imageRepo+":")
	out := filepath.Join(s.Home, strings.NewReplacer("/", "_", ":", "_").Replace(name)+".tar")
	if b, err := exec.Command(ociimage, "-o", out, "-name", name, "-entrypoint", entry, binary+":"+entry).CombinedOutput(); err != nil {
		return "", fmt.Errorf("image %s: %v: %s", name, err, b)
	}
	for _, n := range s.Nodes {
		if b, err := exec.Command("ctr", "-a", n.Socket, "-n", "k8s.io", "images", "import", out).CombinedOutput(); err != nil {
			return "", fmt.Errorf("%s: importing %s: %v: %s", n.Name, name, err, b)
		}
	}
	return name, nil
}

// StaticTpsd builds tpslab's SDK chain daemon statically, for an image.
func StaticTpsd(log io.Writer) (string, error) {
	return buildcache.GoBuildWith("tpsd-static", "chains/cosmos", "./cmd/tpsd", []string{"CGO_ENABLED=0"}, []string{"-ldflags=-s -w"}, log)
}

// StaticTpsevmd is tpslab's Cosmos EVM daemon built statically, for its
// image. Cosmos EVM verifies EIP-712 signatures with go-ethereum's
// secp256k1, which is C (bundled, no library to install): cgo stays on and
// the C parts link statically.
func StaticTpsevmd(log io.Writer) (string, error) {
	return buildcache.GoBuildWith("tpsevmd-static", "chains/cosmosevm", "./cmd/tpsevmd", []string{"CGO_ENABLED=1"},
		[]string{"-tags=netgo,osusergo", "-ldflags=-s -w -linkmode external -extldflags -static"}, log)
}

// Build builds the local cluster's programs into the cache now (tpslab
// cache build), so that a later `cluster up` starts at once.
func Build(log io.Writer) error {
	_, err := buildPrograms(log)
	return err
}
